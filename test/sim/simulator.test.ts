// The inference simulator, as an OpenAI-compatible HTTP server (Node).

import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { countTokens } from "gpt-tokenizer";
import { describe, expect, it } from "vitest";
import { ExactAnswer } from "../../src/environments/exact-answer";
import type { TaskExample } from "../../src/sdk";
import { IM_END, renderPrompt, tokenize } from "../../src/sim/chat-template";
import { startSimulator } from "../../src/sim/server";
import { GUESS_PROMPT as guessPrompt, useSimulator } from "./sim-client";

const sim = useSimulator();

async function complete(body: Record<string, unknown>, url = sim.url) {
  const response = await fetch(`${url}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "sim", messages: guessPrompt, ...body }),
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

/** Content, finish reason and usage, read from a stream's chunks. */
function readStream(text: string) {
  const chunks = text
    .split("\n\n")
    .filter((l) => l.startsWith("data: ") && l !== "data: [DONE]")
    .map((l) => JSON.parse(l.slice(6)));
  return {
    content: chunks.map((c) => c.choices[0]?.delta?.content ?? "").join(""),
    finish: chunks.map((c) => c.choices[0]?.finish_reason).find(Boolean),
    usage: chunks.find((c) => c.usage)?.usage,
    done: text.trimEnd().endsWith("data: [DONE]"),
  };
}

describe("the inference simulator", () => {
  it("answers chat completions with usage counted by a real tokenizer", async () => {
    const { status, text } = await complete({ temperature: 0 });
    expect(status).toBe(200);
    const body = JSON.parse(text);
    const content = body.choices[0].message.content;
    expect(content).toBe("Narrowing it down: <guess>50</guess>");
    // The end-of-turn token counts, as hosts count it; the prompt is the ChatML rendering's.
    expect(body.usage.completion_tokens).toBe(countTokens(content) + 1);
    expect(body.usage.prompt_tokens).toBe(tokenize(renderPrompt(guessPrompt, "chatml")).length);
    expect(body.usage.total_tokens).toBe(body.usage.prompt_tokens + body.usage.completion_tokens);
  });

  it("says, for a task it has no player for, which it plays and what to do", async () => {
    const { text } = await complete({
      temperature: 0,
      messages: [{ role: "user", content: "Write a haiku about the sea." }],
    });
    const content = JSON.parse(text).choices[0].message.content;
    expect(content).toMatch(
      /no player for this task: I play guess-number, tool-agent, exact-answer/,
    );
    expect(content).toMatch(/src\/sim\/policies\.ts/);
    expect(content).toMatch(/--inference-url/);
  });

  it("streams the same completion as server-sent events, with usage when asked", async () => {
    const { headers, text } = await complete({
      temperature: 0,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(headers.get("content-type")).toBe("text/event-stream");
    const stream = readStream(text);
    expect(stream).toMatchObject({
      content: "Narrowing it down: <guess>50</guess>",
      finish: "stop",
      done: true,
    });
    expect(stream.usage.completion_tokens).toBe(countTokens(stream.content) + 1);
  });

  it("lists its model", async () => {
    const models = (await (await fetch(`${sim.url}/models`)).json()) as { data: { id: string }[] };
    expect(models.data[0]?.id).toBe("sim");
  });

  it("plays only the models sim and judge, and refuses any other name as vLLM does, saying what it plays", async () => {
    const refused = await complete({ model: "Qwen/Qwen3-8B" });
    expect(refused.status).toBe(404);
    const { error } = JSON.parse(refused.text);
    expect(error.type).toBe("NotFoundError");
    expect(error.message).toMatch(/^The model `Qwen\/Qwen3-8B` does not exist\./);
    expect(error.message).toMatch(/plays `sim` \(the CLI's default --model\) and a judge, `judge`/);
    expect(error.message).toMatch(/--inference-url/);
    for (const path of ["/completions"]) {
      const answer = await fetch(`${sim.url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "gpt-4o", prompt: [1, 2, 3], max_tokens: 1 }),
      });
      expect(answer.status).toBe(404);
    }
    const tokenize = await fetch(`${sim.url.replace(/\/v1$/, "")}/tokenize`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-4o", prompt: "hi" }),
    });
    expect(tokenize.status).toBe(404);
    // Directives after the name are still the simulator's.
    expect((await complete({ model: "sim+latency:1", temperature: 0 })).status).toBe(200);
  });

  it("honours max_tokens and max_completion_tokens with finish_reason length", async () => {
    for (const limit of [{ max_tokens: 3 }, { max_completion_tokens: 3 }]) {
      const body = JSON.parse((await complete({ temperature: 0, ...limit })).text);
      expect(body.choices[0].finish_reason).toBe("length");
      expect(body.usage.completion_tokens).toBe(3);
    }
  });

  it("returns n choices", async () => {
    const body = JSON.parse((await complete({ n: 3, seed: 5 })).text);
    expect(body.choices.map((c: { index: number }) => c.index)).toEqual([0, 1, 2]);
  });

  it("is deterministic with a seed, and varies with temperature across seeds", async () => {
    const play = async (seed: number) =>
      JSON.parse((await complete({ temperature: 1, seed })).text).choices[0].message.content;
    expect(await play(7)).toBe(await play(7));
    const seen = new Set(await Promise.all(Array.from({ length: 12 }, (_, i) => play(i))));
    expect(seen.size).toBeGreaterThan(3);
  });

  it("plays tool-agent with tool calls and exact-answer with arithmetic", async () => {
    const tool = JSON.parse(
      (
        await complete({
          temperature: 0,
          messages: [
            { role: "system", content: "Call tools with <tool_call>{...}</tool_call>." },
            { role: "user", content: "Ana here (ana@example.com, ZIP 94107). Refund my lamp." },
          ],
        })
      ).text,
    );
    expect(tool.choices[0].message.content).toBe(
      '<tool_call>{"name":"verify_identity","arguments":{"email":"ana@example.com","zip":"94107"}}</tool_call>',
    );
    const math = JSON.parse(
      (
        await complete({
          temperature: 0,
          messages: [{ role: "user", content: "What is (3 + 4) * 5? Answer in <answer>" }],
        })
      ).text,
    );
    expect(math.choices[0].message.content).toBe("The result is <answer>35</answer>");
  });

  it("works out every arithmetic row of the exact-answer dataset at temperature 0", async () => {
    const env = new ExactAnswer();
    const rows = readFileSync(
      resolve(import.meta.dirname, "../../datasets/exact-answer.jsonl"),
      "utf8",
    )
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as TaskExample)
      .filter((row) => /^\d+(\.\d+)?$/.test(String(row.output)) && row.input.startsWith("What is"));
    expect(rows.length).toBeGreaterThanOrEqual(10);
    for (const row of rows) {
      const answer = JSON.parse(
        (await complete({ temperature: 0, messages: env.buildPromptMessages(row) })).text,
      ).choices[0].message.content;
      expect(env.scoreResponse(row, answer), `${row.id}: ${answer}`).toMatchObject({ score: 1 });
    }
  });

  it("models latency: time to first token, per prompt token and per generated token", async () => {
    const slow = await startSimulator({
      latency: { ttftMs: 150, msPerToken: 20, msPerPromptToken: 1 },
    });
    try {
      const started = Date.now();
      const { text } = await complete({ temperature: 0, stream: true }, slow.url);
      const elapsed = Date.now() - started;
      const tokens = countTokens(readStream(text).content);
      expect(elapsed).toBeGreaterThanOrEqual(150 + 20 * tokens);
    } finally {
      await slow.close();
    }
  });

  it("injects faults at the rates its flags set", async () => {
    const faulty = await startSimulator({ faults: { errorRate: 1, errorStatuses: [429] } });
    try {
      expect((await complete({}, faulty.url)).status).toBe(429);
    } finally {
      await faulty.close();
    }
    const malformed = await startSimulator({ faults: { malformedRate: 1 } });
    try {
      const { status, text } = await complete({}, malformed.url);
      expect(status).toBe(200);
      expect(() => JSON.parse(text)).toThrow();
    } finally {
      await malformed.close();
    }
    const cut = await startSimulator({ faults: { cutRate: 1 } });
    try {
      const response = await fetch(`${cut.url}/chat/completions`, {
        method: "POST",
        body: JSON.stringify({ model: "sim", messages: guessPrompt, stream: true, temperature: 0 }),
      });
      await expect(response.text()).rejects.toThrow();
    } finally {
      await cut.close();
    }
    const hangs = await startSimulator({ faults: { hangRate: 1 } });
    try {
      const aborted = fetch(`${hangs.url}/chat/completions`, {
        method: "POST",
        body: JSON.stringify({ model: "sim", messages: guessPrompt }),
        signal: AbortSignal.timeout(300),
      });
      await expect(aborted).rejects.toThrow(/abort|timeout/i);
    } finally {
      await hangs.close();
    }
    expect(sim.stats().outcomes.ok).toBeGreaterThan(0);
  });

  it("logs when it wrote each token of a stream its client closed early, by X-Session-ID", async () => {
    const slow = await startSimulator({ longTokens: 400, latency: { msPerToken: 5 } });
    try {
      const closed = new AbortController();
      const response = await fetch(`${slow.url}/chat/completions`, {
        method: "POST",
        headers: { "x-session-id": "g1-e0" },
        body: JSON.stringify({ model: "sim", messages: guessPrompt, stream: true, temperature: 0 }),
        signal: closed.signal,
      });
      const reader = (response.body as ReadableStream<Uint8Array>).getReader();
      let read = 0;
      while (read < 20) read += ((await reader.read()).value ?? []).length > 0 ? 1 : 0;
      const closedAt = Date.now();
      closed.abort();
      await expect.poll(() => slow.abandonedStreams("g1-e0").length).toBe(1);
      const [writtenAt = []] = slow.abandonedStreams("g1-e0");
      // Some tokens, far short of the 400, in the order written, none after the close was seen.
      expect(writtenAt.length).toBeGreaterThan(0);
      expect(writtenAt.length).toBeLessThan(400);
      expect(writtenAt).toEqual([...writtenAt].sort((a, b) => a - b));
      expect(slow.stats().abandonedTokens).toBe(writtenAt.length);
      expect(writtenAt.filter((t) => t < closedAt).length).toBeGreaterThan(0);
      expect(slow.abandonedStreams("another-episode")).toEqual([]);
    } finally {
      await slow.close();
    }
  });

  it("answers a bad request with 400", async () => {
    const response = await fetch(`${sim.url}/chat/completions`, { method: "POST", body: "{}" });
    expect(response.status).toBe(400);
  });
});

