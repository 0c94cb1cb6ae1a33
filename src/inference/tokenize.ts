/**
 * The host's tokenizer: vLLM's `POST /tokenize`, with `messages` (the chat template rendered,
 * then tokenized) or with `prompt` (plain text). vLLM serves it at the server's root, beside
 * `/v1`, so the URL is the base URL without its `/v1`.
 */
import type { ChatMessage } from "../sdk";
import type { InferenceEndpoint } from "./client";
import { toWire } from "./completion";
import { malformed } from "./failures";
import { type CallOutcome, callWithRetries, postJson, type RetryOptions } from "./retries";

/** `http://host:8000/v1` → `http://host:8000`: where vLLM serves `/tokenize`. */
export function hostRoot(endpoint: InferenceEndpoint): string {
  return endpoint.baseUrl.replace(/\/+$/, "").replace(/\/v1$/, "");
}

export type TokenizeInput =
  | { messages: readonly ChatMessage[]; addGenerationPrompt: boolean }
  | { text: string };

function body(model: string, input: TokenizeInput): string {
  if ("text" in input)
    return JSON.stringify({ model, prompt: input.text, add_special_tokens: false });
  return JSON.stringify({
    model,
    messages: input.messages.map(toWire),
    add_generation_prompt: input.addGenerationPrompt,
  });
}

async function tokenizeOnce(
  endpoint: InferenceEndpoint,
  model: string,
  input: TokenizeInput,
  signal: AbortSignal,
): Promise<Int32Array> {
  const response = await postJson(
    `${hostRoot(endpoint)}/tokenize`,
    endpoint.apiKey,
    body(model, input),
    signal,
    `${endpoint.name ?? "inference host"} (/tokenize)`,
  );
  const text = await response.text();
  let tokens: unknown;
  try {
    tokens = (JSON.parse(text) as { tokens?: unknown }).tokens;
  } catch {
    throw malformed(`malformed body from the host's /tokenize: ${text.slice(0, 120)}`);
  }
  if (!Array.isArray(tokens) || !tokens.every((id) => Number.isInteger(id) && id >= 0))
    throw malformed(`the host's /tokenize sent no list of token ids: ${text.slice(0, 120)}`);
  return Int32Array.from(tokens as number[]);
}

/** Tokenizes under a deadline, retried like a generation. */
export function tokenize(
  endpoint: InferenceEndpoint,
  model: string,
  input: TokenizeInput,
  options: RetryOptions,
): Promise<CallOutcome<Int32Array>> {
  return callWithRetries((signal) => tokenizeOnce(endpoint, model, input, signal), options);
}
