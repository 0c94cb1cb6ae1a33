/**
 * Re-scoring a landed group without generating again (`POST /v1/groups/:id/rescore`): its
 * `judge_error` episodes (or, with `all`, every episode that played to an end) are graded again
 * from what D1 holds of them — messages with their metadata, each step's metadata, the response
 * text — by the same score worker, and the group's credit and summary are computed again over
 * all its episodes, in one D1 transaction. An episode the judge grades now gets its played end
 * back; one it still cannot grade stays `judge_error`, its new calls recorded after the old.
 */

import { configFrom, priceBook } from "../config";
import type { Price } from "../costs/price";
import {
  type EpisodeRecord,
  findGroup,
  type GroupRecord,
  groupEpisodes,
  type MessageRecord,
  nextJudgementSeqs,
  transcriptsOf,
} from "../db/queries";
import { CompletedReasonSchema } from "../domain/episode-outcomes";
import { overlongTreatment } from "../domain/overlong";
import type { ScoredEpisode } from "../env-workers/score-worker";
import {
  assembleEpisode,
  type ChatMessage,
  type EnvironmentEpisode,
  errorMessage,
  rewardSuccess,
} from "../sdk";
import { wireMessage } from "../trainer/batch-format";
import { withTimeout } from "../utils/timeout";
import { scoreWorker } from "./bindings";
import { judgementCost } from "./episode-costs";
import { type GradedMember, groupCredit, groupSummary } from "./group-grades";
import { gradingInserts } from "./landing";
import { END } from "./outcomes";

export type RescoreRefusal =
  | { kind: "not_found" }
  | { kind: "running" }
  | { kind: "leased"; until: string }
  | { kind: "unavailable"; message: string }
  | { kind: "conflict" };

export interface Rescored {
  groupId: string;
  /** Episodes graded again, and of those, how many the judge still could not grade. */
  rescored: number;
  judgeErrors: number;
}

/** A message as the environment's scorer saw it: the loop's `sampled` mark back in metadata. */
function scoredMessage(m: MessageRecord): ChatMessage {
  const metadata = { ...(m.metadata ?? {}), ...(m.sampled ? { sampled: true } : {}) };
  return { ...wireMessage(m), ...(Object.keys(metadata).length > 0 ? { metadata } : {}) };
}

function episodeAgain(
  episode: EpisodeRecord,
  transcript: readonly MessageRecord[],
): EnvironmentEpisode {
  return assembleEpisode({
    messages: transcript.map(scoredMessage),
    openingCount: transcript.filter((m) => m.turn === null).length,
    responseText: episode.responseText,
    steps: episode.stepMetadata ?? [],
    latencyMs: episode.latencyMs,
    totalTokens: episode.totalTokens,
  });
}

/**
 * The episodes a re-score grades: those the judge failed, or every one that played to an end. A
 * failed grading is graded again only when the end it replaced is known (`played_end_reason`:
 * episodes landed before it was kept have nothing to restore).
 */
function targets(rows: readonly EpisodeRecord[], all: boolean): EpisodeRecord[] {
  return rows.filter((e) => {
    if (e.status !== "failed") return all;
    if (e.playedEndReason === null) return false;
    return e.endReason === END.judge_error || (all && e.endReason === END.score_error);
  });
}

export async function rescoreGroup(
  env: Env,
  groupId: string,
  all: boolean,
  /** What the run must pass before its judge is called again (its budget); throws to refuse. */
  admit: (runId: string) => Promise<void>,
): Promise<Rescored | RescoreRefusal> {
  const group = await findGroup(env.DB, groupId);
  if (group === undefined) return { kind: "not_found" };
  if (group.status === "running") return { kind: "running" };
  const now = new Date().toISOString();
  if (group.deliveryState === "leased" && (group.leaseExpiresAt ?? "") > now)
    return { kind: "leased", until: group.leaseExpiresAt ?? now };
  const rows = await groupEpisodes(env.DB, groupId);
  const chosen = targets(rows, all);
  if (chosen.length === 0) return { groupId, rescored: 0, judgeErrors: 0 };
  await admit(group.runId);
  const ids = chosen.map((e) => e.id);
  const [transcripts, nextSeq] = await Promise.all([
    transcriptsOf(env.DB, ids),
    nextJudgementSeqs(env.DB, ids),
  ]);
  const config = configFrom(env);
  const timeoutMs = config.SCORE_TIMEOUT_S * 1000;
  let graded: ScoredEpisode[];
  const started = Date.now();
  try {
    const call = await withTimeout(
      scoreWorker(env).score({
        env: group.env,
        example: group.example,
        episodes: chosen.map((e) => episodeAgain(e, transcripts.get(e.id) ?? [])),
        timeoutMs,
      }),
      timeoutMs,
    );
    if (call.kind === "timeout")
      return { kind: "unavailable", message: "the score worker ran past SCORE_TIMEOUT_S" };
    graded = call.value;
  } catch (error) {
    return { kind: "unavailable", message: `score worker: ${errorMessage(error)}` };
  }
  const regraded = new Map(chosen.map((e, i) => [e.id, graded[i]]));
  const spent = { scoreMs: Date.now() - started, judgePrice: priceBook(config).judge };
  try {
    await writeGrades(env.DB, group, rows, regraded, nextSeq, spent);
  } catch (error) {
    // Two re-scores at once: the second's judge calls collide with the first's on (episode, seq).
    if (/UNIQUE constraint failed: judgements/.test(errorMessage(error)))
      return { kind: "conflict" };
    throw error;
  }
  return {
    groupId,
    rescored: chosen.length,
    judgeErrors: graded.filter((g) => !g.ok && g.by === "judge").length,
  };
}

