// Stop strings as vLLM applies them, on chat and /v1/completions alike: the text ends before the
// stop string, the ids keep the tokens that spelled it (and no <|im_end|> follows), stop_reason
// names it, and a smaller token budget cuts first.
import { describe, expect, it } from "vitest";
import { detokenize, IM_END, tokenize } from "../../src/sim/chat-template";
import {
  type ChatChunk,
  type ChatCompletion,
  chunksOf,
  GUESS_PROMPT as guessPrompt,
  itemAt,
  post,
  type TextChunk,
  type TextCompletion,
  useSimulator,
} from "./sim-client";

const sim = useSimulator();

/** What the guess player says to `guessPrompt` at temperature 0. */
const ACTION = "Narrowing it down: <guess>50</guess>";

const ask = <T>(path: string, body: object) =>
  post<T>(`${sim.url}${path}`, { model: "sim", ...body });

const chat = async (body: object) =>
  (await ask<ChatCompletion>("/chat/completions", { messages: guessPrompt, ...body })).json;

/** The prompt's ids, as chat reports them: what /v1/completions is sent for the same turn. */
const promptIds = async () => (await chat({ return_token_ids: true })).prompt_token_ids;

const completion = async (prompt: number[], body: object) =>
  (await ask<TextCompletion>("/completions", { prompt, max_tokens: 512, ...body })).json;

/** What a client reads of one choice, from either route, streamed or not. */
interface Read {
  text: string;
  ids: number[];
  logprobs: number[];
  finish: string | null;
  stopReason: string | null;
  completionTokens: number;
}

async function viaChat(body: object, stream = false): Promise<Read> {
  const asked = { return_token_ids: true, logprobs: true, ...body };
  if (!stream) {
    const json = await chat(asked);
    const c = itemAt(json.choices);
    return {
      text: c.message.content ?? "",
      ids: c.token_ids,
      logprobs: c.logprobs?.content.map((e) => e.logprob) ?? [],
      finish: c.finish_reason,
      stopReason: c.stop_reason,
      completionTokens: json.usage.completion_tokens,
    };
  }
  const { text } = await ask("/chat/completions", {
    messages: guessPrompt,
    ...asked,
    stream: true,
    stream_options: { include_usage: true },
  });
  const chunks = chunksOf<ChatChunk>(text);
  const parts = chunks.flatMap((c) => c.choices);
  const last = parts.at(-1);
  return {
    text: parts.map((p) => p.delta?.content ?? "").join(""),
    ids: parts.flatMap((p) => p.token_ids ?? []),
    logprobs: parts.flatMap((p) => (p.logprobs?.content ?? []).map((e) => e.logprob)),
    finish: last?.finish_reason ?? null,
    stopReason: last?.stop_reason ?? null,
    completionTokens: chunks.at(-1)?.usage?.completion_tokens ?? Number.NaN,
  };
}

async function viaCompletions(prompt: number[], body: object, stream = false): Promise<Read> {
  const asked = { return_token_ids: true, logprobs: 0, ...body };
  if (!stream) {
    const json = await completion(prompt, asked);
    const c = itemAt(json.choices);
    return {
      text: c.text,
      ids: c.token_ids,
      logprobs: c.logprobs?.token_logprobs ?? [],
      finish: c.finish_reason,
      stopReason: c.stop_reason,
      completionTokens: json.usage.completion_tokens,
    };
  }
  const { text } = await ask("/completions", {
    prompt,
    max_tokens: 512,
    ...asked,
    stream: true,
    stream_options: { include_usage: true },
  });
  const chunks = chunksOf<TextChunk>(text);
  const parts = chunks.flatMap((c) => c.choices);
  const last = parts.at(-1);
  return {
    text: parts.map((p) => p.text).join(""),
    ids: parts.flatMap((p) => p.token_ids),
    logprobs: parts.flatMap((p) => p.logprobs?.token_logprobs ?? []),
    finish: last?.finish_reason ?? null,
    stopReason: last?.stop_reason ?? null,
    completionTokens: chunks.at(-1)?.usage?.completion_tokens ?? Number.NaN,
  };
}

