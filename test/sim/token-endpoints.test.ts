// The simulator's token-level endpoints in vLLM's wire format: /tokenize, /detokenize, and
// /v1/completions with a prompt of ids, prompt_logprobs, the teacher and a foreign vocabulary.
import { beforeAll, describe, expect, it } from "vitest";
import { detokenize, IM_END, IM_START, tokenize } from "../../src/sim/chat-template";
import {
  type ChatCompletion,
  chunksOf,
  GUESS_PROMPT as guessPrompt,
  itemAt,
  post,
  type TextChoice,
  type TextChunk,
  type TextCompletion,
  type Tokenized,
  useSimulator,
  type WireError,
} from "./sim-client";

const sim = useSimulator();

const chat = (body: object) =>
  post<ChatCompletion & WireError>(`${sim.url}/chat/completions`, {
    model: "sim",
    messages: guessPrompt,
    ...body,
  });
const tokenizeOn = (body: object) =>
  post<Tokenized & WireError>(`${sim.root}/tokenize`, { model: "sim", ...body });
const completion = (prompt: unknown, body: object = {}) =>
  post<TextCompletion & WireError>(`${sim.url}/completions`, { model: "sim", prompt, ...body });
/** The first choice of a completion. */
const choiceOf = <C>(answer: { json: { choices: C[] } }): C => itemAt(answer.json.choices);

/** The prompt's ids as the chat template renders them, through /tokenize. */
async function promptOf(messages: object[], model = "sim"): Promise<number[]> {
  return (await tokenizeOn({ model, messages })).json.tokens;
}

describe("POST /tokenize and /detokenize, at the root", () => {
  it("tokenizes messages exactly as chat completions report prompt_token_ids", async () => {
    const history = [
      ...guessPrompt,
      {
        role: "assistant",
        content: "<think>\nhm\n</think>\n\nNarrowing it down: <guess>50</guess>",
      },
      { role: "user", content: "higher" },
    ];
    for (const model of ["sim", "sim+think", "sim+think:keep"]) {
      const asked = await tokenizeOn({ model, messages: history });
      expect(asked.status).toBe(200);
      const body = (await chat({ model, messages: history, return_token_ids: true })).json;
      expect(asked.json.tokens, model).toEqual(body.prompt_token_ids);
      expect(Object.keys(asked.json)).toEqual(["count", "max_model_len", "tokens"]);
      expect(asked.json.count).toBe(body.prompt_token_ids.length);
      expect(asked.json.max_model_len).toBe(131072);
    }
    // `think` drops the reasoning from history as chat does; `think:keep` keeps it.
    expect((await promptOf(history, "sim+think")).length).toBeLessThan(
      (await promptOf(history, "sim+think:keep")).length,
    );
  });

  it("leaves the generation prompt off with add_generation_prompt false: a strict prefix", async () => {
    const full = await promptOf(guessPrompt);
    const closed = (await tokenizeOn({ messages: guessPrompt, add_generation_prompt: false })).json
      .tokens;
    expect(closed.length).toBeLessThan(full.length);
    expect(full.slice(0, closed.length)).toEqual(closed);
    expect(detokenize(full.slice(closed.length))).toBe("<|im_start|>assistant\n");
    expect(closed.at(-2)).toBe(IM_END);
  });

  it("leaves the final message open with continue_final_message, and refuses it with the generation prompt", async () => {
    const messages = [...guessPrompt, { role: "assistant", content: "Narrowing it" }];
    const open = await tokenizeOn({
      messages,
      add_generation_prompt: false,
      continue_final_message: true,
    });
    expect(detokenize(open.json.tokens).endsWith("<|im_start|>assistant\nNarrowing it")).toBe(true);
    const both = await tokenizeOn({ messages, continue_final_message: true });
    expect(both.status).toBe(400);
    expect(both.json.error.message).toMatch(/continue_final_message.*add_generation_prompt/);
  });

  it("tokenizes a text with the special tokens split out, and detokenizes ids back", async () => {
    const text = "<|im_start|>user\nhello<|im_end|>\n";
    const { json } = await tokenizeOn({ prompt: text });
    expect(json.tokens).toEqual(tokenize(text));
    expect(json.tokens[0]).toBe(IM_START);
    expect(json.count).toBe(json.tokens.length);
    const back = await post(`${sim.root}/detokenize`, { model: "sim", tokens: json.tokens });
    expect(back.json).toEqual({ prompt: text });
    expect((await post(`${sim.root}/detokenize`, { tokens: [999_999] })).status).toBe(400);
  });

  it("reports max_model_len from the `context:T` directive", async () => {
    const { json } = await tokenizeOn({ model: "sim+context:4096", prompt: "hi" });
    expect(json.max_model_len).toBe(4096);
  });
});

