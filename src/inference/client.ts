/**
 * Sends one generation to the inference host under a deadline. Transport faults (429, 5xx,
 * resets, malformed bodies) are retried with backoff inside the deadline; past the deadline
 * the attempt is aborted and its partial output discarded.
 */
import { describeZodError } from "../sdk";
import { backoffDelayMs } from "../utils/backoff";
import {
  type Completion,
  CompletionBodySchema,
  type CompletionRequest,
  requestBody,
  usageOf,
} from "./completion";
import { errorForStatus, InferenceError, malformed } from "./failures";
import { parseCompletionStream, readCompletionStream } from "./stream";
import { TokenFieldReader, type TokenFields } from "./token-fields";

export interface InferenceEndpoint {
  baseUrl: string;
  apiKey?: string | undefined;
}

/**
 * Why a generation failed for good: the host refused it (a 4xx), could not be reached or kept
 * failing (`unavailable`), or kept answering with bodies that are not completions.
 */
export type GenerationFailure = "rejected" | "unavailable" | "malformed";

export type GenerationOutcome =
  | { kind: "ok"; completion: Completion; attempts: number; latencyMs: number }
  | { kind: "timeout"; attempts: number; latencyMs: number }
  /** The host asked for a wait longer than is worth holding in memory: retry after `delayMs`. */
  | { kind: "retry_later"; attempts: number; delayMs: number; message: string }
  /** The host says the prompt no longer fits the model's context. */
  | { kind: "context_exceeded"; attempts: number; message: string }
  | { kind: "failed"; failure: GenerationFailure; attempts: number; message: string };

export interface GenerateOptions {
  deadlineMs: number;
  maxRetries: number;
  /** Backoffs up to this long are slept here; longer ones come back as `retry_later`. */
  maxInlineBackoffMs?: number;
  /**
   * Ask again without the token fields when the host refuses them with a 4xx (a group that can
   * go on without tokens); otherwise the refusal is the generation's answer.
   */
  retryWithoutTokens?: boolean;
  /** Aborts the generation from outside (the group shutting it down); rethrown, not an outcome. */
  signal?: AbortSignal;
  /**
   * A stream whose largest possible body fits in this many bytes is read whole by the runtime
   * and parsed once: no JavaScript runs per token chunk, which saves about 0.6 ms of CPU a turn
   * (BENCHMARKS.md). A larger one is parsed as it arrives, holding only the text so far.
   * Default 0: always as it arrives.
   */
  wholeStreamBytes?: number;
}

/** A 4xx that names a token field refused that field, not the generation. */
const TOKEN_FIELDS = /return_token_ids|top_logprobs|logprobs/i;

export const refusesTokenFields = (message: string) => TOKEN_FIELDS.test(message);

/** Wire bytes per streamed token, with room to spare: vLLM's chunks are about 200. */
const STREAM_BYTES_PER_TOKEN = 300;

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

async function readJson(response: Response, wantTokens: boolean): Promise<Completion> {
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw malformed(`malformed body from the inference host: ${text.slice(0, 120)}`);
  }
  const body = CompletionBodySchema.safeParse(json);
  if (!body.success) {
    throw malformed(`malformed completion: ${describeZodError(body.error)}`, body.error);
  }
  const [choice] = body.data.choices;
  let tokens: TokenFields | null = null;
  if (wantTokens) {
    const reader = new TokenFieldReader();
    const raw = json as { choices: Record<string, unknown>[] } & Record<string, unknown>;
    reader.add(raw, raw.choices[0]);
    tokens = reader.result(usageOf(body.data.usage));
  }
  return {
    content: choice?.message.content ?? "",
    toolCalls: choice?.message.tool_calls ?? [],
    finishReason: choice?.finish_reason ?? null,
    usage: usageOf(body.data.usage),
    tokens,
  };
}

async function sendOnce(
  endpoint: InferenceEndpoint,
  request: CompletionRequest,
  signal: AbortSignal,
  readWhole: boolean,
): Promise<Completion> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (endpoint.apiKey) headers.authorization = `Bearer ${endpoint.apiKey}`;
  let response: Response;
  try {
    response = await fetch(`${endpoint.baseUrl.replace(/\/+$/, "")}/chat/completions`, {
      method: "POST",
      headers,
      body: requestBody(request),
      signal,
    });
  } catch (error) {
    if (signal.aborted) throw error;
    throw new InferenceError("retryable", `could not reach the inference host: ${String(error)}`, {
      cause: error,
    });
  }
  if (!response.ok) {
    throw errorForStatus(
      response.status,
      await response.text(),
      response.headers.get("retry-after"),
    );
  }
  const streamed =
    request.stream &&
    response.body &&
    response.headers.get("content-type")?.includes("text/event-stream");
  try {
    if (!streamed || !response.body) return await readJson(response, request.tokens);
    return readWhole
      ? parseCompletionStream(await response.text(), request.tokens)
      : await readCompletionStream(response.body, request.tokens);
  } catch (error) {
    if (signal.aborted || error instanceof InferenceError) throw error;
    throw malformed(`the response broke off: ${String(error)}`, error);
  }
}

export async function generate(
  endpoint: InferenceEndpoint,
  request: CompletionRequest,
  options: GenerateOptions,
): Promise<GenerationOutcome> {
  const started = Date.now();
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(new DeadlineExceeded()), options.deadlineMs);
  const signal = options.signal
    ? AbortSignal.any([deadline.signal, options.signal])
    : deadline.signal;
  const readWhole =
    request.sampling.max_completion_tokens * STREAM_BYTES_PER_TOKEN <=
    (options.wholeStreamBytes ?? 0);
  let attempts = 0;
  let current = request;
  let tokensRefused: string | null = null;
  try {
    for (;;) {
      attempts++;
      try {
        const completion = await sendOnce(endpoint, current, signal, readWhole);
        if (tokensRefused !== null) {
          completion.tokens = {
            kind: "missing",
            problem: `the host refused the token fields: ${tokensRefused}`,
          };
        }
        return { kind: "ok", completion, attempts, latencyMs: Date.now() - started };
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
        if (
          failure.kind === "rejected" &&
          current.tokens &&
          options.retryWithoutTokens === true &&
          TOKEN_FIELDS.test(failure.message)
        ) {
          // A host that will not take the token fields (SGLang while streaming) is asked again
          // without them; the completion then says why it has no tokens.
          tokensRefused = failure.message;
          current = { ...current, tokens: false };
          continue;
        }
        if (failure.kind === "rejected")
          return { kind: "failed", failure: "rejected", attempts, message: failure.message };
        const exhausted: GenerationFailure = failure.malformed ? "malformed" : "unavailable";
        if (attempts > options.maxRetries)
          return { kind: "failed", failure: exhausted, attempts, message: failure.message };
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
  }
}
