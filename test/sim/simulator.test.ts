// The inference simulator, as an OpenAI-compatible HTTP server (Node).
import { countTokens } from "gpt-tokenizer";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Simulator, startSimulator } from "../../src/sim/server";

let sim: Simulator;
beforeAll(async () => {
  sim = await startSimulator();
});
afterAll(() => sim.close());

const guessPrompt = [
  {
    role: "user",
    content: "Find the number.\n\nReply with one guess per turn as <guess>N</guess>.",
  },
];

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
    expect(body.usage.completion_tokens).toBe(countTokens(content));
    expect(body.usage.prompt_tokens).toBe(countTokens(guessPrompt[0]?.content ?? "") + 4 + 2);
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
    expect(stream.usage.completion_tokens).toBe(countTokens(stream.content));
  });

  it("lists its model", async () => {
    const models = (await (await fetch(`${sim.url}/models`)).json()) as { data: { id: string }[] };
    expect(models.data[0]?.id).toBe("edgeroll-sim");
  });

  it("honours max_tokens and max_completion_tokens with finish_reason length", async () => {
    for (const limit of [{ max_tokens: 3 }, { max_completion_tokens: 3 }]) {
      const body = JSON.parse((await complete({ temperature: 0, ...limit })).text);
      expect(body.choices[0].finish_reason).toBe("length");
      expect(body.usage.completion_tokens).toBe(3);
    }
  });

  it("honours stop sequences", async () => {
    const body = JSON.parse((await complete({ temperature: 0, stop: ["<guess>"] })).text);
    expect(body.choices[0].message.content).toBe("Narrowing it down: ");
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

  it("answers a bad request with 400", async () => {
    const response = await fetch(`${sim.url}/chat/completions`, { method: "POST", body: "{}" });
    expect(response.status).toBe(400);
  });
});