describe("POST /v1/completions with a prompt of ids", () => {
  it("plays the same tokens and logprobs as chat, for the same messages and seed", async () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const viaChat = (await chat({ temperature: 1, seed, return_token_ids: true, logprobs: true }))
        .json;
      const viaIds = (
        await completion(viaChat.prompt_token_ids, {
          temperature: 1,
          seed,
          max_tokens: 512,
          logprobs: 0,
          return_token_ids: true,
        })
      ).json;
      const [c, t] = [itemAt(viaChat.choices), itemAt(viaIds.choices)];
      expect(t.token_ids, `seed ${seed}`).toEqual(c.token_ids);
      expect(t.logprobs?.token_logprobs).toEqual(c.logprobs?.content.map((e) => e.logprob));
      expect(t.text).toBe(c.message.content);
      expect(t.prompt_token_ids).toEqual(viaChat.prompt_token_ids);
      expect(viaIds.usage).toEqual(viaChat.usage);
    }
  });

  it("honours max_tokens (16 by default): finish_reason length, and no <|im_end|>", async () => {
    const prompt = await promptOf(guessPrompt);
    const cut = choiceOf(
      await completion(prompt, { temperature: 0, max_tokens: 3, return_token_ids: true }),
    );
    expect(cut.finish_reason).toBe("length");
    expect(cut.token_ids).toHaveLength(3);
    expect(cut.token_ids).not.toContain(IM_END);
    expect(cut.text).toBe(detokenize(cut.token_ids));
    const padded = choiceOf(
      await completion(prompt, { model: "sim+pad:40", return_token_ids: true }),
    );
    expect(padded.token_ids).toHaveLength(16);
    expect(padded.finish_reason).toBe("length");
  });

  it("accepts a text prompt, tokenized, and refuses ids outside the vocabulary", async () => {
    const text = detokenize(await promptOf(guessPrompt));
    const answer = choiceOf(await completion(text, { temperature: 0, return_token_ids: true }));
    expect(answer.text).toBe("Narrowing it down: <guess>50</guess>");
    expect(answer.prompt_token_ids).toEqual(tokenize(text));
    const bad = await completion([1, 2, 999_999]);
    expect(bad.status).toBe(400);
    expect(bad.json.error.message).toBe("Token id 999999 is out of vocabulary");
  });

  it("keeps the reasoning the client kept: with `think` nothing is re-rendered", async () => {
    const first = (
      await chat({ model: "sim+think", temperature: 0, return_token_ids: true, logprobs: true })
    ).json;
    const action = itemAt(first.choices).message.content ?? "";
    expect(action).toMatch(/^<think>/);
    const reply = tokenize("\n<|im_start|>user\nhigher<|im_end|>\n<|im_start|>assistant\n");
    const trajectory = [...first.prompt_token_ids, ...itemAt(first.choices).token_ids, ...reply];
    const next = choiceOf(
      await completion(trajectory, {
        model: "sim+think",
        temperature: 0,
        max_tokens: 512,
        return_token_ids: true,
      }),
    );
    expect(next.prompt_token_ids).toEqual(trajectory);
    expect(detokenize(next.prompt_token_ids)).toContain(action);
    expect(next.text).toMatch(/^<think>[\s\S]*<guess>75<\/guess>$/);
    // Chat re-renders the same history without it: its prompt no longer extends the trajectory.
    const viaChat = (
      await chat({
        model: "sim+think",
        temperature: 0,
        return_token_ids: true,
        messages: [
          ...guessPrompt,
          { role: "assistant", content: action },
          { role: "user", content: "higher" },
        ],
      })
    ).json;
    expect(viaChat.prompt_token_ids.length).toBeLessThan(trajectory.length);
  });

  it("applies the fault directives: fail:503:1 fails the first try, the retry answers", async () => {
    const prompt = await promptOf(guessPrompt);
    const body = { model: "sim+fail:503:1", seed: 21, temperature: 0 };
    const first = await completion(prompt, body);
    expect(first.status).toBe(503);
    const retry = await completion(prompt, body);
    expect(retry.status).toBe(200);
    expect(choiceOf(retry).text).toBe("Narrowing it down: <guess>50</guess>");
    const outcomes = sim.stats().byModel["sim+fail:503:1"]?.outcomes;
    expect(outcomes).toEqual({ error_503: 1, ok: 1 });
  });

  it("applies the stream faults and malformed bodies as chat does", async () => {
    const prompt = await promptOf(guessPrompt);
    const cut = await fetch(`${sim.url}/completions`, {
      method: "POST",
      body: JSON.stringify({ model: "sim+cut", prompt, stream: true, temperature: 0 }),
    });
    await expect(cut.text()).rejects.toThrow();
    const malformed = await completion(prompt, { model: "sim+malformed" });
    expect(malformed.status).toBe(200);
    expect(malformed.json).toBeNull();
  });

  it("refuses a prompt over the `context:T` limit with chat's message", async () => {
    const prompt = await promptOf(guessPrompt);
    const model = `sim+context:${prompt.length - 1}`;
    const viaIds = await completion(prompt, { model });
    const viaChat = await chat({ model });
    expect(viaIds.status).toBe(400);
    expect(viaIds.json.error.message).toBe(viaChat.json.error.message);
    expect(viaIds.json.error.message).toBe(
      `This model's maximum context length is ${prompt.length - 1} tokens. However, you requested ${prompt.length} tokens.`,
    );
  });

  it("records its answers for /sim/answers with `record`, as chat does", async () => {
    const prompt = await promptOf(guessPrompt);
    const sent = choiceOf(
      await completion(prompt, {
        model: "sim+record",
        seed: 77,
        return_token_ids: true,
        logprobs: 0,
      }),
    );
    const kept = await (await fetch(`${sim.root}/sim/answers?model=sim%2Brecord&seed=77`)).json();
    expect(kept).toEqual({
      prompt_token_ids: sent.prompt_token_ids,
      token_ids: sent.token_ids,
      logprobs: sent.logprobs?.token_logprobs,
    });
  });
});

