/**
 * vLLM's `prompt_logprobs`: one entry per prompt position, `null` for the first (nothing comes
 * before it), each other keyed by the token's id (as a string: JSON keys are strings) with its
 * logprob, rank and text. With k > 0 vLLM adds the k likeliest tokens; the simulator knows at
 * most one other (the teacher's expected token where the prompt left its path), so it adds that.
 *
 * The plain model's values are arbitrary but honest about what they are: finite, and the same
 * for the same ids, drawn from each token and the one before it. `teacher` scores as teacher.ts.
 */

import { hashString } from "../utils/random";
import { detokenize } from "./chat-template";
import type { Directives } from "./directives";
import { type TokenScore, teacherScores } from "./teacher";
import type { Vocabulary } from "./vocabulary";

export type PromptLogprob = Record<
  string,
  { logprob: number; rank: number; decoded_token: string }
> | null;

/** A plain model's score: a probability in [0.05, 0.95], hashed from a token and the one before. */
function plainScores(ids: readonly number[]): TokenScore[] {
  return ids.map((id, i) => {
    const p = 0.05 + 0.9 * (hashString(`${ids[i - 1]}:${id}`) / 2 ** 32);
    return { logprob: Math.log(p), rank: p >= 0.5 ? 1 : 2, expected: null };
  });
}

/** `ids` are the simulator's own; the keys are as this host's vocabulary sends them. */
export function promptLogprobs(
  ids: readonly number[],
  k: number,
  directives: Directives,
  vocabulary: Vocabulary,
): PromptLogprob[] {
  const scores = directives.teacher ? teacherScores(ids, directives) : plainScores(ids);
  const key = (id: number) => String(vocabulary.toWire([id])[0]);
  return ids.map((id, i) => {
    const score = scores[i];
    if (i === 0 || score === undefined) return null;
    const entry = {
      [key(id)]: { logprob: score.logprob, rank: score.rank, decoded_token: detokenize([id]) },
    };
    const { expected } = score;
    if (k > 0 && expected !== null && expected.id !== id)
      entry[key(expected.id)] = {
        logprob: expected.logprob,
        rank: 1,
        decoded_token: detokenize([expected.id]),
      };
    return entry;
  });
}
