// A cut token-in turn's continuation, as the turn puts it together: the prompt it is sent with,
// and the whole turn's answer from the kept tokens and the continuation's.
import { describe, expect, it } from "vitest";
import type { Completion } from "../../src/inference/completion";
import {
  continuationRequest,
  keptWhole,
  withKept,
} from "../../src/rollout/generation/continuation";
import type { KeptTurn } from "../../src/rollout/storage/interrupted-turns";
import { joinedSequence } from "../../src/tokens/turn-tokens";

const kept: KeptTurn = {
  turn: 2,
  prompt: Int32Array.from([1, 2, 3]),
  completionIds: Int32Array.from([10, 11]),
  logprobs: Float32Array.from([-0.5, -0.25]),
  content: "<gu",
  versions: [{ at: 0, version: 3 }],
};

const continuation: Completion = {
  content: "ess>7</guess>",
  toolCalls: [],
  finishReason: "stop",
  usage: { promptTokens: 5, completionTokens: 3, cachedTokens: 5 },
  tokens: {
    kind: "exact",
    tokens: {
      promptIds: Int32Array.from([1, 2, 3, 10, 11]),
      completionIds: Int32Array.from([12, 13, 14]),
      logprobs: Float32Array.from([-1, -2, -0.125]),
      model: "policy",
    },
  },
};

describe("a cut token-in turn's continuation", () => {
  it("is sent with the prompt ids then the kept ids, for the budget the kept tokens left", () => {
    const { prompt, maxTokens } = continuationRequest(kept, 16);
    expect(Array.from(prompt)).toEqual([1, 2, 3, 10, 11]);
    expect(maxTokens).toBe(14);
  });

  it("answers the whole turn: the original prompt, the kept tokens then the continuation's", () => {
    const turn = withKept(kept, continuation);
    expect(turn.content).toBe("<guess>7</guess>");
    expect(turn.finishReason).toBe("stop");
    // Counted as the turn the host would have answered uncut.
    expect(turn.usage).toEqual({ promptTokens: 3, completionTokens: 5, cachedTokens: 5 });
    if (turn.tokens?.kind !== "exact") throw new Error("tokens lost");
    const { promptIds, completionIds, logprobs, model } = turn.tokens.tokens;
    expect(Array.from(promptIds)).toEqual([1, 2, 3]);
    expect(Array.from(completionIds)).toEqual([10, 11, 12, 13, 14]);
    expect(Array.from(logprobs)).toEqual([-0.5, -0.25, -1, -2, -0.125]);
    expect(model).toBe("policy");
    // One buffer, prompt then completion: the token table keeps it without a copy.
    expect(Array.from(joinedSequence(turn.tokens.tokens) ?? [])).toEqual([
      1, 2, 3, 10, 11, 12, 13, 14,
    ]);
  });

  it("leaves a continuation without tokens without them, its text still whole", () => {
    const missing = { kind: "missing" as const, problem: "no token_ids" };
    const turn = withKept(kept, { ...continuation, tokens: missing });
    expect(turn.tokens).toEqual(missing);
    expect(turn.content).toBe("<guess>7</guess>");
  });

  it("is the kept tokens alone, ended for length, when they used the whole budget", () => {
    const turn = keptWhole(kept);
    expect(turn.finishReason).toBe("length");
    expect(turn.content).toBe("<gu");
    expect(turn.usage).toEqual({ promptTokens: 3, completionTokens: 2, cachedTokens: null });
    if (turn.tokens?.kind !== "exact") throw new Error("tokens lost");
    expect(Array.from(turn.tokens.tokens.completionIds)).toEqual([10, 11]);
    expect(Array.from(turn.tokens.tokens.logprobs)).toEqual([-0.5, -0.25]);
  });
});
