/**
 * The ids a simulated host speaks on the wire. Inside, the simulator always works in its own
 * tokenizer's ids (cl100k's); only what crosses the wire is translated, so `foreign-vocab` can
 * play a host whose tokenizer numbers the same text differently without changing how it plays.
 */
import { detokenize, isSpecialToken } from "./chat-template";
import type { Directives } from "./directives";

export interface Vocabulary {
  /** The simulator's ids as this host sends them. */
  toWire(ids: readonly number[]): number[];
  /** Ids a client sent, as the simulator's own; an id this host does not know is left invalid. */
  fromWire(ids: readonly number[]): number[];
}

const OWN: Vocabulary = { toWire: (ids) => [...ids], fromWire: (ids) => [...ids] };

/**
 * Another tokenizer, as simply as one can differ: every ordinary id one higher, the special
 * tokens where they were. Enough for a probe text tokenized on two hosts to disagree, which is
 * what a tokenizer check must catch; not a model of any real vocabulary.
 */
const FOREIGN: Vocabulary = {
  toWire: (ids) => ids.map((id) => (isSpecialToken(id) ? id : id + 1)),
  fromWire: (ids) => ids.map((id) => (isSpecialToken(id) ? id : id - 1)),
};

export function vocabularyFor(directives: Directives): Vocabulary {
  return directives.foreignVocab ? FOREIGN : OWN;
}

/** Where the first id the tokenizer cannot decode is, or -1: vLLM refuses such ids with a 400. */
export function firstUnknown(ids: readonly number[]): number {
  return ids.findIndex((id) => {
    try {
      detokenize([id]);
      return false;
    } catch {
      return true;
    }
  });
}

/** vLLM's message for an id outside the vocabulary. */
export const outOfVocabulary = (id: number) => `Token id ${id} is out of vocabulary`;
