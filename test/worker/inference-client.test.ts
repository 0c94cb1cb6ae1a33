import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { type GenerationOutcome, generate } from "../../src/inference/client";
import {
  DRAIN_MAX_MS,
  parseCompletionStream,
  readCompletionStream,
  type StreamWatch,
} from "../../src/inference/stream";
import type { ChatMessage } from "../../src/sdk";

const messages: ChatMessage[] = [
  { role: "user", content: "What is 6 * 7? Give your final answer as <answer>...</answer>." },
];

let unique = 0;
/** Each call gets its own conversation, so per-request fault counters start fresh. */
function call(
  model: string,
  options: {
    stream?: boolean;
    deadlineMs?: number;
    maxRetries?: number;
    maxTokens?: number;
    maxInlineBackoffMs?: number;
    wholeStreamBytes?: number;
    tokens?: boolean;
  } = {},
): Promise<GenerationOutcome> {
  unique++;
  return generate(
    { baseUrl: env.INFERENCE_BASE_URL },
    {
      sampling: { model, temperature: 0, top_p: 1, max_completion_tokens: options.maxTokens ?? 64 },
      messages: [...messages, { role: "system", content: `call ${unique}` }],
      stream: options.stream ?? true,
      tokens: options.tokens ?? false,
    },
    {
      deadlineMs: options.deadlineMs ?? 2000,
      maxRetries: options.maxRetries ?? 3,
      ...(options.maxInlineBackoffMs === undefined
        ? {}
        : { maxInlineBackoffMs: options.maxInlineBackoffMs }),
      ...(options.wholeStreamBytes === undefined
        ? {}
        : { wholeStreamBytes: options.wholeStreamBytes }),
    },
  );
}

/** A stream read as it arrives (the default), and one read whole by the runtime. */
const STREAM_READS = [
  ["as it arrives", {}],
  ["whole", { wholeStreamBytes: 1_000_000 }],
] as const;