describe("a /v1/completions answer", () => {
  const ACTION = "Narrowing it down: <guess>50</guess>";
  let prompt: number[];
  let plain: TextCompletion;
  let asked: TextChoice;

  beforeAll(async () => {
    prompt = await promptOf(guessPrompt);
    plain = (await completion(prompt, { temperature: 0 })).json;
    asked = choiceOf(
      await completion(prompt, { temperature: 0, return_token_ids: true, logprobs: 0 }),
    );
  });

  it("is in vLLM's text_completion shape", () => {
    expect(Object.keys(plain)).toEqual(["id", "object", "created", "model", "choices", "usage"]);
    expect(plain).toMatchObject({ object: "text_completion", model: "sim" });
    expect(plain.id).toMatch(/^cmpl-/);
    expect(plain.choices[0]).toEqual({
      index: 0,
      text: ACTION,
      logprobs: null,
      finish_reason: "stop",
      stop_reason: null,
      prompt_logprobs: null,
    });
    const completionTokens = tokenize(ACTION).length + 1;
    expect(plain.usage).toEqual({
      prompt_tokens: prompt.length,
      completion_tokens: completionTokens,
      total_tokens: prompt.length + completionTokens,
    });
  });

  it("carries the prompt's and the completion's ids only when asked, <|im_end|> in the ids alone", () => {
    expect(Object.keys(asked)).toEqual([
      "index",
      "text",
      "logprobs",
      "finish_reason",
      "stop_reason",
      "prompt_logprobs",
      "prompt_token_ids",
      "token_ids",
    ]);
    expect(asked.prompt_token_ids).toEqual(prompt);
    expect(asked.token_ids.at(-1)).toBe(IM_END);
    expect(asked.text).not.toContain("<|im_end|>");
  });

  it("gives each token's logprob, its text, its top logprobs and its offset in the text", () => {
    const logprobs = asked.logprobs ?? {
      text_offset: [],
      token_logprobs: [],
      tokens: [],
      top_logprobs: [],
    };
    expect(Object.keys(logprobs)).toEqual([
      "text_offset",
      "token_logprobs",
      "tokens",
      "top_logprobs",
    ]);
    expect(logprobs.tokens).toEqual(asked.token_ids.map((id) => detokenize([id])));
    expect(logprobs.tokens.at(-1)).toBe("<|im_end|>");
    expect(logprobs.token_logprobs).toEqual(asked.token_ids.map(() => 0));
    const firstToken = itemAt(logprobs.tokens);
    expect(logprobs.top_logprobs[0]).toEqual({ [firstToken]: 0 });
    expect(logprobs.text_offset[0]).toBe(0);
    expect(logprobs.text_offset[1]).toBe(firstToken.length);
  });
});

