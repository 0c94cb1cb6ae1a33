/**
 * Whether a chat generation still fits `max_context_tokens` with its completion budget, before
 * it is sent: what the host counted so far, plus an estimate of what it has not seen yet.
 */
import { type ChatMessage, isSampledAction } from "../../sdk";
import type { GroupRuntime } from "../group-runtime";

/** A rough token count for text the host has not counted yet; the host's own answer decides. */
function estimateTokens(messages: readonly ChatMessage[]): number {
  return messages.reduce(
    (sum, m) =>
      sum + Math.ceil((m.content.length + JSON.stringify(m.tool_calls ?? "").length) / 4) + 4,
    0,
  );
}

export function fitsContext(
  rt: Pick<GroupRuntime, "spec" | "store">,
  idx: number,
  transcript: readonly ChatMessage[],
): boolean {
  const { request } = rt.spec;
  const counted = rt.store.episodes.get(idx).totalTokens;
  const lastAction = transcript.findLastIndex(isSampledAction);
  // Before the host has counted anything, the tools it renders into the prompt count too.
  const tools = rt.store.tools.of(idx)?.tools;
  const used =
    counted !== null && lastAction !== -1
      ? counted + estimateTokens(transcript.slice(lastAction + 1))
      : estimateTokens(transcript) + (tools ? Math.ceil(JSON.stringify(tools).length / 4) : 0);
  return used + request.sampling.max_completion_tokens <= request.max_context_tokens;
}
