/**
 * What the host said each sampled turn in tokens, and how a turn relates to the one before it.
 * A turn is prefix-consistent when its prompt starts with the previous turn's prompt followed
 * by the previous completion: the host saw exactly the tokens it had produced. Only the prompt
 * tokens after the longest prefix shared with the previous sequence are kept, so storage grows
 * with the episode, not with the square of its turns.
 */

/** The tokens of one sampled turn as the host reported them. */
export interface HostTokens {
  /** The whole prompt, as the host tokenized it (chat template applied). */
  promptIds: Int32Array;
  completionIds: Int32Array;
  /** The host's sampling logprob of each completion token. */
  logprobs: Float32Array;
  /** The model the host says answered. */
  model: string | null;
}

/**
 * The version that sampled a turn's completion tokens from position `at` on (up to the next
 * segment's): one segment for a turn sampled whole, more for a turn an interrupting weight sync
 * cut and a newer version continued.
 */
export interface VersionSegment {
  at: number;
  version: number;
}

/** One sampled turn's tokens as stored: the prompt as a tail after what the last turn left. */
export interface TurnTokens {
  turn: number;
  /** The host's whole prompt length, in tokens. */
  promptLength: number;
  /** Leading prompt ids equal to the previous turn's prompt + completion. */
  prefixLength: number;
  /** The prompt ids after the prefix: the environment's reply and the template's glue. */
  promptTail: Int32Array;
  completionIds: Int32Array;
  logprobs: Float32Array;
  /** The prompt starts with all of the previous turn's prompt + completion (turn 0: always). */
  consistent: boolean;
  model: string | null;
  temperature: number;
  topP: number;
  /** On-policy distillation: the teacher's logprob of each completion token, once scored. */
  teacherLogprobs?: Float32Array | undefined;
  /** Which versions sampled its completion, once landed (absent in older token objects). */
  versions?: VersionSegment[] | undefined;
}

/** Length of the longest common prefix of two id sequences. */
export function commonPrefix(a: Int32Array, b: Int32Array): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/**
 * The stored form of a turn, given the sequence the previous turn left (its prompt followed by
 * its completion; empty before the first turn).
 */
export function toTurnTokens(
  previous: Int32Array,
  host: HostTokens,
  turn: number,
  sampling: { temperature: number; topP: number },
): TurnTokens {
  const prefixLength = commonPrefix(previous, host.promptIds);
  return {
    turn,
    promptLength: host.promptIds.length,
    prefixLength,
    // A view, not a copy: the tail is written to storage in this turn's transaction.
    promptTail: host.promptIds.subarray(prefixLength),
    completionIds: host.completionIds,
    logprobs: host.logprobs,
    consistent: prefixLength === previous.length,
    model: host.model,
    temperature: sampling.temperature,
    topP: sampling.topP,
  };
}

/**
 * The host's prompt followed by its completion as one array without a copy, when they already
 * lie so in one buffer (as the inference client reads them); null otherwise.
 */
export function joinedSequence(host: HostTokens): Int32Array | null {
  const { promptIds: prompt, completionIds: completion } = host;
  if (prompt.buffer !== completion.buffer) return null;
  if (completion.byteOffset !== prompt.byteOffset + prompt.byteLength) return null;
  return new Int32Array(prompt.buffer, prompt.byteOffset, prompt.length + completion.length);
}

/** The sequence a turn leaves for the next one: its prompt followed by its completion. */
export function sequenceAfter(previous: Int32Array, turn: TurnTokens): Int32Array {
  const sequence = new Int32Array(
    turn.prefixLength + turn.promptTail.length + turn.completionIds.length,
  );
  sequence.set(previous.subarray(0, turn.prefixLength));
  sequence.set(turn.promptTail, turn.prefixLength);
  sequence.set(turn.completionIds, turn.prefixLength + turn.promptTail.length);
  return sequence;
}

/** Prefix breaks of an episode's turns: turns whose prompt did not extend the last sequence. */
export function prefixBreaks(turns: readonly TurnTokens[]): number {
  return turns.filter((t) => !t.consistent).length;
}

/** The sum of a turn's completion logprobs: the log-probability of the whole action. */
export function logprobSum(turn: Pick<TurnTokens, "logprobs">): number {
  let sum = 0;
  for (const lp of turn.logprobs) sum += lp;
  return sum;
}