describe("the simulator's token fields, in vLLM's wire format", () => {
  const asked = { return_token_ids: true, logprobs: true, top_logprobs: 0 };

  it("answers the prompt's ids, the completion's ids ending in <|im_end|>, and a logprob each", async () => {
    const body = JSON.parse((await complete({ temperature: 1, seed: 7, ...asked })).text);
    const [choice] = body.choices;
    expect(body.prompt_token_ids).toEqual(tokenize(renderPrompt(guessPrompt, "chatml")));
    expect(choice.token_ids.at(-1)).toBe(IM_END);
    expect(choice.token_ids.slice(0, -1)).toEqual(tokenize(choice.message.content));
    expect(choice.logprobs.content).toHaveLength(choice.token_ids.length);
    expect(choice.logprobs.content[0]).toMatchObject({ top_logprobs: [] });
    const logprobs = choice.logprobs.content.map((e: { logprob: number }) => e.logprob);
    expect(logprobs.every((lp: number) => lp <= 0 && lp > -3)).toBe(true);
    expect(logprobs.some((lp: number) => lp < 0)).toBe(true);
    expect(body.usage.completion_tokens).toBe(choice.token_ids.length);
  });

  it("is certain at temperature 0: every logprob is 0", async () => {
    const body = JSON.parse((await complete({ temperature: 0, ...asked })).text);
    expect(
      body.choices[0].logprobs.content.every((e: { logprob: number }) => e.logprob === 0),
    ).toBe(true);
  });

  it("streams the same ids and logprobs: the prompt's in the first chunk, the rest per chunk", async () => {
    const whole = JSON.parse((await complete({ temperature: 1, seed: 9, ...asked })).text);
    const { text } = await complete({ temperature: 1, seed: 9, stream: true, ...asked });
    const chunks = text
      .split("\n\n")
      .filter((l) => l.startsWith("data: {"))
      .map((l) => JSON.parse(l.slice(6)));
    expect(chunks[0].prompt_token_ids).toEqual(whole.prompt_token_ids);
    expect(chunks.slice(1).some((c) => "prompt_token_ids" in c)).toBe(false);
    const ids = chunks.flatMap((c) => c.choices[0]?.token_ids ?? []);
    const logprobs = chunks.flatMap((c) =>
      (c.choices[0]?.logprobs?.content ?? []).map((e: { logprob: number }) => e.logprob),
    );
    expect(ids).toEqual(whole.choices[0].token_ids);
    expect(logprobs).toEqual(
      whole.choices[0].logprobs.content.map((e: { logprob: number }) => e.logprob),
    );
    expect(chunks.at(-1).choices[0]).toMatchObject({ finish_reason: "stop", token_ids: [IM_END] });
  });

  it("plays an old host with `notokens`: logprobs, but no token ids", async () => {
    const body = JSON.parse(
      (await complete({ model: "sim+notokens", temperature: 0, ...asked })).text,
    );
    expect(body.prompt_token_ids).toBeUndefined();
    expect(body.choices[0].token_ids).toBeUndefined();
    expect(body.choices[0].logprobs.content.length).toBeGreaterThan(0);
  });

  it("plays SGLang with `sglang`: ids on the choice, and no token ids while streaming", async () => {
    const body = JSON.parse(
      (await complete({ model: "sim+sglang", temperature: 0, ...asked })).text,
    );
    expect(body.prompt_token_ids).toBeUndefined();
    expect(body.choices[0].prompt_token_ids).toEqual(tokenize(renderPrompt(guessPrompt, "chatml")));
    expect(body.choices[0].token_ids.at(-1)).toBe(IM_END);
    const streamed = await complete({ model: "sim+sglang", stream: true, ...asked });
    expect(streamed.status).toBe(400);
    expect(streamed.text).toMatch(/return_token_ids is not supported with streaming/);
  });

  it("thinks aloud with `think`, and its template drops that reasoning from earlier turns", async () => {
    const first = JSON.parse(
      (await complete({ model: "sim+think", temperature: 0, ...asked })).text,
    );
    const action = first.choices[0].message.content;
    expect(action).toMatch(/^<think>\n[\s\S]*\n<\/think>\n\n/);
    const history = [
      ...guessPrompt,
      { role: "assistant", content: action },
      { role: "user", content: "higher" },
    ];
    const next = JSON.parse(
      (await complete({ model: "sim+think", temperature: 0, messages: history, ...asked })).text,
    );
    const left = [...first.prompt_token_ids, ...first.choices[0].token_ids];
    expect(next.prompt_token_ids.slice(0, left.length)).not.toEqual(left);
    // With `think:keep` the history keeps it, and the prompt extends what the model produced.
    const kept = JSON.parse(
      (await complete({ model: "sim+think:keep", temperature: 0, messages: history, ...asked }))
        .text,
    );
    expect(kept.prompt_token_ids.slice(0, left.length)).toEqual(left);
  });
});

