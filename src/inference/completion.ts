/**
 * The OpenAI-compatible wire format of a generation: what edgeroll sends and what it accepts
 * back. A chat completion (`/chat/completions`, the host renders the messages), or for token-in
 * generation a completion from token ids (vLLM's `/completions` with `prompt` as ids).
 */
import { z } from "zod";
import type { ChatMessage, ToolCall, ToolDefinition } from "../sdk";
import { TOKEN_REQUEST_FIELDS, type TokenFields } from "./token-fields";

export interface SamplingParams {
  model: string;
  temperature: number;
  top_p: number;
  max_completion_tokens: number;
  stop?: string | string[] | undefined;
}

export interface CompletionRequest {
  sampling: SamplingParams;
  messages: readonly ChatMessage[];
  /** Per-generation seed, derived from the group's seed, the episode and the turn. */
  seed?: number | undefined;
  stream: boolean;
  /** Ask the host for token ids and logprobs (token-exact episodes). */
  tokens: boolean;
  /**
   * Token-in generation: the whole prompt as ids, sent to `/completions`; the messages are then
   * not sent (they are what the ids say).
   */
  prompt?: Int32Array | undefined;
  /** Native tool calling: the tools the model may call (chat only; the host parses calls). */
  tools?: readonly ToolDefinition[] | undefined;
}

/** A finished generation, reassembled from a stream or read from one JSON body. */
export interface Completion {
  content: string;
  toolCalls: ToolCall[];
  finishReason: string | null;
  usage: {
    promptTokens: number;
    completionTokens: number;
    /**
     * Prompt tokens the host served from its prefix cache (`prompt_tokens_details.cached_tokens`:
     * vLLM with `--enable-prompt-tokens-details`, SGLang with `--enable-cache-report`, both of
     * which leave it out when it is 0); null when the host did not say.
     */
    cachedTokens: number | null;
  } | null;
  /** The host's token fields, when they were asked for; null when not. */
  tokens: TokenFields | null;
}

/** Arguments a host's template can render: a JSON object, as written, else `{}`. */
function renderableArguments(raw: string): string {
  try {
    const value: unknown = JSON.parse(raw);
    return typeof value === "object" && value !== null && !Array.isArray(value) ? raw : "{}";
  } catch {
    return "{}";
  }
}

/**
 * Only the fields the OpenAI API defines; edgeroll's metadata never leaves the Worker. A call
 * whose arguments the model broke goes back as `{}` (what current vLLM renders it as; older
 * releases fail the whole request on it), while the transcript keeps the raw string.
 */
export function toWire(message: ChatMessage) {
  const { metadata: _metadata, ...wire } = message;
  if (wire.tool_calls === undefined) return wire;
  return {
    ...wire,
    tool_calls: wire.tool_calls.map((call) => ({
      ...call,
      function: { ...call.function, arguments: renderableArguments(call.function.arguments) },
    })),
  };
}

/** Where the request goes, under the host's base URL. */
export const completionPath = (request: CompletionRequest) =>
  request.prompt === undefined ? "/chat/completions" : "/completions";

/** What every generation sends: the model, how to sample, when to stop, how to answer. */
function samplingFields(request: CompletionRequest) {
  const { sampling } = request;
  return {
    model: sampling.model,
    temperature: sampling.temperature,
    top_p: sampling.top_p,
    max_tokens: sampling.max_completion_tokens,
    ...(sampling.stop === undefined ? {} : { stop: sampling.stop }),
    ...(request.seed === undefined ? {} : { seed: request.seed }),
    ...(request.stream ? { stream: true, stream_options: { include_usage: true } } : {}),
  };
}

export function requestBody(request: CompletionRequest): string {
  if (request.prompt !== undefined) {
    // vLLM's completions from a token-id prompt: `logprobs: 0` is the sampled token's logprob
    // only, `return_token_ids` puts `prompt_token_ids` and `token_ids` on the choice.
    return JSON.stringify({
      ...samplingFields(request),
      prompt: Array.from(request.prompt),
      logprobs: 0,
      return_token_ids: true,
    });
  }
  return JSON.stringify({
    ...samplingFields(request),
    messages: request.messages.map(toWire),
    // Both names: vLLM, SGLang and OpenAI read the new one, older llama.cpp builds the old one.
    max_completion_tokens: request.sampling.max_completion_tokens,
    ...(request.tools?.length ? { tools: request.tools, tool_choice: "auto" } : {}),
    ...(request.tokens ? TOKEN_REQUEST_FIELDS : {}),
  });
}

const UsageSchema = z
  .object({
    prompt_tokens: z.number().int().nonnegative(),
    completion_tokens: z.number().int().nonnegative(),
    prompt_tokens_details: z
      .object({ cached_tokens: z.number().int().nonnegative().nullish() })
      .nullish(),
  })
  .nullish();

const WireToolCallSchema = z.object({
  id: z.string().default(""),
  type: z.literal("function").default("function"),
  function: z.object({ name: z.string(), arguments: z.string().default("") }),
});

export const CompletionBodySchema = z.object({
  choices: z
    .array(
      z.union([
        z.object({
          message: z.object({
            content: z.string().nullish(),
            tool_calls: z.array(WireToolCallSchema).nullish(),
          }),
          text: z.undefined().optional(),
          finish_reason: z.string().nullish(),
        }),
        // A completion's choice (token-in generation): the host's decoding of its tokens.
        z.object({
          message: z.undefined().optional(),
          text: z.string(),
          finish_reason: z.string().nullish(),
        }),
      ]),
    )
    .min(1),
  usage: UsageSchema,
});

export function usageOf(usage: z.infer<typeof UsageSchema>): Completion["usage"] {
  return usage
    ? {
        promptTokens: usage.prompt_tokens,
        completionTokens: usage.completion_tokens,
        cachedTokens: usage.prompt_tokens_details?.cached_tokens ?? null,
      }
    : null;
}
