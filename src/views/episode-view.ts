/** One landed episode as the API answers with it and the dashboard shows it: its transcript too. */
import type { FoundEpisode } from "../db/queries";

export function episodeView({ episode, messages, components, judgements }: FoundEpisode) {
  return {
    episode_id: episode.id,
    group_id: episode.groupId,
    index: episode.idx,
    run_id: episode.runId,
    env: episode.env,
    env_version: episode.envVersion,
    example_id: episode.exampleId,
    policy_version: episode.policyVersion,
    policy_version_min: episode.policyVersionMin,
    policy_version_max: episode.policyVersionMax,
    status: episode.status,
    end_reason: episode.endReason,
    failure_reason: episode.failureReason,
    failure_detail: episode.failureDetail,
    /** The end it played to, when its grading failed it (`judge_error`, `score_error`). */
    played_end_reason: episode.playedEndReason,
    score: episode.score,
    threshold: episode.threshold,
    success: episode.success,
    overlong: episode.overlong,
    advantage: episode.advantage,
    per_turn_rewards: episode.perTurnRewards,
    per_turn_advantages: episode.perTurnAdvantages,
    reward_metadata: episode.rewardMetadata,
    /** A rubric's grade, part by part: the score is Σ weight × value (weight 0: a metric). */
    reward_components: components
      .map((c) => ({ name: c.name, value: c.value, weight: c.weight }))
      .sort((a, b) => b.weight - a.weight || a.name.localeCompare(b.name)),
    /** Every judge call its grading made, in order: asked, answered, parsed, which attempt. */
    judgements: judgements.map((j) => ({
      component: j.component,
      model: j.model,
      attempt: j.attempt,
      value: j.value,
      reason: j.reason,
      error: j.error,
      latency_ms: j.latencyMs,
      prompt: j.prompt,
      response: j.response,
      created_at: j.createdAt,
    })),
    turns: episode.turns,
    prompt_tokens: episode.promptTokens,
    completion_tokens: episode.completionTokens,
    total_tokens: episode.totalTokens,
    latency_ms: episode.latencyMs,
    redispatches: episode.redispatches,
    discarded_tokens: episode.discardedTokens,
    kept_tokens: episode.keptTokens,
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
            policy_version: m.policyVersion,
          }
        : {}),
    })),
  };
}

export type EpisodeView = ReturnType<typeof episodeView>;