/** All four ways of asking, for the same turn. */
async function everyWay(body: object): Promise<[string, Read][]> {
  const prompt = await promptIds();
  return [
    ["chat", await viaChat(body)],
    ["chat, streamed", await viaChat(body, true)],
    ["completions", await viaCompletions(prompt, body)],
    ["completions, streamed", await viaCompletions(prompt, body, true)],
  ];
}

describe("stop strings, as vLLM applies them", () => {
  it("end the text before the stop string, keep its tokens in the ids, and add no <|im_end|>", async () => {
    for (const [way, read] of await everyWay({ temperature: 0, stop: ["<guess>"] })) {
      expect(read, way).toEqual({
        text: "Narrowing it down: ",
        ids: tokenize("Narrowing it down: <guess>"),
        logprobs: tokenize("Narrowing it down: <guess>").map(() => 0),
        finish: "stop",
        stopReason: "<guess>",
        completionTokens: tokenize("Narrowing it down: <guess>").length,
      });
      expect(read.ids).not.toContain(IM_END);
      expect(detokenize(read.ids)).toBe(`${read.text}<guess>`);
    }
  });

  it("are played the same by chat and /v1/completions, streamed or not, at any temperature", async () => {
    for (const seed of [1, 2, 3, 4]) {
      const reads = await everyWay({ temperature: 1, seed, stop: "</guess>" });
      const [, first] = reads[0] as [string, Read];
      expect(first.stopReason, `seed ${seed}`).toBe("</guess>");
      expect(detokenize(first.ids).endsWith("</guess>")).toBe(true);
      expect(first.logprobs).toHaveLength(first.ids.length);
      expect(first.completionTokens).toBe(first.ids.length);
      for (const [way, read] of reads) expect(read, `${way}, seed ${seed}`).toEqual(first);
    }
  });

  it("stop at the one completed first, whatever their order in the list", async () => {
    for (const [way, read] of await everyWay({ temperature: 0, stop: ["</guess>", ": "] })) {
      expect(read.text, way).toBe("Narrowing it down");
      expect(read.ids).toEqual(tokenize("Narrowing it down: "));
      expect(read.stopReason).toBe(": ");
    }
  });

  it("leave a turn that never says them as it was: its text, then <|im_end|>", async () => {
    for (const [way, read] of await everyWay({ temperature: 0, stop: ["<answer>"] })) {
      expect(read.text, way).toBe(ACTION);
      expect(read.ids).toEqual([...tokenize(ACTION), IM_END]);
      expect(read.finish).toBe("stop");
      expect(read.stopReason).toBeNull();
    }
  });

  it("come after the token budget: a budget short of the stop string's last token cuts first", async () => {
    const ids = tokenize("Narrowing it down: <guess>");
    const stop = { temperature: 0, stop: ["<guess>"] };
    const short = { ...stop, max_tokens: ids.length - 1, max_completion_tokens: ids.length - 1 };
    for (const [way, read] of await everyWay(short)) {
      expect(read.finish, way).toBe("length");
      expect(read.stopReason).toBeNull();
      expect(read.ids).toEqual(ids.slice(0, -1));
      expect(read.text).toBe(detokenize(ids.slice(0, -1)));
    }
    const enough = { ...stop, max_tokens: ids.length, max_completion_tokens: ids.length };
    for (const [way, read] of await everyWay(enough)) {
      expect(read, way).toMatchObject({ finish: "stop", stopReason: "<guess>", ids });
    }
  });

  it("never stream a piece of the stop string's text, though its tokens come", async () => {
    const { text } = await ask("/chat/completions", {
      messages: guessPrompt,
      temperature: 0,
      stop: ["</guess>"],
      stream: true,
      return_token_ids: true,
    });
    const parts = chunksOf<ChatChunk>(text).map((c) => itemAt(c.choices));
    expect(parts.map((p) => p.delta?.content ?? "").join("")).toBe("Narrowing it down: <guess>50");
    // The action ends with the stop string: the ids are all of it, and nothing after.
    expect(parts.flatMap((p) => p.token_ids ?? [])).toEqual(tokenize(ACTION));
    expect(parts.at(-1)).toMatchObject({ finish_reason: "stop", stop_reason: "</guess>" });
  });
});
