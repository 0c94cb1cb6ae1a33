/**
 * An episode's turns as trainer samples, by the merge-or-split rule: consecutive
 * prefix-consistent turns merge into one sample; a turn that breaks the prefix starts a new one.
 * Nothing is re-tokenized: every id is one the host sent. `mask` is 1 exactly on sampled
 * completion tokens, where `logprobs` holds the host's logprob and `advantages` the turn's
 * advantage; both are 0 elsewhere. A distilled episode's samples also carry the teacher's
 * logprob of each sampled token, 0 elsewhere too. `policyVersions` says which policy version
 * sampled each token (-1 where nothing was sampled): one version a turn, or more for a turn an
 * interrupting weight sync cut and a newer version continued.
 */
import type { TurnTokens } from "./turn-tokens";

export interface TokenSample {
  /** The first and last sampled turn the sample holds. */
  turns: [number, number];
  tokenIds: Int32Array;
  mask: Uint8Array;
  logprobs: Float32Array;
  advantages: Float32Array;
  policyVersions: Int32Array;
  /** The teacher's logprobs, when every turn of the sample has been scored by one. */
  teacherLogprobs?: Float32Array | undefined;
  /** Where each of its turns' completion lies in `tokenIds`, in turn order. */
  completions: { turn: number; start: number; length: number }[];
}

/** Per turn: the advantage its tokens get (per-turn credit), or one for the whole episode. */
export type TurnAdvantage = (turn: number) => number;

/** Fills a turn's completion positions (from `start`) with the versions that sampled them. */
function fillVersions(into: Int32Array, start: number, turn: TurnTokens, otherwise: number): void {
  const end = start + turn.completionIds.length;
  const segments = turn.versions ?? [{ at: 0, version: otherwise }];
  segments.forEach((segment, i) => {
    const next = segments[i + 1];
    const from = Math.min(end, start + segment.at);
    const to = next === undefined ? end : Math.min(end, start + next.at);
    into.fill(segment.version, from, to);
  });
}

/**
 * `unversioned`: the version of turns a token object does not say (objects landed before
 * per-token versions were recorded): the episode's.
 */
export function episodeSamples(
  turns: readonly TurnTokens[],
  advantageOf: TurnAdvantage,
  unversioned = -1,
): TokenSample[] {
  // Group the turns: a sample runs from a turn that breaks the prefix up to the next break.
  const runs: TurnTokens[][] = [];
  for (const turn of turns) {
    if (runs.length === 0 || !turn.consistent) runs.push([turn]);
    else runs.at(-1)?.push(turn);
  }
  let previous: Int32Array = new Int32Array(0);
  const samples: TokenSample[] = [];
  for (const run of runs) {
    const first = run[0] as TurnTokens;
    // The sample starts with the first turn's whole prompt, rebuilt from the tokens before it.
    const start = first.prefixLength;
    const length = run.reduce(
      (n, t, i) => n + (i === 0 ? start : 0) + t.promptTail.length + t.completionIds.length,
      0,
    );
    const tokenIds = new Int32Array(length);
    const mask = new Uint8Array(length);
    const logprobs = new Float32Array(length);
    const advantages = new Float32Array(length);
    const policyVersions = new Int32Array(length).fill(-1);
    const taught = run.every((t) => t.teacherLogprobs !== undefined);
    const teacherLogprobs = taught ? new Float32Array(length) : undefined;
    const completions: TokenSample["completions"] = [];
    tokenIds.set(previous.subarray(0, start));
    let at = start;
    for (const turn of run) {
      tokenIds.set(turn.promptTail, at);
      at += turn.promptTail.length;
      completions.push({ turn: turn.turn, start: at, length: turn.completionIds.length });
      tokenIds.set(turn.completionIds, at);
      mask.fill(1, at, at + turn.completionIds.length);
      logprobs.set(turn.logprobs, at);
      if (turn.teacherLogprobs !== undefined) teacherLogprobs?.set(turn.teacherLogprobs, at);
      advantages.fill(advantageOf(turn.turn), at, at + turn.completionIds.length);
      fillVersions(policyVersions, at, turn, unversioned);
      at += turn.completionIds.length;
    }
    // Within a run, the sample so far is exactly the sequence its last turn left.
    previous = tokenIds;
    samples.push({
      turns: [first.turn, (run.at(-1) as TurnTokens).turn],
      tokenIds,
      mask,
      logprobs,
      advantages,
      policyVersions,
      teacherLogprobs,
      completions,
    });
  }
  return samples;
}
