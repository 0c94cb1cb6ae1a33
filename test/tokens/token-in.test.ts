// The arithmetic of token-in generation (src/tokens/token-in.ts) and of a distilled episode's
// teacher logprobs through samples and the token object, on real ChatML ids.
import { describe, expect, it } from "vitest";
import { IM_END, IM_START, renderPrompt, tokenize } from "../../src/sim/chat-template";
import { encodeSample } from "../../src/tokens/sample-encoding";
import { episodeSamples } from "../../src/tokens/samples";
import {
  bridgeOf,
  closingOf,
  DUMMY_CONVERSATION,
  DUMMY_REPLY,
  nextPrompt,
  TemplateSeamError,
} from "../../src/tokens/token-in";
import { decodeTokenObject, encodeTokenObject } from "../../src/tokens/token-object";
import type { TurnTokens } from "../../src/tokens/turn-tokens";

const ids = (values: number[]) => Int32Array.from(values);
/** The ChatML rendering of messages, with or without the generation prompt. */
const render = (messages: { role: string; content: string }[], generationPrompt: boolean) => {
  const text = renderPrompt(messages, "chatml");
  return ids(tokenize(generationPrompt ? text : text.slice(0, -"<|im_start|>assistant\n".length)));
};
const reply = ids(tokenize(DUMMY_REPLY));
const closing = closingOf(render(DUMMY_CONVERSATION, false), reply);
const NEWLINE = tokenize("\n")[0];

describe("token-in prompts", () => {
  it("measure ChatML's closing of an assistant turn: <|im_end|> then a newline", () => {
    expect(Array.from(closing)).toEqual([IM_END, NEWLINE]);
  });

  it("append the environment's messages exactly as the template renders them after a turn", () => {
    const user = { role: "user", content: "lower" };
    const bridge = bridgeOf(render([...DUMMY_CONVERSATION, user], true), reply, closing);
    expect(Array.from(bridge)).toEqual(
      tokenize("<|im_start|>user\nlower<|im_end|>\n<|im_start|>assistant\n"),
    );
    // A conversation rendered whole equals the ids built turn by turn, when nothing re-renders.
    const opening = [
      { role: "system", content: "Guess." },
      { role: "user", content: "Go." },
    ];
    const action = { role: "assistant", content: "<guess>50</guess>" };
    const sampled = ids([...render(opening, true), ...tokenize(action.content), IM_END]);
    const built = nextPrompt(sampled, closing, bridge);
    expect(built).toEqual(render([...opening, action, user], true));
  });

  it("close a completion cut before its end-of-turn token with the whole closing", () => {
    const cut = ids([IM_START, 42, 43]);
    const built = nextPrompt(cut, closing, ids([7]));
    expect(Array.from(built)).toEqual([IM_START, 42, 43, IM_END, NEWLINE, 7]);
  });

  it("refuse a template that drops the dummy reply once messages follow it", () => {
    const dropped = render(
      [
        { role: "user", content: "edgeroll" },
        { role: "user", content: "x" },
      ],
      true,
    );
    expect(() => bridgeOf(dropped, reply, closing)).toThrow(TemplateSeamError);
    expect(() => closingOf(reply, reply)).toThrow(TemplateSeamError);
  });
});

describe("a distilled episode's teacher logprobs", () => {
  const turn = (
    n: number,
    tail: number[],
    completion: number[],
    teacher?: number[],
  ): TurnTokens => ({
    turn: n,
    promptLength: tail.length,
    prefixLength: 0,
    promptTail: ids(tail),
    completionIds: ids(completion),
    logprobs: Float32Array.from(completion, () => -0.5),
    consistent: true,
    model: "m",
    temperature: 1,
    topP: 1,
    ...(teacher ? { teacherLogprobs: Float32Array.from(teacher) } : {}),
  });

  it("sit on the sampled tokens of each sample, 0 elsewhere, and survive the token object", () => {
    const turns = [
      turn(0, [1, 2], [3, 4], [-1, -2]),
      { ...turn(1, [5], [6], [-3]), prefixLength: 4 },
    ];
    const [sample] = episodeSamples(turns, () => 1);
    expect(sample?.completions).toEqual([
      { turn: 0, start: 2, length: 2 },
      { turn: 1, start: 5, length: 1 },
    ]);
    expect(Array.from(sample?.teacherLogprobs ?? [])).toEqual([0, 0, -1, -2, 0, -3]);
    const decoded = decodeTokenObject(encodeTokenObject("g", [{ idx: 0, turns }]));
    expect(decoded.episodes[0]?.turns.map((t) => Array.from(t.teacherLogprobs ?? []))).toEqual([
      [-1, -2],
      [-3],
    ]);
    expect(encodeSample(sample as never, "json")).toMatchObject({
      teacher_logprobs: [0, 0, -1, -2, 0, -3],
    });
  });

  it("are left out of a sample with a turn the teacher has not scored", () => {
    const [sample] = episodeSamples(
      [turn(0, [1], [2], [-1]), { ...turn(1, [3], [4]), prefixLength: 2 }],
      () => 0,
    );
    expect(sample?.teacherLogprobs).toBeUndefined();
    expect(encodeSample(sample as never, "json")).not.toHaveProperty("teacher_logprobs");
  });
});