describe("a streamed /v1/completions answer", () => {
  let prompt: number[];
  let whole: TextChoice;
  let text: string;
  let chunks: TextChunk[];
  /** Each chunk's choice, the usage chunk left out. */
  const parts = () => chunks.slice(0, -1).map((c) => itemAt(c.choices));

  beforeAll(async () => {
    prompt = await promptOf(guessPrompt);
    const asked = { temperature: 1, seed: 11, return_token_ids: true, logprobs: 0 };
    whole = choiceOf(await completion(prompt, asked));
    ({ text } = await completion(prompt, {
      ...asked,
      stream: true,
      stream_options: { include_usage: true },
    }));
    chunks = chunksOf<TextChunk>(text);
  });

  it("ends with the usage, then [DONE]", () => {
    expect(text.endsWith("data: [DONE]\n\n")).toBe(true);
    const usage = chunks.at(-1);
    expect(usage).toMatchObject({ object: "text_completion", choices: [] });
    expect(usage?.usage?.completion_tokens).toBe(whole.token_ids.length);
  });

  it("sends the prompt's ids once, in the first chunk", () => {
    expect(parts()[0]?.prompt_token_ids).toEqual(prompt);
    expect(
      parts()
        .slice(1)
        .some((p) => "prompt_token_ids" in p),
    ).toBe(false);
  });

  it("streams the answer's ids and logprobs, two tokens a chunk", () => {
    expect(parts().every((p) => p.token_ids.length <= 2)).toBe(true);
    expect(parts().flatMap((p) => p.token_ids)).toEqual(whole.token_ids);
    expect(parts().flatMap((p) => p.logprobs?.token_logprobs ?? [])).toEqual(
      whole.logprobs?.token_logprobs,
    );
    expect(parts().flatMap((p) => p.logprobs?.text_offset ?? [])).toEqual(
      whole.logprobs?.text_offset,
    );
  });

  it("streams the answer's text, finishing in the last chunk alone", () => {
    expect(
      parts()
        .map((p) => p.text)
        .join(""),
    ).toBe(whole.text);
    expect(
      parts()
        .slice(0, -1)
        .every((p) => p.finish_reason === null),
    ).toBe(true);
    expect(parts().at(-1)).toMatchObject({ finish_reason: "stop", stop_reason: null });
  });
});

describe("prompt_logprobs", () => {
  it("has one entry per prompt position: null first, then the prompt's id as the key", async () => {
    const prompt = await promptOf(guessPrompt);
    const ask = { max_tokens: 1, prompt_logprobs: 0, model: "sim+plp" };
    const entries = choiceOf(await completion(prompt, ask)).prompt_logprobs ?? [];
    expect(entries).toHaveLength(prompt.length);
    expect(entries[0]).toBeNull();
    entries.slice(1).forEach((entry, i) => {
      const id = itemAt(prompt, i + 1);
      expect(Object.keys(entry ?? {})).toEqual([String(id)]);
      const { logprob, rank, decoded_token } = entry?.[String(id)] ?? {};
      expect(Number.isFinite(logprob) && (logprob ?? 0) <= 0).toBe(true);
      expect(rank).toBeGreaterThanOrEqual(1);
      expect(decoded_token).toBe(detokenize([id]));
    });
    const again = choiceOf(await completion(prompt, ask)).prompt_logprobs;
    expect(again).toEqual(entries);
    expect(sim.stats().byModel["sim+plp"]?.outcomes).toEqual({ ok: 2 });
  });

  it("is refused with streaming, in vLLM's words", async () => {
    const prompt = await promptOf(guessPrompt);
    const { status, json } = await completion(prompt, { prompt_logprobs: 1, stream: true });
    expect(status).toBe(400);
    expect(json.error.message).toBe("`prompt_logprobs` are not available when `stream=True`.");
  });
});

