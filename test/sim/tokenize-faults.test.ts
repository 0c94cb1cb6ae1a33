// Faults on /tokenize (`tokenize-fail:S[:N]`): vLLM's error bodies for the first N tries of each
// distinct request body, untouched by the generation faults, and counted apart in the stats.
import { describe, expect, it } from "vitest";
import { tokenize } from "../../src/sim/chat-template";
import type { SimulatorStats } from "../../src/sim/host-ledger";
import { startSimulator } from "../../src/sim/server";
import {
  GUESS_PROMPT as guessPrompt,
  post,
  type Tokenized,
  useSimulator,
  type WireError,
} from "./sim-client";

const sim = useSimulator();

const tokenizeOn = (body: object, base = sim.root) =>
  post<Tokenized & WireError>(`${base}/tokenize`, body);

describe("tokenize-fail:S[:N]", () => {
  it("fails the first N tries of each distinct body with vLLM's error, then tokenizes", async () => {
    const model = "sim+tokenize-fail:503:2+retryafter:7";
    const body = { model, prompt: "hello there" };
    const tries = [await tokenizeOn(body), await tokenizeOn(body), await tokenizeOn(body)];
    expect(tries.map((t) => t.status)).toEqual([503, 503, 200]);
    expect(tries[0]?.json).toEqual({
      error: { message: expect.any(String), type: "ServiceUnavailableError" },
    });
    expect(tries[0]?.headers.get("retry-after")).toBe("7");
    expect(tries[2]?.json.tokens).toEqual(tokenize("hello there"));
    // Another body counts its own tries: its first fails though the first body's now succeed.
    const other = { model, messages: guessPrompt };
    expect((await tokenizeOn(other)).status).toBe(503);
    expect((await tokenizeOn(body)).status).toBe(200);
    expect(sim.stats().tokenize.byModel[model]).toEqual({
      requests: 5,
      outcomes: { tokenize_error_503: 3, tokenize_ok: 2 },
    });
  });

  it("fails every try without N: a 404 names the model, as vLLM's does", async () => {
    const model = "sim+tokenize-fail:404";
    for (let i = 0; i < 4; i++) {
      const { status, headers, json } = await tokenizeOn({ model, prompt: "hi" });
      expect(status).toBe(404);
      expect(json).toEqual({
        error: {
          message: "The model `sim+tokenize-fail:404` does not exist.",
          type: "NotFoundError",
        },
      });
      expect(headers.get("retry-after")).toBeNull(); // only with `retryafter:S`
    }
    expect(sim.stats().tokenize.byModel[model]?.outcomes).toEqual({ tokenize_error_404: 4 });
  });

  it("leaves generation alone, and the generation faults leave /tokenize alone", async () => {
    const chat = (model: string) =>
      post(`${sim.url}/chat/completions`, { model, messages: guessPrompt, temperature: 0 });
    expect((await chat("sim+tokenize-fail:503")).status).toBe(200);
    // A teacher whose generation fails still tokenizes: the tokenizer is not the model.
    const teacher = "sim+teacher+fail:503";
    const prompt = await tokenizeOn({ model: teacher, messages: guessPrompt });
    expect(prompt.status).toBe(200);
    const scored = await post(`${sim.url}/completions`, {
      model: teacher,
      prompt: prompt.json.tokens,
      max_tokens: 1,
      prompt_logprobs: 0,
    });
    expect(scored.status).toBe(503);
    for (const model of ["sim+hang", "sim+reset", "sim+malformed", "sim+cut", "sim+chaos:1"]) {
      const { status, json } = await tokenizeOn({ model, prompt: "hi" });
      expect(status, model).toBe(200);
      expect(json.tokens).toEqual(tokenize("hi"));
    }
  });

  it("counts /tokenize apart: `requests` and `byModel[model].requests` count generations alone", async () => {
    const own = await startSimulator();
    try {
      const base = own.url.replace(/\/v1$/, "");
      const model = "sim+tokenize-fail:503:1";
      await tokenizeOn({ model, prompt: "hi" }, base);
      await tokenizeOn({ model, prompt: "hi" }, base);
      await tokenizeOn({ prompt: "no model named" }, base);
      await post(`${own.url}/chat/completions`, { model, messages: guessPrompt });
      const stats = own.stats();
      expect(stats.requests).toBe(1);
      expect(stats.outcomes).toEqual({ ok: 1 });
      expect(stats.byModel).toEqual({ [model]: { requests: 1, outcomes: { ok: 1 } } });
      expect(stats.tokenize).toEqual({
        requests: 3,
        outcomes: { tokenize_error_503: 1, tokenize_ok: 2 },
        byModel: {
          [model]: { requests: 2, outcomes: { tokenize_error_503: 1, tokenize_ok: 1 } },
          sim: { requests: 1, outcomes: { tokenize_ok: 1 } },
        },
      });
      // GET /sim/stats answers the same.
      const served = (await (await fetch(`${base}/sim/stats`)).json()) as SimulatorStats;
      expect(served.tokenize).toEqual(stats.tokenize);
      expect(served.byModel).toEqual(stats.byModel);
    } finally {
      await own.close();
    }
  });
});
