/**
 * The host's answer recorded as the episode's next action, with its tokens in the same write;
 * or, for a group that cannot go on without tokens, the end of the episode, saying what was
 * missing and the fix.
 */
import type { GenerationOutcome } from "../../inference/client";
import { type ChatMessage, sampledMessage, withCallIds } from "../../sdk";
import type { GroupRuntime } from "../group-runtime";
import { ENDED, type GenerationResult } from "./results";

export function recordAction(
  rt: GroupRuntime,
  idx: number,
  transcript: readonly ChatMessage[],
  outcome: Extract<GenerationOutcome, { kind: "ok" }>,
): GenerationResult {
  const { store, spec } = rt;
  const { completion } = outcome;
  const { temperature, top_p: topP } = spec.request.sampling;
  const tokens = rt.generation.tokens.record(completion.tokens, { temperature, topP });
  if (tokens.kind === "end") {
    store.finish(idx, tokens.end);
    return ENDED;
  }
  const exact = tokens.kind === "exact" ? tokens.host : null;
  const turn = store.episodes.get(idx).turns;
  const toolCalls = withCallIds(completion.toolCalls, turn, transcript);
  const action = sampledMessage({ content: completion.content, toolCalls });
  store.recordAction(
    idx,
    action,
    {
      // The host's own count; its token ids are the exact one where usage is missing.
      promptTokens: completion.usage?.promptTokens ?? exact?.promptIds.length ?? null,
      completionTokens: completion.usage?.completionTokens ?? exact?.completionIds.length ?? null,
      finishReason: completion.finishReason,
      latencyMs: outcome.latencyMs,
      attempts: outcome.attempts,
      host: outcome.host,
      cachedTokens: completion.usage?.cachedTokens ?? null,
    },
    tokens,
  );
  return { kind: "recorded", action };
}