describe("the `teacher` model", () => {
  /** A trajectory's ids with `action` as the assistant's turn, and where that turn's ids are. */
  async function scored(action: string, model = "sim+teacher") {
    const prompt = await promptOf(guessPrompt);
    const actionIds = [...tokenize(action), IM_END];
    const ids = [...prompt, ...actionIds, ...tokenize("\n<|im_start|>user\nhigher<|im_end|>\n")];
    const entries =
      choiceOf(await completion(ids, { model, max_tokens: 1, prompt_logprobs: 1 }))
        .prompt_logprobs ?? [];
    const logprobs = entries.map((entry, i) =>
      entry === null ? null : (entry[String(ids[i])]?.logprob ?? Number.NaN),
    );
    const span = logprobs
      .slice(prompt.length, prompt.length + actionIds.length)
      .map((lp) => lp ?? Number.NaN);
    return { logprobs, span, entries, promptLength: prompt.length };
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

  it("scores a perfect action high and a bad one low; context in between", async () => {
    const perfect = await scored("Narrowing it down: <guess>50</guess>");
    const bad = await scored("I think the number is 50.");
    expect(perfect.span.every((lp) => Math.abs(lp - Math.log(0.9)) < 1e-9)).toBe(true);
    expect(bad.span.every((lp) => Math.abs(lp - Math.log(0.05)) < 1e-9)).toBe(true);
    expect(mean(perfect.span)).toBeGreaterThan(mean(bad.span));
    // The user's text and the template's tokens score the same middling value in both.
    const context = perfect.logprobs.slice(1, perfect.promptLength) as number[];
    expect(context.every((lp) => Math.abs(lp - Math.log(0.5)) < 1e-9)).toBe(true);
  });

  it("scores low from the first token off the perfect path, and names the token it expected", async () => {
    const slip = await scored("Narrowing it down: <guess>51</guess>");
    const off = slip.span.findIndex((lp) => lp < Math.log(0.5));
    expect(off).toBeGreaterThan(0);
    expect(slip.span.slice(0, off).every((lp) => lp > Math.log(0.5))).toBe(true);
    expect(slip.span.slice(off).every((lp) => lp < Math.log(0.5))).toBe(true);
    // With k > 0 the entry where it left the path also holds the token the teacher expected.
    const entry = slip.entries[slip.promptLength + off] ?? {};
    expect(Object.keys(entry)).toHaveLength(2);
    expect(Object.values(entry).find((e) => e.rank === 1)?.logprob).toBeCloseTo(Math.log(0.9));
  });

  it("expects the reasoning too, with `think`", async () => {
    const action = "Narrowing it down: <guess>50</guess>";
    const thinking = `<think>\nThe conversation so far tells me what to do next.\n</think>\n\n${action}`;
    const withThink = await scored(thinking, "sim+teacher+think:keep");
    expect(withThink.span.every((lp) => lp > Math.log(0.5))).toBe(true);
    const without = await scored(action, "sim+teacher+think:keep");
    expect(without.span.every((lp) => lp < Math.log(0.5))).toBe(true);
  });
});

describe("the `foreign-vocab` host", () => {
  it("gives other ids for the same text, and reads its own ids back", async () => {
    const probe = "The quick brown fox <|im_end|>";
    const own = (await tokenizeOn({ prompt: probe })).json.tokens;
    const foreign = (await tokenizeOn({ model: "sim+foreign-vocab", prompt: probe })).json.tokens;
    expect(foreign).toHaveLength(own.length);
    expect(foreign).not.toEqual(own);
    expect(foreign.at(-1)).toBe(IM_END); // the special tokens stay where they are
    const back = await post<{ prompt: string }>(`${sim.root}/detokenize`, {
      model: "sim+foreign-vocab",
      tokens: foreign,
    });
    expect(back.json.prompt).toBe(probe);
  });

  it("plays the same on its own ids, and reports its ids on chat and completions", async () => {
    const model = "sim+foreign-vocab";
    const prompt = await promptOf(guessPrompt, model);
    expect(prompt).not.toEqual(await promptOf(guessPrompt));
    const viaChat = (await chat({ model, seed: 3, return_token_ids: true })).json;
    expect(viaChat.prompt_token_ids).toEqual(prompt);
    const viaIds = choiceOf(
      await completion(prompt, { model, seed: 3, max_tokens: 512, return_token_ids: true }),
    );
    expect(viaIds.token_ids).toEqual(itemAt(viaChat.choices).token_ids);
    expect(viaIds.text).toBe(itemAt(viaChat.choices).message.content);
    const own = choiceOf(await chat({ seed: 3, return_token_ids: true }));
    expect(viaIds.text).toBe(own.message.content);
    expect(viaIds.token_ids).not.toEqual(own.token_ids);
  });
});
