/**
 * The simulator tests' side of its HTTP API: one simulator a file, the calls they make, and the
 * answers typed as vLLM's and OpenAI's wire formats describe them. Written from those formats,
 * not taken from the simulator's own builders: the formats are what these tests hold it to.
 */
import { afterAll, beforeAll } from "vitest";
import { type Simulator, startSimulator } from "../../src/sim/server";

/** guess-number's opening, as an environment sends it. */
export const GUESS_PROMPT = [
  {
    role: "user",
    content: "Find the number.\n\nReply with one guess per turn as <guess>N</guess>.",
  },
];

/** Starts a simulator before the file's tests and closes it after them. */
export function useSimulator() {
  let sim: Simulator | null = null;
  beforeAll(async () => {
    sim = await startSimulator();
  });
  afterAll(() => sim?.close());
  const started = (): Simulator => {
    if (sim === null) throw new Error("the simulator starts in beforeAll");
    return sim;
  };
  return {
    /** Its OpenAI-compatible base URL, ending in /v1. */
    get url() {
      return started().url;
    },
    /** Where vLLM's own routes are: /tokenize, /detokenize, and the simulator's /sim/... */
    get root() {
      return started().url.replace(/\/v1$/, "");
    },
    stats: () => started().stats(),
  };
}

/** One call's answer: its status, headers and text, and the text as JSON, read as `T`. */
export interface Reply<T> {
  status: number;
  headers: Headers;
  text: string;
  /** null when the body is not JSON (a `malformed` fault). */
  json: T;
}

export async function post<T>(url: string, body: unknown): Promise<Reply<T>> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  let json: unknown = null;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: response.status, headers: response.headers, text, json: json as T };
}

/** The data chunks of a server-sent stream, parsed as `T`. */
export function chunksOf<T>(text: string): T[] {
  return text
    .split("\n\n")
    .filter((l) => l.startsWith("data: {"))
    .map((l) => JSON.parse(l.slice(6)) as T);
}

/** The item at `index` of a list the test expects to hold it; throws if it is not there. */
export function itemAt<T>(items: readonly T[], index = 0): T {
  const item = items[index];
  if (item === undefined) throw new Error(`no item ${index}: the list has ${items.length}`);
  return item;
}

/** An error answer, OpenAI's shape. */
export interface WireError {
  error: { message: string; type: string };
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export interface WireToolCall {
  id: string;
  type: string;
  function: { name: string; arguments: string };
}

/** Chat logprobs: one entry per token. */
export interface ChatLogprobs {
  content: { token: string; logprob: number; bytes: number[]; top_logprobs: unknown[] }[];
}

export interface ChatChoice {
  index: number;
  message: { role: string; content: string | null; tool_calls?: WireToolCall[] };
  logprobs: ChatLogprobs | null;
  finish_reason: string;
  stop_reason: string | null;
  /** vLLM's, when asked with `return_token_ids`. */
  token_ids: number[];
  /** SGLang's place for the prompt's ids. */
  prompt_token_ids?: number[];
}

export interface ChatCompletion {
  id: string;
  object: string;
  created: number;
  model: string;
  choices: ChatChoice[];
  usage: Usage;
  /** vLLM's, when asked with `return_token_ids`. */
  prompt_token_ids: number[];
}

/** A piece of a streamed tool call: id and name first, then its arguments in pieces. */
export interface ToolCallDelta {
  index: number;
  id?: string;
  type?: string;
  function?: { name?: string; arguments?: string };
}

export interface ChatChunk {
  object: string;
  choices: {
    index: number;
    delta: { role?: string; content?: string; tool_calls?: ToolCallDelta[] };
    logprobs?: ChatLogprobs | null;
    finish_reason: string | null;
    stop_reason?: string | null;
    token_ids?: number[];
  }[];
  prompt_token_ids?: number[];
  usage?: Usage;
}

/** `/v1/completions` logprobs: parallel lists, one entry per token. */
export interface CompletionLogprobs {
  text_offset: number[];
  token_logprobs: number[];
  tokens: string[];
  top_logprobs: Record<string, number>[];
}

/** vLLM's `prompt_logprobs`: null for the first position, then the logprobs by token id. */
export type PromptLogprobs = (Record<
  string,
  { logprob: number; rank: number; decoded_token: string }
> | null)[];

export interface TextChoice {
  index: number;
  text: string;
  logprobs: CompletionLogprobs | null;
  finish_reason: string | null;
  stop_reason: string | null;
  prompt_logprobs: PromptLogprobs | null;
  prompt_token_ids: number[];
  token_ids: number[];
}

export interface TextCompletion {
  id: string;
  object: string;
  created: number;
  model: string;
  choices: TextChoice[];
  usage: Usage;
}

export interface TextChunk {
  object: string;
  choices: TextChoice[];
  usage?: Usage;
}

/** vLLM's `/tokenize` answer. */
export interface Tokenized {
  count: number;
  max_model_len: number;
  tokens: number[];
}
