import { describe, expect, it } from "vitest";
import { TokenFieldReader } from "../../src/inference/token-fields";
import { encodeSample } from "../../src/tokens/sample-encoding";
import { episodeSamples, type TokenSample } from "../../src/tokens/samples";
import { decodeTokenObject, encodeTokenObject } from "../../src/tokens/token-object";
import {
  type HostTokens,
  joinedSequence,
  prefixBreaks,
  sequenceAfter,
  type TurnTokens,
  toTurnTokens,
} from "../../src/tokens/turn-tokens";

const ids = (...n: number[]) => Int32Array.from(n);
const host = (prompt: number[], completion: number[]): HostTokens => ({
  promptIds: ids(...prompt),
  completionIds: ids(...completion),
  logprobs: Float32Array.from(completion, (_, i) => -0.25 * (i + 1)),
  model: "m",
});
const sampling = { temperature: 1, topP: 1 };

/** Records host answers turn by turn, as the group object does. */
function record(answers: HostTokens[]): TurnTokens[] {
  let previous: Int32Array = new Int32Array(0);
  return answers.map((answer, turn) => {
    const stored = toTurnTokens(previous, answer, turn, sampling);
    previous = sequenceAfter(previous, stored);
    return stored;
  });
}

describe("turn tokens", () => {
  it("keep only the prompt tokens after what the previous turn left", () => {
    const [t0, t1] = record([host([1, 2, 3], [10, 11]), host([1, 2, 3, 10, 11, 20, 21], [30])]);
    expect(t0?.promptTail).toEqual(ids(1, 2, 3));
    expect(t1).toMatchObject({ prefixLength: 5, promptTail: ids(20, 21), consistent: true });
    // The prompt comes back whole from the previous sequence and the tail.
    const after = sequenceAfter(ids(1, 2, 3, 10, 11), t1 as TurnTokens);
    expect(after).toEqual(ids(1, 2, 3, 10, 11, 20, 21, 30));
  });

  it("leave, as read from the host, a sequence kept without a copy and equal to the joined one", () => {
    const reader = new TokenFieldReader();
    reader.add(
      { prompt_token_ids: [1, 2, 3, 11, 12, 20] },
      { token_ids: [30, 31], logprobs: { content: [{ logprob: -1 }, { logprob: -2 }] } },
    );
    const read = reader.result();
    if (read.kind !== "exact") throw new Error(read.problem);
    // Whether or not the prompt extends what the last turn left (here it does not).
    for (const previous of [ids(1, 2, 3, 10, 11, 12), ids(1, 2, 3, 11, 12)]) {
      const stored = toTurnTokens(previous, read.tokens, 1, sampling);
      expect(joinedSequence(read.tokens)).toEqual(sequenceAfter(previous, stored));
    }
    expect(joinedSequence(read.tokens)?.buffer).toBe(read.tokens.promptIds.buffer);
    // Arrays of their own are joined by copying, as before.
    expect(joinedSequence(host([1, 2], [3]))).toBeNull();
  });

  it("mark a turn whose prompt does not extend the previous sequence as a break", () => {
    // The template re-rendered turn 0's completion differently (say, without its reasoning).
    const turns = record([host([1, 2, 3], [10, 11, 12]), host([1, 2, 3, 11, 12, 20], [30])]);
    expect(turns[1]).toMatchObject({ prefixLength: 3, consistent: false });
    expect(turns[1]?.promptTail).toEqual(ids(11, 12, 20));
    expect(prefixBreaks(turns)).toBe(1);
  });
});

describe("trainer samples, merge or split", () => {
  it("merge consistent turns into one sample, the environment's tokens masked out", () => {
    const turns = record([
      host([1, 2], [10, 11]),
      host([1, 2, 10, 11, 20], [30, 31]),
      host([1, 2, 10, 11, 20, 30, 31, 21, 22], [40]),
    ]);
    const [sample, ...rest] = episodeSamples(turns, (turn) => [0.5, -1, 2][turn] as number);
    expect(rest).toEqual([]);
    expect(sample?.turns).toEqual([0, 2]);
    expect(sample?.tokenIds).toEqual(ids(1, 2, 10, 11, 20, 30, 31, 21, 22, 40));
    expect(Array.from(sample?.mask ?? [])).toEqual([0, 0, 1, 1, 0, 1, 1, 0, 0, 1]);
    expect(Array.from(sample?.logprobs ?? [])).toEqual([
      0, 0, -0.25, -0.5, 0, -0.25, -0.5, 0, 0, -0.25,
    ]);
    expect(Array.from(sample?.advantages ?? [])).toEqual([0, 0, 0.5, 0.5, 0, -1, -1, 0, 0, 2]);
  });

  it("split at a break: the new sample starts with the host's whole prompt of that turn", () => {
    const turns = record([
      host([1, 2], [10, 11]),
      host([1, 2, 11, 20], [30]),
      host([1, 2, 11, 20, 30, 21], [40]),
    ]);
    const samples = episodeSamples(turns, () => 1);
    expect(samples.map((s) => s.turns)).toEqual([
      [0, 0],
      [1, 2],
    ]);
    expect(samples[0]?.tokenIds).toEqual(ids(1, 2, 10, 11));
    expect(samples[1]?.tokenIds).toEqual(ids(1, 2, 11, 20, 30, 21, 40));
    expect(Array.from(samples[1]?.mask ?? [])).toEqual([0, 0, 0, 0, 1, 0, 1]);
  });

  it("reproduce exactly every id and logprob the host sent, turn by turn", () => {
    const answers = [host([5, 6, 7], [8, 9]), host([5, 6, 7, 8, 9, 4], [3, 2, 1])];
    const [sample] = episodeSamples(record(answers), () => 0);
    const sampled = Array.from(sample?.tokenIds ?? []).filter((_, i) => sample?.mask[i] === 1);
    expect(sampled).toEqual([8, 9, 3, 2, 1]);
    const logprobs = Array.from(sample?.logprobs ?? []).filter((_, i) => sample?.mask[i] === 1);
    expect(logprobs).toEqual(answers.flatMap((a) => Array.from(a.logprobs)));
  });
});

