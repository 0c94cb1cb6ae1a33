/**
 * The OpenAI-compatible wire format of a generation: what edgeroll sends and what it accepts
 * back. A chat completion (`/chat/completions`, the host renders the messages), or for token-in
 * generation a completion from token ids (vLLM's `/completions` with `prompt` as ids).
 */
import { z } from "zod";
import type { ChatMessage, ToolCall } from "../sdk";
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
}

/** A finished generation, reassembled from a stream or read from one JSON body. */
export interface Completion {
  content: string;
  toolCalls: ToolCall[];
  finishReason: string | null;
  usage: { promptTokens: number; completionTokens: number } | null;
  /** The host's token fields, when they were asked for; null when not. */
  tokens: TokenFields | null;
}

/** Only the fields the OpenAI API defines; edgeroll's metadata never leaves the Worker. */
export function toWire(message: ChatMessage) {
  const { metadata: _metadata, ...wire } = message;
  return wire;
}

/** Where the request goes, under the host's base URL. */
export const completionPath = (request: CompletionRequest) =>
  request.prompt === undefined ? "/chat/completions" : "/completions";

/**
 * vLLM's completions from a token-id prompt: `logprobs: 0` is the sampled token's logprob only,
 * `return_token_ids` puts `prompt_token_ids` and `token_ids` on the choice.
 */
function tokenPromptBody(request: CompletionRequest, prompt: Int32Array): string {
  const { sampling } = request;
  return JSON.stringify({
    model: sampling.model,
    prompt: Array.from(prompt),
    temperature: sampling.temperature,
    top_p: sampling.top_p,
    max_tokens: sampling.max_completion_tokens,
    ...(sampling.stop === undefined ? {} : { stop: sampling.stop }),
    ...(request.seed === undefined ? {} : { seed: request.seed }),
    ...(request.stream ? { stream: true, stream_options: { include_usage: true } } : {}),
    logprobs: 0,
    return_token_ids: true,
  });
}

export function requestBody(request: CompletionRequest): string {
  const { sampling } = request;
  if (request.prompt !== undefined) return tokenPromptBody(request, request.prompt);
  return JSON.stringify({
    model: sampling.model,
    messages: request.messages.map(toWire),
    temperature: sampling.temperature,
    top_p: sampling.top_p,
    // Both names: vLLM, SGLang and OpenAI read the new one, older llama.cpp builds the old one.
    max_tokens: sampling.max_completion_tokens,
    max_completion_tokens: sampling.max_completion_tokens,
    ...(sampling.stop === undefined ? {} : { stop: sampling.stop }),
    ...(request.seed === undefined ? {} : { seed: request.seed }),
    ...(request.stream ? { stream: true, stream_options: { include_usage: true } } : {}),
    ...(request.tokens ? TOKEN_REQUEST_FIELDS : {}),
  });
}

const UsageSchema = z
  .object({
    prompt_tokens: z.number().int().nonnegative(),
    completion_tokens: z.number().int().nonnegative(),
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
    ? { promptTokens: usage.prompt_tokens, completionTokens: usage.completion_tokens }
    : null;
}
