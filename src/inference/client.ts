/**
 * Sends one generation to the inference host under a deadline (retries.ts): a chat completion,
 * or, for token-in generation, a completion from a prompt of token ids.
 */
import { describeZodError } from "../sdk";
import {
  type Completion,
  CompletionBodySchema,
  type CompletionRequest,
  completionPath,
  requestBody,
  usageOf,
} from "./completion";
import { InferenceError, malformed } from "./failures";
import {
  type CallOutcome,
  callWithRetries,
  type GenerationFailure,
  postJson,
  type RetryOptions,
} from "./retries";
import { parseCompletionStream, readCompletionStream, type StreamProgress } from "./stream";
import { TokenFieldReader, type TokenFields } from "./token-fields";

export type { GenerationFailure };

export interface InferenceEndpoint {
  baseUrl: string;
  apiKey?: string | undefined;
  /** What errors call it: "inference host" unless said otherwise ("teacher host"). */
  name?: string;
}

export type GenerationOutcome =
  | {
      kind: "ok";
      completion: Completion;
      attempts: number;
      latencyMs: number;
      /** The host that answered (another than the first when a failure moved the call). */
      host: string;
      /** The host refused the token fields and was asked again without them. */
      refusedTokenFields: boolean;
    }
  | Exclude<CallOutcome<Completion>, { kind: "ok" }>;

export interface GenerateOptions extends Omit<RetryOptions, "retryRefusal" | "elsewhere"> {
  /** `X-Session-ID` on every request: the episode's id. */
  sessionId?: string;
  /**
   * A retryable failure of `endpoint`, before its backoff: the endpoint to try next instead (a
   * fleet's other host), or null to try the same one again after the backoff.
   */
  elsewhere?: (
    failure: InferenceError,
    endpoint: InferenceEndpoint,
    signal: AbortSignal,
  ) => Promise<InferenceEndpoint | null>;
  /**
   * Ask again without the token fields when the host refuses them with a 4xx (a group that can
   * go on without tokens); otherwise the refusal is the generation's answer.
   */
  retryWithoutTokens?: boolean;
  /**
   * A stream whose largest possible body fits in this many bytes is read whole by the runtime
   * and parsed once: no JavaScript runs per token chunk, which saves about 0.6 ms of CPU a turn
   * (docs/benchmarks.md). A larger one is parsed as it arrives, holding only the text so far.
   * Default 0: always as it arrives.
   */
  wholeStreamBytes?: number;
  /**
   * Filled with a view of the stream of the attempt under way, as it arrives (null while none
   * is read as it arrives): what an abort cut short, for its caller to keep or count.
   */
  inProgress?: StreamProgress;
}

/** A 4xx that names a token field refused that field, not the generation. */
const TOKEN_FIELDS = /return_token_ids|top_logprobs|logprobs/i;

export const refusesTokenFields = (message: string) => TOKEN_FIELDS.test(message);

/** Wire bytes per streamed token, with room to spare: vLLM's chunks are about 200. */
const STREAM_BYTES_PER_TOKEN = 300;

/** The host's base URL without trailing slashes: `http://host:8000/v1`. */
export const baseOf = (endpoint: InferenceEndpoint) => endpoint.baseUrl.replace(/\/+$/, "");

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
    // A chat choice carries a message; a completion's choice its text.
    content: choice?.message?.content ?? choice?.text ?? "",
    toolCalls: choice?.message?.tool_calls ?? [],
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
  sessionId: string | undefined,
  inProgress: GenerateOptions["inProgress"],
): Promise<Completion> {
  if (inProgress) inProgress.stream = null;
  const url = `${baseOf(endpoint)}${completionPath(request)}`;
  const response = await postJson(
    url,
    endpoint.apiKey,
    requestBody(request),
    signal,
    endpoint.name ?? "inference host",
    sessionId,
  );
  const streamed =
    request.stream &&
    response.body &&
    response.headers.get("content-type")?.includes("text/event-stream");
  try {
    if (!streamed || !response.body) return await readJson(response, request.tokens);
    return readWhole
      ? parseCompletionStream(await response.text(), request.tokens)
      : await readCompletionStream(response.body, request.tokens, (stream) => {
          if (inProgress) inProgress.stream = stream;
        });
  } catch (error) {
    if (signal.aborted || error instanceof InferenceError) throw error;
    throw new InferenceError("retryable", `the response broke off: ${String(error)}`, {
      cause: error,
      malformed: true,
      unanswered: true,
    });
  }
}

export async function generate(
  endpoint: InferenceEndpoint,
  request: CompletionRequest,
  options: GenerateOptions,
): Promise<GenerationOutcome> {
  const readWhole =
    request.sampling.max_completion_tokens * STREAM_BYTES_PER_TOKEN <=
    (options.wholeStreamBytes ?? 0);
  let current = request;
  let tokensRefused: string | null = null;
  let at = endpoint;
  const { elsewhere } = options;
  const outcome = await callWithRetries(
    (signal) => sendOnce(at, current, signal, readWhole, options.sessionId, options.inProgress),
    {
      ...options,
      elsewhere:
        elsewhere === undefined
          ? undefined
          : async (failure, signal) => {
              const next = await elsewhere(failure, at, signal);
              if (next === null) return false;
              at = next;
              return true;
            },
      retryRefusal: (failure) => {
        // A host that will not take the token fields (SGLang while streaming) is asked again
        // without them; the completion then says why it has no tokens. A token-in prompt cannot
        // go without them: its next prompt is built from the ids.
        if (
          !current.tokens ||
          current.prompt !== undefined ||
          options.retryWithoutTokens !== true ||
          !TOKEN_FIELDS.test(failure.message)
        )
          return false;
        tokensRefused = failure.message;
        current = { ...current, tokens: false };
        return true;
      },
    },
  );
  if (outcome.kind !== "ok") return outcome;
  const completion = outcome.value;
  if (tokensRefused !== null) {
    completion.tokens = {
      kind: "missing",
      problem: `the host refused the token fields: ${tokensRefused}`,
    };
  }
  return {
    kind: "ok",
    completion,
    attempts: outcome.attempts,
    latencyMs: outcome.latencyMs,
    host: baseOf(at),
    refusedTokenFields: tokensRefused !== null,
  };
}
