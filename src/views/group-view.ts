/**
 * A group as the API answers with it and the dashboard shows it (snake_case), built from its D1
 * rows once it landed or from its live object while it runs — and the one lookup that finds it.
 */
import { type EpisodeRecord, findGroup, type GroupRecord, groupEpisodes } from "../db/queries";
import { rolloutGroup } from "../rollout/bindings";
import type { LiveEpisode, LiveGroupStatus } from "../rollout/group-api";
import { isGroupId } from "../rollout/group-ids";

/** What a landed episode's D1 row and a live episode have in common. */
type EpisodeSummary = Pick<
  EpisodeRecord,
  "id" | "idx" | "turns" | "failureDetail" | "redispatches" | "score" | "advantage"
> & {
  status: string;
  endReason: string | null;
  failureReason: string | null;
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

function failures(episodes: readonly EpisodeStatusView[]) {
  return episodes
    .filter((e) => e.failure_reason !== null)
    .map((e) => ({ episode_id: e.episode_id, reason: e.failure_reason, detail: e.failure_detail }));
}

export function landedGroupView(group: GroupRecord, episodes: readonly EpisodeRecord[]) {
  const statuses = episodes.map(episodeStatusView);
  return {
    group_id: group.id,
    status: group.status,
    env: group.env,
    run_id: group.runId,
    example_id: group.exampleId,
    group_size: group.groupSize,
    policy_version: group.policyVersion,
    policy_version_min: group.policyVersionMin,
    policy_version_max: group.policyVersionMax,
    /** Its run is paused for a weight sync, its generations waiting (live groups only). */
    paused: false,
    credit_assignment: group.creditAssignment,
    credit_applied: group.creditApplied,
    advantage: group.advantage,
    generation: group.generation,
    algorithm: group.algorithm,
    teacher_model: group.teacherModel,
    score_mean: group.scoreMean,
    score_std: group.scoreStd,
    uniform: group.uniform,
    /** The size of the group's token object in the TOKENS bucket; null without tokens. */
    token_object_bytes: group.tokenObjectBytes,
    warnings: group.warnings,
    failure_reason: group.failureReason,
    created_at: group.createdAt,
    finished_at: group.finishedAt,
    episodes: statuses,
    failures: failures(statuses),
  };
}

export function liveGroupView(live: LiveGroupStatus) {
  const { request } = live.spec;
  const statuses = live.episodes.map((e: LiveEpisode) => episodeStatusView(e));
  return {
    group_id: live.spec.groupId,
    status: live.status,
    env: request.env,
    run_id: request.run_id,
    example_id: request.example.id,
    group_size: request.group_size,
    policy_version: request.policy_version,
    policy_version_min: live.policySpan.min,
    policy_version_max: live.policySpan.max,
    paused: live.paused,
    credit_assignment: request.credit_assignment,
    credit_applied: null,
    advantage: request.advantage,
    generation: request.generation,
    algorithm: request.algorithm,
    teacher_model: request.teacher?.model ?? null,
    score_mean: null,
    score_std: null,
    uniform: null,
    token_object_bytes: null,
    warnings: live.warnings,
    failure_reason: null,
    last_error: live.lastError,
    created_at: live.spec.createdAt,
    finished_at: null,
    episodes: statuses,
    failures: failures(statuses),
  };
}

export type GroupView = ReturnType<typeof landedGroupView> | ReturnType<typeof liveGroupView>;

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
