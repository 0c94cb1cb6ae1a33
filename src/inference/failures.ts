/** Why a generation attempt did not produce a completion; each kind decides what happens next. */
import { parseRetryAfter } from "../utils/retry-after";

export type FailureKind =
  /** 429, 5xx, a reset connection, a cut stream or an unreadable body: worth retrying. */
  | "retryable"
  /** The prompt no longer fits the model's context: the episode ends truncated. */
  | "context_exceeded"
  /** Any other 4xx: the host will not do this; retrying cannot help. */
  | "rejected";

export interface InferenceErrorOptions extends ErrorOptions {
  /** Seconds the host asked us to wait (Retry-After), when it did. */
  retryAfterS?: number | undefined;
  /** The host answered, but with a body that is not a completion (as opposed to no answer). */
  malformed?: boolean;
  /** No answer at all: the connection was refused or reset, or the response broke off. */
  unanswered?: boolean;
  /** The HTTP status the host answered with, when it answered with an error status. */
  status?: number;
}

export class InferenceError extends Error {
  override name = "InferenceError";
  readonly retryAfterS: number | undefined;
  readonly malformed: boolean;
  readonly unanswered: boolean;
  readonly status: number | null;
  constructor(
    readonly kind: FailureKind,
    message: string,
    options: InferenceErrorOptions = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.retryAfterS = options.retryAfterS;
    this.malformed = options.malformed ?? false;
    this.unanswered = options.unanswered ?? false;
    this.status = options.status ?? null;
  }
}

/** A body from the host that does not read as a completion: retried, then `malformed`. */
export function malformed(message: string, cause?: unknown): InferenceError {
  return new InferenceError("retryable", message, { malformed: true, cause });
}

const CONTEXT_LENGTH =
  /context[_ ]length|maximum context|context size|context window|too many tokens|prompt is too long/i;

/** Classifies a non-2xx answer from the inference host. */
export function errorForStatus(
  status: number,
  body: string,
  retryAfter: string | null,
  /** Who answered, for the message: "inference host", or the host and the endpoint. */
  from = "inference host",
): InferenceError {
  const detail = `${from} answered ${status}: ${body.slice(0, 300)}`;
  if (status === 429 || status >= 500)
    return new InferenceError("retryable", detail, {
      retryAfterS: parseRetryAfter(retryAfter),
      status,
    });
  if (CONTEXT_LENGTH.test(body)) return new InferenceError("context_exceeded", detail, { status });
  return new InferenceError("rejected", detail, { status });
}