describe("each sampled token's policy version", () => {
  it("is its turn's, or for a cut and continued turn the old one on the kept tokens and the new after", () => {
    const turns = record([
      host([1, 2], [10, 11, 12, 13]),
      host([1, 2, 10, 11, 12, 13, 20], [30, 31]),
    ]);
    const [t0, t1] = turns as [TurnTokens, TurnTokens];
    // Turn 0: three tokens kept from version 3, the fourth sampled by version 4 after the sync.
    t0.versions = [
      { at: 0, version: 3 },
      { at: 3, version: 4 },
    ];
    t1.versions = [{ at: 0, version: 4 }];
    const [sample] = episodeSamples(turns, () => 1);
    expect(Array.from(sample?.policyVersions ?? [])).toEqual([-1, -1, 3, 3, 3, 4, -1, 4, 4]);
  });

  it("is the episode's for turns a token object landed before versions were kept does not say", () => {
    const [sample] = episodeSamples(record([host([1, 2], [10, 11])]), () => 1, 7);
    expect(Array.from(sample?.policyVersions ?? [])).toEqual([-1, -1, 7, 7]);
    const [unknown] = episodeSamples(record([host([1, 2], [10, 11])]), () => 1);
    expect(Array.from(unknown?.policyVersions ?? [])).toEqual([-1, -1, -1, -1]);
  });

  it("travels in the token object, and an object without versions reads back without them", () => {
    const turns = record([host([1, 2], [10, 11, 12])]);
    const plain = decodeTokenObject(encodeTokenObject("g_v", [{ idx: 0, turns }]));
    expect(plain.episodes[0]?.turns[0]?.versions).toBeUndefined();
    (turns[0] as TurnTokens).versions = [
      { at: 0, version: 1 },
      { at: 2, version: 2 },
    ];
    const versioned = decodeTokenObject(encodeTokenObject("g_v", [{ idx: 0, turns }]));
    expect(versioned.episodes[0]?.turns[0]?.versions).toEqual([
      { at: 0, version: 1 },
      { at: 2, version: 2 },
    ]);
  });
});

describe("a group's token object", () => {
  it("packs and unpacks every turn exactly, and packs the same group to the same bytes", () => {
    const episodes = [
      { idx: 0, turns: record([host([1, 2], [10, 11]), host([1, 2, 10, 11, 20], [30])]) },
      { idx: 1, turns: record([host([1, 2], [12])]) },
      { idx: 2, turns: [] },
    ];
    const bytes = encodeTokenObject("g_x", episodes);
    expect(encodeTokenObject("g_x", episodes)).toEqual(bytes);
    const decoded = decodeTokenObject(bytes);
    expect(decoded.groupId).toBe("g_x");
    expect(decoded.episodes).toEqual(episodes);
    // 4 bytes per stored id and per logprob, plus the header.
    const stored = 2 + 2 + 1 + 1 + 1;
    const logprobs = 2 + 1 + 1;
    expect(bytes.length - 4 * (stored + logprobs)).toBeLessThan(700);
  });

  it("refuses bytes that are not one", () => {
    expect(() => decodeTokenObject(new TextEncoder().encode("hello world"))).toThrow(/bad magic/);
    const bytes = encodeTokenObject("g_x", [{ idx: 0, turns: record([host([1], [2])]) }]);
    expect(() => decodeTokenObject(bytes.subarray(0, bytes.length - 4))).toThrow(/shorter/);
  });
});

describe("samples on the wire", () => {
  const [sample] = episodeSamples(record([host([1, 2], [300000, 11])]), () => 0.5) as [TokenSample];

  it("as JSON lists", () => {
    expect(encodeSample(sample, "json")).toEqual({
      turns: [0, 0],
      token_ids: [1, 2, 300000, 11],
      mask: [0, 0, 1, 1],
      logprobs: [0, 0, -0.25, -0.5],
      advantages: [0, 0, 0.5, 0.5],
      policy_versions: [-1, -1, -1, -1],
    });
  });

  it("as base64 of little-endian arrays", () => {
    const wire = encodeSample(sample, "base64");
    const bytes = (s: string) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
    expect(new Int32Array(bytes(wire.token_ids as string).buffer)).toEqual(ids(1, 2, 300000, 11));
    expect(Array.from(bytes(wire.mask as string))).toEqual([0, 0, 1, 1]);
    expect(Array.from(new Float32Array(bytes(wire.logprobs as string).buffer))).toEqual([
      0, 0, -0.25, -0.5,
    ]);
    expect(Array.from(new Float32Array(bytes(wire.advantages as string).buffer))).toEqual([
      0, 0, 0.5, 0.5,
    ]);
    expect(new Int32Array(bytes(wire.policy_versions as string).buffer)).toEqual(
      ids(-1, -1, -1, -1),
    );
  });
});