/** The episode as it stands after its new grade (unchanged when it was not graded again). */
function afterGrade(e: EpisodeRecord, grade: ScoredEpisode | undefined): EpisodeRecord {
  if (grade === undefined) return e;
  const played = e.playedEndReason ?? e.endReason;
  if (grade.ok)
    return {
      ...e,
      // `completed` for `done` and `max_turns`, else `truncated` (`context_length`, ...).
      status: CompletedReasonSchema.safeParse(played).success ? "completed" : "truncated",
      endReason: played,
      failureReason: null,
      failureDetail: null,
      playedEndReason: null,
      score: grade.reward.score,
      threshold: grade.reward.threshold ?? null,
      success: rewardSuccess(grade.reward),
      rewardMetadata: grade.reward.metadata,
    };
  const reason = grade.by === "judge" ? END.judge_error : END.score_error;
  return {
    ...e,
    status: "failed",
    endReason: reason,
    failureReason: reason,
    failureDetail: grade.error,
    playedEndReason: played,
    score: null,
    threshold: null,
    success: null,
  };
}

/**
 * One UPDATE per episode: each binds 16 values, far inside D1's 100 per statement. The new judge
 * calls add to what the episode cost, in the same transaction that records them.
 */
const UPDATE_EPISODE = `UPDATE episodes SET status = ?, end_reason = ?, failure_reason = ?,
  failure_detail = ?, played_end_reason = ?, score = ?, threshold = ?, success = ?,
  reward_metadata = ?, advantage = ?, per_turn_rewards = ?, per_turn_advantages = ?,
  judge_tokens = judge_tokens + ?, usd = usd + ?, unpriced_calls = unpriced_calls + ?
  WHERE id = ?`;

/** ...and the score call's time adds to the group's environment time. */
const UPDATE_GROUP = `UPDATE groups SET status = ?, failure_reason = ?, credit_applied = ?,
  warnings = ?, score_mean = ?, score_std = ?, episodes_failed = ?, uniform = ?,
  score_ms = score_ms + ? WHERE id = ?`;

const jsonOrNull = (value: unknown) =>
  value === null || value === undefined ? null : JSON.stringify(value);
const bit = (value: boolean | null) => (value === null ? null : Number(value));

async function writeGrades(
  d1: D1Database,
  group: GroupRecord,
  rows: readonly EpisodeRecord[],
  regraded: ReadonlyMap<string, ScoredEpisode | undefined>,
  nextSeq: ReadonlyMap<string, number>,
  spent: { scoreMs: number; judgePrice: Price | null },
): Promise<void> {
  const after = rows.map((e) => afterGrade(e, regraded.get(e.id)));
  // Each new judge call, priced; and what they add to each episode's cost.
  const calls = new Map(
    [...regraded].map(([id, grade]) => [
      id,
      (grade?.judgements ?? []).map((j) => ({ ...j, ...judgementCost(j, spent.judgePrice) })),
    ]),
  );
  const added = (id: string) => {
    const made = calls.get(id) ?? [];
    return {
      tokens: made.reduce((n, j) => n + (j.promptTokens ?? 0) + (j.completionTokens ?? 0), 0),
      usd: made.reduce((n, j) => n + (j.usd ?? 0), 0),
      unpriced: made.filter((j) => j.usd === null).length,
    };
  };
  const members: GradedMember[] = after.map((e) => ({
    id: e.id,
    score: e.status === "failed" ? null : e.score,
    failureReason: e.failureReason,
    perTurnRewards: e.rewardMetadata?.per_turn_rewards,
    turns: e.turns,
    treatment: overlongTreatment(group.overlong, e.overlong),
  }));
  const credit = groupCredit(members, {
    creditAssignment: group.creditAssignment,
    advantage: group.advantage,
  });
  const summary = groupSummary(members, group.algorithm);
  const updates = after.map((e, i) =>
    d1
      .prepare(UPDATE_EPISODE)
      .bind(
        e.status,
        e.endReason,
        e.failureReason,
        e.failureDetail,
        e.playedEndReason,
        e.score,
        e.threshold,
        bit(e.success),
        jsonOrNull(e.rewardMetadata),
        credit.advantages[i] ?? null,
        jsonOrNull(credit.perTurnRewards[i]),
        jsonOrNull(credit.perTurnAdvantages[i]),
        added(e.id).tokens,
        added(e.id).usd,
        added(e.id).unpriced,
        e.id,
      ),
  );
  const regradedIds = [...regraded.keys()];
  const clearComponents = d1
    .prepare("DELETE FROM reward_components WHERE episode_id IN (SELECT value FROM json_each(?))")
    .bind(JSON.stringify(regradedIds));
  const grades = [...regraded].flatMap(([id, grade]) => (grade ? [[id, grade] as const] : []));
  const inserts = gradingInserts(d1, {
    components: grades.flatMap(([id, grade]) =>
      grade.ok
        ? (grade.reward.components ?? []).map((c) => ({ episodeId: id, groupId: group.id, ...c }))
        : [],
    ),
    judgements: grades.flatMap(([id]) =>
      (calls.get(id) ?? []).map((j, k) => ({
        episodeId: id,
        seq: (nextSeq.get(id) ?? 0) + k,
        groupId: group.id,
        ...j,
      })),
    ),
  });
  const groupUpdate = d1
    .prepare(UPDATE_GROUP)
    .bind(
      summary.status,
      summary.failureReason,
      credit.creditAssignment,
      JSON.stringify(credit.warnings),
      summary.scoreMean,
      summary.scoreStd,
      summary.episodesFailed,
      Number(summary.uniform),
      spent.scoreMs,
      group.id,
    );
  // One transaction: readers see the group's old grades or its new ones, never a mix.
  await d1.batch([...updates, clearComponents, ...inserts, groupUpdate]);
}
