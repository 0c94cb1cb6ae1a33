/**
 * A group as the API answers with it and the dashboard shows it (snake_case), built by one
 * function from the same facts, read from its D1 rows once it landed or from its live object
 * while it runs — and the one lookup that finds it.
 */
import { type EpisodeRecord, findGroup, type GroupRecord, groupEpisodes } from "../db/queries";
import type { EpisodeState, FailureReason } from "../domain/episode-outcomes";
import type { GroupStatus } from "../domain/group-status";
import { rolloutGroup } from "../rollout/bindings";
import type { LiveGroupStatus } from "../rollout/group-api";
import { isGroupId } from "../rollout/group-ids";

/** What a landed episode's D1 row and a live episode have in common. */
type EpisodeSummary = Pick<
  EpisodeRecord,
  "id" | "idx" | "turns" | "failureDetail" | "redispatches" | "score" | "advantage"
> & {
  status: EpisodeState;
  endReason: string | null;
  failureReason: FailureReason | null;
  retryAt?: number | null;
};

function episodeStatusView(e: EpisodeSummary) {
  return {
    episode_id: e.id,
    index: e.idx,
    state: e.status,
    turns: e.turns,
    end_reason: e.endReason,
    failure_reason: e.failureReason,
    failure_detail: e.failureDetail,
    redispatches: e.redispatches,
    /** When a parked generation will be retried (ISO time), if it is parked. */
    retry_at: e.retryAt ? new Date(e.retryAt).toISOString() : null,
    score: e.score,
    advantage: e.advantage,
  };
}

export type EpisodeStatusView = ReturnType<typeof episodeStatusView>;

/**
 * What a group's view is built from, landed or live: its request as its D1 row names it (a
 * live group's spec says the same), where it is now, and what only landing knows.
 */
interface GroupFacts {
  request: Pick<
    GroupRecord,
    | "id"
    | "env"
    | "envVersion"
    | "runId"
    | "exampleId"
    | "groupSize"
    | "policyVersion"
    | "creditAssignment"
    | "advantage"
    | "generation"
    | "algorithm"
    | "teacherModel"
    | "kind"
    | "overlong"
    | "createdAt"
  >;
  status: GroupStatus;
  /** The versions its turns were sampled at (nulls before the first). */
  span: { min: number | null; max: number | null };
  /** Its run is paused for a weight sync, its generations waiting (live groups only). */
  paused: boolean;
  warnings: string[];
  /** The last fault its object retried past (live groups only). */
  lastError: string | null;
  /** Null while the group is live. */
  landed: Pick<
    GroupRecord,
    | "creditApplied"
    | "scoreMean"
    | "scoreStd"
    | "uniform"
    | "tokenObjectBytes"
    | "failureReason"
    | "finishedAt"
  > | null;
  episodes: readonly EpisodeSummary[];
}

function groupView(g: GroupFacts) {
  const { request, landed } = g;
  const episodes = g.episodes.map(episodeStatusView);
  return {
    group_id: request.id,
    status: g.status,
    env: request.env,
    env_version: request.envVersion,
    run_id: request.runId,
    example_id: request.exampleId,
    kind: request.kind,
    overlong: request.overlong,
    group_size: request.groupSize,
    policy_version: request.policyVersion,
    policy_version_min: g.span.min,
    policy_version_max: g.span.max,
    paused: g.paused,
    credit_assignment: request.creditAssignment,
    credit_applied: landed?.creditApplied ?? null,
    advantage: request.advantage,
    generation: request.generation,
    algorithm: request.algorithm,
    teacher_model: request.teacherModel,
    score_mean: landed?.scoreMean ?? null,
    score_std: landed?.scoreStd ?? null,
    uniform: landed?.uniform ?? null,
    /** The size of the group's token object in the TOKENS bucket; null without tokens. */
    token_object_bytes: landed?.tokenObjectBytes ?? null,
    warnings: g.warnings,
    failure_reason: landed?.failureReason ?? null,
    last_error: g.lastError,
    created_at: request.createdAt,
    finished_at: landed?.finishedAt ?? null,
    episodes,
    failures: episodes
      .filter((e) => e.failure_reason !== null)
      .map((e) => ({
        episode_id: e.episode_id,
        reason: e.failure_reason,
        detail: e.failure_detail,
      })),
  };
}

export type GroupView = ReturnType<typeof groupView>;

/** A landed (or failed) group, from its D1 rows. */
function landedGroupView(group: GroupRecord, episodes: readonly EpisodeRecord[]) {
  return groupView({
    request: group,
    status: group.status,
    span: { min: group.policyVersionMin, max: group.policyVersionMax },
    paused: false,
    warnings: group.warnings,
    lastError: null,
    landed: group,
    episodes,
  });
}

/** A group still in its object, from its spec and live state. */
function liveGroupView(live: LiveGroupStatus) {
  const { spec } = live;
  const { request } = spec;
  return groupView({
    request: {
      id: spec.groupId,
      env: request.env,
      envVersion: request.env_version ?? null,
      runId: request.run_id,
      exampleId: request.example.id,
      groupSize: request.group_size,
      policyVersion: request.policy_version,
      creditAssignment: request.credit_assignment,
      advantage: request.advantage,
      generation: request.generation,
      algorithm: request.algorithm,
      teacherModel: request.teacher?.model ?? null,
      kind: request.kind,
      overlong: request.overlong,
      createdAt: spec.createdAt,
    },
    status: live.status,
    span: live.policySpan,
    paused: live.paused,
    warnings: live.warnings,
    lastError: live.lastError,
    landed: null,
    episodes: live.episodes,
  });
}

/**
 * The group, landed or live; null when there is none. A string that cannot be a group id is
 * answered without touching an object, so a lookup never creates one for an unknown id.
 */
export async function findGroupView(env: Env, id: string): Promise<GroupView | null> {
  if (!isGroupId(id)) return null;
  const landed = async () => {
    const group = await findGroup(env.DB, id);
    if (group === undefined || group.status === "running") return null;
    return landedGroupView(group, await groupEpisodes(env.DB, id));
  };
  const before = await landed();
  if (before) return before;
  const live = await rolloutGroup(env, id).status();
  if (live) return liveGroupView(live);
  // It may have landed between the two reads.
  return landed();
}
