/** Why a generation attempt did not produce a completion; each kind decides what happens next. */

export type FailureKind =
  /** 429, 5xx, a reset connection, a cut stream or an unreadable body: worth retrying. */
  | "retryable"
  /** The prompt no longer fits the model's context: the episode ends truncated. */
  | "context_length"
  /** Any other 4xx: the host will not do this; retrying cannot help. */
  | "rejected";

export class InferenceError extends Error {
  override name = "InferenceError";
  constructor(
    readonly kind: FailureKind,
    message: string,
    /** Seconds the host asked us to wait (Retry-After), when it did. */
    readonly retryAfterS?: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

const CONTEXT_LENGTH =
  /context[_ ]length|maximum context|context size|context window|too many tokens|prompt is too long/i;

/** Seconds from a Retry-After header: delta-seconds or an HTTP date. */
export function parseRetryAfter(header: string | null, now = Date.now()): number | undefined {
  if (header === null || header.trim() === "") return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds);
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, (date - now) / 1000);
}

/** Classifies a non-2xx answer from the inference host. */
export function errorForStatus(
  status: number,
  body: string,
  retryAfter: string | null,
): InferenceError {
  const detail = `inference host answered ${status}: ${body.slice(0, 300)}`;
  if (status === 429 || status >= 500)
    return new InferenceError("retryable", detail, parseRetryAfter(retryAfter));
  if (CONTEXT_LENGTH.test(body)) return new InferenceError("context_length", detail);
  return new InferenceError("rejected", detail);
}
