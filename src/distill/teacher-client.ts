/**
 * A teacher's logprobs for given tokens: vLLM's `/completions` with the ids as `prompt`,
 * `max_tokens: 1` and `prompt_logprobs: 0`, which answers `choices[0].prompt_logprobs` — one
 * entry per prompt position, `null` for the first (nothing precedes it), then
 * `{"<id>": {"logprob", "rank", "decoded_token"}}` holding at least the prompt token's own.
 */
import { baseOf, type InferenceEndpoint } from "../inference/client";
import { malformed } from "../inference/failures";
import {
  type CallOutcome,
  callWithRetries,
  postJson,
  type RetryOptions,
} from "../inference/retries";
import { PLACEHOLDER_LOGPROB } from "../inference/token-fields";

/**
 * The teacher's logprob of each id given the ids before it, read where `wanted` is 1 (the
 * sampled tokens; the prompt's and the environment's are not used, and a host may lack them);
 * NaN elsewhere.
 */
export function parsePromptLogprobs(
  text: string,
  ids: Int32Array,
  wanted: Uint8Array,
): Float32Array {
  let entries: unknown;
  try {
    entries = (JSON.parse(text) as { choices?: { prompt_logprobs?: unknown }[] }).choices?.[0]
      ?.prompt_logprobs;
  } catch {
    throw malformed(`malformed body from the teacher: ${text.slice(0, 120)}`);
  }
  if (!Array.isArray(entries))
    throw malformed(`the teacher sent no prompt_logprobs: ${text.slice(0, 120)}`);
  if (entries.length !== ids.length)
    throw malformed(
      `the teacher sent ${entries.length} prompt_logprobs for ${ids.length} prompt tokens`,
    );
  const logprobs = new Float32Array(ids.length).fill(Number.NaN);
  for (let i = 1; i < ids.length; i++) {
    if (wanted[i] !== 1) continue;
    const entry = entries[i] as Record<string, { logprob?: unknown }> | null;
    const logprob = entry?.[String(ids[i])]?.logprob;
    if (typeof logprob !== "number" || !Number.isFinite(logprob) || logprob <= PLACEHOLDER_LOGPROB)
      throw malformed(`the teacher's prompt_logprobs have no logprob for token ${ids[i]} at ${i}`);
    logprobs[i] = logprob;
  }
  return logprobs;
}

async function scoreOnce(
  endpoint: InferenceEndpoint,
  model: string,
  sequence: { ids: Int32Array; wanted: Uint8Array },
  signal: AbortSignal,
): Promise<Float32Array> {
  const { ids } = sequence;
  const body = JSON.stringify({
    model,
    prompt: Array.from(ids),
    max_tokens: 1,
    prompt_logprobs: 0,
  });
  const response = await postJson(
    `${baseOf(endpoint)}/completions`,
    endpoint.apiKey,
    body,
    signal,
    `${endpoint.name ?? "teacher host"} (/completions)`,
  );
  return parsePromptLogprobs(await response.text(), ids, sequence.wanted);
}

/** Scores one sequence where `wanted` is 1, under a deadline, retried like a generation. */
export function teacherLogprobs(
  endpoint: InferenceEndpoint,
  model: string,
  sequence: { ids: Int32Array; wanted: Uint8Array },
  options: RetryOptions,
): Promise<CallOutcome<Float32Array>> {
  return callWithRetries((signal) => scoreOnce(endpoint, model, sequence, signal), options);
}
