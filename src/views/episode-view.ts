/** One landed episode as the API answers with it and the dashboard shows it: its transcript too. */
import type { EpisodeRecord, MessageRecord } from "../db/queries";

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
    token_mode: episode.tokenMode,
    token_mode_reason: episode.tokenModeReason,
    prefix_breaks: episode.prefixBreaks,
    sample_count: episode.sampleCount,
    teacher_model: episode.teacherModel,
    reverse_kl: episode.reverseKl,
    tools_hash: episode.toolsHash,
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
      ...(m.sampled
        ? {
            model: m.model,
            logprob_sum: m.logprobSum,
            new_prompt_tokens: m.newPromptTokens,
            prefix_break: m.prefixBreak,
          }
        : {}),
    })),
  };
}

export type EpisodeView = ReturnType<typeof episodeView>;
