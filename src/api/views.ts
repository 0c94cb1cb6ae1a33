/** The JSON the API answers with (snake_case), built from D1 rows or a live group object. */
import type { EpisodeRecord, GroupRecord, MessageRecord } from "../db/queries";
import type { EpisodeStatus, LiveGroupStatus } from "../rollout/group-object";

function failures(episodes: readonly EpisodeStatus[]) {
  return episodes
    .filter((e) => e.failure_reason !== null)
    .map((e) => ({ episode_id: e.episode_id, reason: e.failure_reason, detail: e.failure_detail }));
}

export function landedGroupView(group: GroupRecord, episodes: readonly EpisodeRecord[]) {
  const statuses: EpisodeStatus[] = episodes.map((e) => ({
    episode_id: e.id,
    index: e.idx,
    state: e.status,
    turns: e.turns,
    end_reason: e.endReason,
    failure_reason: e.failureReason,
    failure_detail: e.failureDetail,
    redispatches: e.redispatches,
    retry_at: null,
    score: e.score,
    advantage: e.advantage,
  }));
  return {
    group_id: group.id,
    status: group.status,
    env: group.env,
    run_id: group.runId,
    example_id: group.exampleId,
    group_size: group.groupSize,
    policy_version: group.policyVersion,
    credit_assignment: group.creditAssignment,
    credit_applied: group.creditApplied,
    advantage: group.advantage,
    score_mean: group.scoreMean,
    score_std: group.scoreStd,
    uniform: group.uniform,
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
  return {
    group_id: live.spec.groupId,
    status: live.status,
    env: request.env,
    run_id: request.run_id,
    example_id: request.example.id,
    group_size: request.group_size,
    policy_version: request.policy_version,
    credit_assignment: request.credit_assignment,
    credit_applied: null,
    advantage: request.advantage,
    score_mean: null,
    score_std: null,
    uniform: null,
    warnings: live.warnings,
    failure_reason: null,
    last_error: live.lastError,
    created_at: live.spec.createdAt,
    finished_at: null,
    episodes: live.episodes,
    failures: failures(live.episodes),
  };
}

export function episodeView(episode: EpisodeRecord, messages: readonly MessageRecord[]) {
  return {
    episode_id: episode.id,
    group_id: episode.groupId,
    index: episode.idx,
    run_id: episode.runId,
    env: episode.env,
    example_id: episode.exampleId,
    policy_version: episode.policyVersion,
    status: episode.status,
    end_reason: episode.endReason,
    failure_reason: episode.failureReason,
    failure_detail: episode.failureDetail,
    score: episode.score,
    threshold: episode.threshold,
    success: episode.success,
    advantage: episode.advantage,
    per_turn_rewards: episode.perTurnRewards,
    per_turn_advantages: episode.perTurnAdvantages,
    reward_metadata: episode.rewardMetadata,
    turns: episode.turns,
    prompt_tokens: episode.promptTokens,
    completion_tokens: episode.completionTokens,
    total_tokens: episode.totalTokens,
    latency_ms: episode.latencyMs,
    redispatches: episode.redispatches,
    response_text: episode.responseText,
    created_at: episode.createdAt,
    finished_at: episode.finishedAt,
    messages: messages.map((m) => ({
      seq: m.seq,
      turn: m.turn,
      role: m.role,
      content: m.content,
      ...(m.name === null ? {} : { name: m.name }),
      ...(m.toolCalls === null ? {} : { tool_calls: m.toolCalls }),
      ...(m.toolCallId === null ? {} : { tool_call_id: m.toolCallId }),
      sampled: m.sampled,
      prompt_tokens: m.promptTokens,
      completion_tokens: m.completionTokens,
      finish_reason: m.finishReason,
      latency_ms: m.latencyMs,
      attempts: m.attempts,
      truncated: m.truncated,
    })),
  };
}
