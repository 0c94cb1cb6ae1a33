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

/** vLLM's placeholder for a logprob it did not have (`max(logprob, -9999.0)`). */
const PLACEHOLDER_LOGPROB = -9999;

/** The teacher's logprob of each id given the ids before it; position 0 has none (NaN). */
export function parsePromptLogprobs(text: string, ids: Int32Array): Float32Array {
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
  ids: Int32Array,
  signal: AbortSignal,
): Promise<Float32Array> {
  const body = JSON.stringify({
    model,
    prompt: Array.from(ids),
    max_tokens: 1,
    prompt_logprobs: 0,
  });
  const response = await postJson(`${baseOf(endpoint)}/completions`, endpoint.apiKey, body, signal);
  return parsePromptLogprobs(await response.text(), ids);
}

/** Scores one sequence under a deadline, retried like a generation. */
export function teacherLogprobs(
  endpoint: InferenceEndpoint,
  model: string,
  ids: Int32Array,
  options: RetryOptions,
): Promise<CallOutcome<Float32Array>> {
  return callWithRetries((signal) => scoreOnce(endpoint, model, ids, signal), options);
}