describe("long generations (`longTokens`, the CLI's --long with --tokens-per-s)", () => {
  /** The stream's chunks, each with when it arrived (ms after the request). */
  async function timedStream(url: string, path: string, body: object) {
    const started = Date.now();
    const response = await fetch(`${url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ stream: true, stream_options: { include_usage: true }, ...body }),
    });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    const arrivals: number[] = [];
    let text = "";
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
      arrivals.push(Date.now() - started);
    }
    const usage = text
      .split("\n\n")
      .filter((l) => l.startsWith("data: {"))
      .map((l) => JSON.parse(l.slice(6)))
      .find((c) => c.usage)?.usage;
    return { usage, arrivals };
  }

  it("streams every completion at its full length, at the host's token rate", async () => {
    const long = await startSimulator({ longTokens: 40, latency: { msPerToken: 20 } });
    try {
      const chat = await timedStream(long.url, "/chat/completions", {
        model: "sim",
        messages: guessPrompt,
        max_tokens: 100,
      });
      expect(chat.usage.completion_tokens).toBe(40);
      // 40 tokens at 20 ms each arrive over most of 800 ms, not at once.
      expect((chat.arrivals.at(-1) ?? 0) - (chat.arrivals[0] ?? 0)).toBeGreaterThanOrEqual(600);
      // The token-in route generates as long; a request's own pad:N, or its max tokens, wins.
      const prompt = tokenize(renderPrompt(guessPrompt, "chatml"));
      const viaIds = await timedStream(long.url, "/completions", {
        model: "sim",
        prompt,
        max_tokens: 100,
      });
      expect(viaIds.usage.completion_tokens).toBe(40);
      const own = await timedStream(long.url, "/chat/completions", {
        model: "sim+pad:5",
        messages: guessPrompt,
      });
      expect(own.usage.completion_tokens).toBe(5);
      const capped = await timedStream(long.url, "/chat/completions", {
        model: "sim",
        messages: guessPrompt,
        max_tokens: 8,
      });
      expect(capped.usage.completion_tokens).toBe(8);
    } finally {
      await long.close();
    }
  });
});