describe("the inference client", () => {
  for (const stream of [true, false]) {
    it(`reads a completion ${stream ? "from a stream" : "from one JSON body"}, with usage`, async () => {
      const outcome = await call("sim", { stream });
      expect(outcome).toMatchObject({ kind: "ok", attempts: 1 });
      if (outcome.kind !== "ok") return;
      expect(outcome.completion.content).toBe("The result is <answer>42</answer>");
      expect(outcome.completion.finishReason).toBe("stop");
      expect(outcome.completion.usage?.completionTokens).toBeGreaterThan(0);
      expect(outcome.completion.usage?.promptTokens).toBeGreaterThan(0);
    });
  }

  for (const stream of [true, false]) {
    it(`reassembles native tool calls ${stream ? "from stream deltas" : "from a JSON body"}`, async () => {
      const outcome = await generate(
        { baseUrl: env.INFERENCE_BASE_URL },
        {
          sampling: { model: "sim+native", temperature: 0, top_p: 1, max_completion_tokens: 128 },
          messages: [
            { role: "system", content: 'Call tools with <tool_call>{"name": ...}</tool_call>.' },
            {
              role: "user",
              content: `Hi, it's Ana (ana@example.com, ZIP 94107). Refund my lamp. ${stream}`,
            },
          ],
          stream,
          tokens: false,
        },
        { deadlineMs: 2000, maxRetries: 0 },
      );
      expect(outcome).toMatchObject({
        kind: "ok",
        completion: { content: "", finishReason: "tool_calls" },
      });
      if (outcome.kind !== "ok") return;
      const [call] = outcome.completion.toolCalls;
      expect(call?.id).toMatch(/^call_/);
      expect(call?.function.name).toBe("verify_identity");
      expect(JSON.parse(call?.function.arguments ?? "")).toEqual({
        email: "ana@example.com",
        zip: "94107",
      });
    });
  }

  for (const [read, options] of STREAM_READS) {
    it(`reads a stream ${read}: content, finish reason and usage`, async () => {
      const outcome = await call("sim", options);
      expect(outcome).toMatchObject({
        kind: "ok",
        attempts: 1,
        completion: { content: "The result is <answer>42</answer>", finishReason: "stop" },
      });
      if (outcome.kind === "ok")
        expect(outcome.completion.usage?.completionTokens).toBeGreaterThan(0);
    });

    it(`retries a cut or malformed stream read ${read}, and times out on a stalled one`, async () => {
      expect(await call("sim+cut:1", options)).toMatchObject({ kind: "ok", attempts: 2 });
      expect(await call("sim+malformed:1", options)).toMatchObject({ kind: "ok", attempts: 2 });
      expect(await call("sim+cut", { ...options, maxRetries: 1 })).toMatchObject({
        kind: "failed",
        failure: "malformed",
      });
      expect(await call("sim+stall", { ...options, deadlineMs: 300 })).toMatchObject({
        kind: "timeout",
      });
    });
  }

  it("reassembles the same completion from a stream read whole or as it arrives", async () => {
    const chunk = (delta: object, extra: object = {}) =>
      `data: ${JSON.stringify({ choices: [{ index: 0, delta, ...extra }] })}\n\n`;
    const sse = [
      chunk({ content: "Let me " }),
      chunk({ content: "check." }),
      chunk({
        tool_calls: [{ index: 0, id: "call_1", function: { name: "look", arguments: "" } }],
      }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"q": 1}' } }] }),
      chunk({}, { finish_reason: "tool_calls" }),
      `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 9, completion_tokens: 7 } })}\n\n`,
      "data: [DONE]\n\n",
    ].join("");
    const whole = parseCompletionStream(sse);
    expect(whole).toMatchObject({
      content: "Let me check.",
      finishReason: "tool_calls",
      toolCalls: [{ id: "call_1", function: { name: "look", arguments: '{"q": 1}' } }],
      usage: { promptTokens: 9, completionTokens: 7 },
    });
    const body = new Response(sse).body as ReadableStream<Uint8Array>;
    expect(await readCompletionStream(body)).toEqual(whole);
    // Cut before it says how it finished: both ways, a malformed stream.
    const cut = sse.slice(0, sse.indexOf("check.") + 10);
    expect(() => parseCompletionStream(cut)).toThrow(/ended before the completion finished/);
    const cutBody = new Response(cut).body as ReadableStream<Uint8Array>;
    await expect(readCompletionStream(cutBody)).rejects.toThrow(/ended before/);
  });

  describe("draining a stream an interrupt cuts", () => {
    const event = (choice: object) =>
      new TextEncoder().encode(
        `data: ${JSON.stringify({ choices: [{ index: 0, ...choice }] })}\n\n`,
      );
    /** A body the test feeds by hand, read as the client reads one; `cut` errors it as an abort does. */
    function hostStream() {
      let controller: ReadableStreamDefaultController<Uint8Array> | null = null;
      const body = new ReadableStream<Uint8Array>({
        start: (c) => {
          controller = c;
        },
      });
      const seen: { watch: StreamWatch | null } = { watch: null };
      const read = readCompletionStream(body, false, (watch) => {
        seen.watch = watch;
      });
      const watch = () => {
        if (seen.watch === null) throw new Error("the stream is not being read");
        return seen.watch;
      };
      return {
        read,
        watch,
        send: (text: string) => controller?.enqueue(event({ text, finish_reason: null })),
        finish: () => {
          controller?.enqueue(event({ text: "", finish_reason: "stop" }));
          controller?.enqueue(new TextEncoder().encode("data: [DONE]\n\n"));
          controller?.close();
        },
        cut: () => controller?.error(new Error("aborted")),
      };
    }
    const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

    it("reads what had already arrived before the cut, then stops", async () => {
      const host = hostStream();
      host.send("a");
      await tick(5);
      // Sent before the interrupt, not yet read (a busy thread reads late): kept, not lost.
      for (const text of ["b", "c", "d"]) host.send(text);
      let cutAt: string | null = null;
      host.watch().drain(() => {
        cutAt = host.watch().sofar().content;
        host.cut();
      });
      await expect(host.read).rejects.toThrow("aborted");
      expect(cutAt).toBe("abcd");
    });

    it("stops after DRAIN_MAX_MS against a host that never pauses", async () => {
      const host = hostStream();
      const sending = setInterval(() => host.send("x"), 1);
      const asked = Date.now();
      let cutAfter = -1;
      host.watch().drain(() => {
        cutAfter = Date.now() - asked;
        host.cut();
      });
      await expect(host.read).rejects.toThrow("aborted");
      clearInterval(sending);
      expect(cutAfter).toBeGreaterThanOrEqual(DRAIN_MAX_MS - 1);
      expect(cutAfter).toBeLessThan(DRAIN_MAX_MS + 200);
    });

    it("keeps a generation that finishes while it drains, and cuts nothing after the end", async () => {
      const host = hostStream();
      host.send("whole");
      await tick(1);
      let cuts = 0;
      host.watch().drain(() => cuts++);
      host.finish();
      expect(await host.read).toMatchObject({ content: "whole", finishReason: "stop" });
      host.watch().drain(() => cuts++);
      await tick(DRAIN_MAX_MS + 20);
      expect(cuts).toBe(0);
    });
  });

  it("marks a completion cut by max_completion_tokens with finish_reason length", async () => {
    const outcome = await call("sim", { maxTokens: 2 });
    expect(outcome).toMatchObject({ kind: "ok", completion: { finishReason: "length" } });
    if (outcome.kind === "ok") expect(outcome.completion.usage?.completionTokens).toBe(2);
  });

  it("retries 5xx and 429 answers with backoff, then succeeds", async () => {
    expect(await call("sim+fail:503:2")).toMatchObject({ kind: "ok", attempts: 3 });
    expect(await call("sim+fail:429:1")).toMatchObject({ kind: "ok", attempts: 2 });
  });

  it("retries reset connections, cut streams and malformed bodies", async () => {
    expect(await call("sim+reset:1")).toMatchObject({ kind: "ok", attempts: 2 });
    expect(await call("sim+cut:1")).toMatchObject({ kind: "ok", attempts: 2 });
    expect(await call("sim+malformed:1")).toMatchObject({ kind: "ok", attempts: 2 });
    expect(await call("sim+malformed:1", { stream: false })).toMatchObject({
      kind: "ok",
      attempts: 2,
    });
  });

  it("gives up after its retries with the reason of the last fault", async () => {
    expect(await call("sim+fail:503", { maxRetries: 2 })).toMatchObject({
      kind: "failed",
      failure: "unavailable",
      attempts: 3,
    });
    expect(await call("sim+malformed", { maxRetries: 1 })).toMatchObject({
      kind: "failed",
      failure: "malformed",
      attempts: 2,
    });
  });

  it("does not retry a 4xx: the host will not do it", async () => {
    const outcome = await call("sim+fail:400");
    expect(outcome).toMatchObject({ kind: "failed", failure: "rejected", attempts: 1 });
  });

  it("recognises a context-length rejection", async () => {
    const outcome = await call("sim+context:5");
    expect(outcome).toMatchObject({ kind: "context_exceeded", attempts: 1 });
  });

  it("hands back a long Retry-After instead of sleeping on it", async () => {
    const outcome = await call("sim+fail:503:1+retryafter:3", {
      maxInlineBackoffMs: 1000,
      deadlineMs: 10_000,
    });
    expect(outcome).toMatchObject({ kind: "retry_later", attempts: 1, delayMs: 3000 });
  });

  it("stops retrying when the wait would outlast the deadline, and reports why", async () => {
    const outcome = await call("sim+fail:503:1+retryafter:3", { deadlineMs: 2000 });
    expect(outcome).toMatchObject({ kind: "failed", failure: "unavailable", attempts: 1 });
    const malformed = await call("sim+malformed", { deadlineMs: 400, maxRetries: 10 });
    expect(malformed).toMatchObject({ kind: "failed", failure: "malformed" });
    if (malformed.kind === "failed") expect(malformed.message).toMatch(/no time left to retry/);
  });

  it("aborts at the deadline, whether the host hangs or stalls mid-stream", async () => {
    const started = Date.now();
    expect(await call("sim+hang", { deadlineMs: 300 })).toMatchObject({
      kind: "timeout",
      attempts: 1,
    });
    expect(await call("sim+stall", { deadlineMs: 300 })).toMatchObject({
      kind: "timeout",
      attempts: 1,
    });
    expect(Date.now() - started).toBeLessThan(3000);
  });
});
