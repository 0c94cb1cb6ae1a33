/**
 * Where rewards are computed: once every episode has ended, the score worker grades the group
 * (`scoreEpisodes`), then group-relative credit and advantages are assigned. Failed episodes
 * are not graded and carry no advantage; over-long ones a group masks or filters are graded but
 * left out of the baseline (domain/overlong.ts).
 */
import { isOverlong, overlongTreatment } from "../domain/overlong";
import type { ScoredEpisode, ScoreWorkerApi } from "../env-workers/score-worker";
import { assembleEpisode, errorMessage, type JsonObject } from "../sdk";
import { type Timed, withTimeout } from "../utils/timeout";
import { type GradedMember, groupCredit } from "./group-grades";
import { episodeId, type GroupSpec } from "./group-spec";
import { END, failed } from "./outcomes";
import type { EpisodeRow } from "./storage/episodes";
import type { GroupStorage } from "./storage/group-storage";
import type { MessageRow } from "./storage/transcripts";

function episodeForScoring(
  episode: EpisodeRow,
  messages: ReadonlyMap<number, readonly MessageRow[]>,
  steps: Map<number, JsonObject[]>,
) {
  return assembleEpisode({
    messages: (messages.get(episode.idx) ?? []).map((m) => m.message),
    openingCount: episode.openingCount ?? 0,
    responseText: episode.responseText,
    steps: steps.get(episode.idx) ?? [],
    latencyMs: (episode.finishedAt ?? episode.startedAt) - episode.startedAt,
    totalTokens: episode.totalTokens,
  });
}

/**
 * Grades the group's unfailed episodes. Returns false when the score worker could not be
 * reached or timed out, so the caller can retry later; true once every episode has a grade or
 * a recorded failure.
 */
export async function scoreEpisodes(
  store: GroupStorage,
  spec: GroupSpec,
  scoreWorker: ScoreWorkerApi,
  timeoutMs: number,
): Promise<{ ok: true } | { ok: false; error: string }> {
  const gradable = store.episodes.all().filter((e) => e.state !== "failed" && e.reward === null);
  if (gradable.length === 0) return { ok: true };
  // One read for the whole group, not one per episode.
  const messages = store.transcripts.messagesByEpisode();
  const steps = store.transcripts.stepsByEpisode();
  let graded: Timed<ScoredEpisode[]>;
  const started = Date.now();
  try {
    graded = await withTimeout(
      scoreWorker.score({
        env: spec.request.env,
        example: spec.request.example,
        episodes: gradable.map((e) => episodeForScoring(e, messages, steps)),
        timeoutMs,
      }),
      timeoutMs,
    );
  } catch (error) {
    store.group.addScoreTime(Date.now() - started);
    return { ok: false, error: `score worker: ${errorMessage(error)}` };
  }
  store.group.addScoreTime(Date.now() - started);
  if (graded.kind === "timeout")
    return { ok: false, error: "scoreEpisodes ran past SCORE_TIMEOUT_S" };
  gradable.forEach((episode, i) => {
    const outcome = graded.value[i];
    store.episodes.judged(episode.idx, outcome?.judgements ?? []);
    if (outcome?.ok) store.recordReward(episode.idx, outcome.reward);
    else
      store.finish(
        episode.idx,
        failed(
          outcome?.ok === false && outcome.by === "judge" ? END.judge_error : END.score_error,
          outcome?.error ?? "no grade returned",
        ),
      );
  });
  return { ok: true };
}

/** Gives up on grading: every episode still without a grade fails with the last error. */
export function failUngraded(store: GroupStorage, error: string): void {
  for (const episode of store.episodes.all()) {
    if (episode.state !== "failed" && episode.reward === null)
      store.finish(episode.idx, failed(END.score_error, error));
  }
}

/** The group's episodes as credit and its summary read them (group-grades.ts). */
export function gradedMembers(
  store: GroupStorage,
  spec: GroupSpec,
  transcripts = store.transcripts.messagesByEpisode(),
): GradedMember[] {
  return store.episodes.all().map((e) => ({
    id: episodeId(spec.groupId, e.idx),
    score: e.state === "failed" ? null : (e.reward?.score ?? null),
    failureReason: e.failureReason,
    perTurnRewards: e.reward?.metadata.per_turn_rewards,
    turns: e.turns,
    treatment: overlongTreatment(spec.request.overlong, isOverlong(transcripts.get(e.idx) ?? [])),
  }));
}

/** Assigns group-relative credit from the recorded grades; the group moves on to landing. */
export function assignCredit(store: GroupStorage, spec: GroupSpec): void {
  const episodes = store.episodes.all();
  const credit = groupCredit(gradedMembers(store, spec), {
    creditAssignment: spec.request.credit_assignment,
    advantage: spec.request.advantage,
  });
  store.recordCredit(
    episodes.map((e, i) => ({
      idx: e.idx,
      advantage: credit.advantages[i] ?? null,
      perTurnRewards: credit.perTurnRewards[i] ?? null,
      perTurnAdvantages: credit.perTurnAdvantages[i] ?? null,
    })),
    credit.creditAssignment,
    credit.warnings,
  );
}
