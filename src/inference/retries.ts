/**
 * One call to the inference host (a generation, a tokenization, a teacher's scoring) under a
 * deadline: transport faults (429, 5xx, resets, malformed bodies) are retried with backoff
 * inside the deadline; past the deadline the attempt is aborted and its partial output dropped.
 */
import { backoffDelayMs } from "../utils/backoff";
import { errorForStatus, InferenceError } from "./failures";

/**
 * Why a call failed for good: the host refused it (a 4xx), could not be reached or kept
 * failing (`unavailable`), or kept answering with bodies that do not read as an answer.
 */
export type GenerationFailure = "rejected" | "unavailable" | "malformed";

export type CallOutcome<T> =
  | { kind: "ok"; value: T; attempts: number; latencyMs: number }
  | { kind: "timeout"; attempts: number; latencyMs: number }
  /** The host asked for a wait longer than is worth holding in memory: retry after `delayMs`. */
  | { kind: "retry_later"; attempts: number; delayMs: number; message: string }
  /** The host says the prompt no longer fits the model's context. */
  | { kind: "context_exceeded"; attempts: number; message: string }
  | { kind: "failed"; failure: GenerationFailure; attempts: number; message: string };

export interface RetryOptions {
  deadlineMs: number;
  maxRetries: number;
  /** Backoffs up to this long are slept here; longer ones come back as `retry_later`. */
  maxInlineBackoffMs?: number;
  /** Aborts the call from outside (the group shutting it down); rethrown, not an outcome. */
  signal?: AbortSignal;
  /**
   * Sees a refusal (a 4xx) before it becomes the outcome; true means "asked again differently,
   * try once more" (a host refusing the token fields is asked without them).
   */
  retryRefusal?: (failure: InferenceError) => boolean;
  /**
   * Sees every retryable failure before its backoff (a fleet counts it against the host); true
   * means the next attempt goes to another host, at once, without the backoff.
   */
  elsewhere?: (failure: InferenceError, signal: AbortSignal) => Promise<boolean>;
}

class DeadlineExceeded extends Error {
  override name = "DeadlineExceeded";
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}

/** Exponential backoff with jitter, never shorter than what Retry-After asked for. */
export function backoffMs(attempt: number, retryAfterS?: number): number {
  const exponential = backoffDelayMs(attempt, { baseMs: 250, maxMs: 8000, jitter: true });
  return Math.min(Math.max(exponential, (retryAfterS ?? 0) * 1000), 60_000);
}

export async function callWithRetries<T>(
  attempt: (signal: AbortSignal) => Promise<T>,
  options: RetryOptions,
): Promise<CallOutcome<T>> {
  const started = Date.now();
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(new DeadlineExceeded()), options.deadlineMs);
  // An abort from outside aborts the attempt through the same controller: a listener, not a
  // composite signal made for every call.
  const external = options.signal;
  const onExternal = () => deadline.abort(external?.reason);
  if (external?.aborted) onExternal();
  else external?.addEventListener("abort", onExternal, { once: true });
  const signal = deadline.signal;
  let attempts = 0;
  try {
    for (;;) {
      attempts++;
      try {
        const value = await attempt(signal);
        return { kind: "ok", value, attempts, latencyMs: Date.now() - started };
      } catch (error) {
        if (options.signal?.aborted) throw error;
        if (deadline.signal.aborted)
          return { kind: "timeout", attempts, latencyMs: Date.now() - started };
        const failure =
          error instanceof InferenceError
            ? error
            : new InferenceError("retryable", String(error), { cause: error });
        if (failure.kind === "context_exceeded")
          return { kind: "context_exceeded", attempts, message: failure.message };
        if (failure.kind === "rejected") {
          if (options.retryRefusal?.(failure) === true) continue;
          return { kind: "failed", failure: "rejected", attempts, message: failure.message };
        }
        const exhausted: GenerationFailure = failure.malformed ? "malformed" : "unavailable";
        if (attempts > options.maxRetries)
          return { kind: "failed", failure: exhausted, attempts, message: failure.message };
        if (options.elsewhere !== undefined && (await options.elsewhere(failure, signal))) continue;
        // Aborted from outside while the failure was being reported: not a timeout.
        if (options.signal?.aborted) throw options.signal.reason;
        if (deadline.signal.aborted)
          return { kind: "timeout", attempts, latencyMs: Date.now() - started };
        const delayMs = backoffMs(attempts, failure.retryAfterS);
        if (Date.now() + delayMs >= started + options.deadlineMs) {
          // The host answered, badly, until the time ran out: report that, not a timeout.
          const message = `${failure.message} (no time left to retry)`;
          return { kind: "failed", failure: exhausted, attempts, message };
        }
        if (delayMs > (options.maxInlineBackoffMs ?? Number.POSITIVE_INFINITY)) {
          return { kind: "retry_later", attempts, delayMs, message: failure.message };
        }
        try {
          await sleep(delayMs, signal);
        } catch (aborted) {
          if (options.signal?.aborted) throw aborted;
          return { kind: "timeout", attempts, latencyMs: Date.now() - started };
        }
      }
    }
  } finally {
    clearTimeout(timer);
    external?.removeEventListener("abort", onExternal);
  }
}

/**
 * POSTs JSON to the host; a non-2xx answer or no answer at all becomes an InferenceError that
 * says who failed (`from`: "inference host", "the teacher host's /completions", ...).
 */
export async function postJson(
  url: string,
  apiKey: string | undefined,
  body: string,
  signal: AbortSignal,
  from = "inference host",
  /**
   * `X-Session-ID`: the episode. Routers that keep a session on one replica key on it (vLLM's
   * router reads it first, src/policies/hash_key.rs), so a fleet behind one keeps its caches.
   */
  sessionId?: string,
): Promise<Response> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (apiKey) headers.authorization = `Bearer ${apiKey}`;
  if (sessionId !== undefined) headers["x-session-id"] = sessionId;
  let response: Response;
  try {
    response = await fetch(url, { method: "POST", headers, body, signal });
  } catch (error) {
    if (signal.aborted) throw error;
    throw new InferenceError("retryable", `could not reach the ${from}: ${String(error)}`, {
      cause: error,
      unanswered: true,
    });
  }
  if (!response.ok) {
    throw errorForStatus(
      response.status,
      await response.text(),
      response.headers.get("retry-after"),
      from,
    );
  }
  return response;
}
