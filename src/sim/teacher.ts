/**
 * The `teacher` model: how likely a perfect player finds each token of a prompt, for
 * distillation-style scoring with `prompt_logprobs`. Inside an assistant message's content (its
 * closing `<|im_end|>` included), a token scores high while the message so far is exactly what
 * the scripted player says at temperature 0 to the conversation before it, and low from the first
 * token off that path; every other token (system and user text, the template's own) scores a
 * fixed middling value. So a student that plays well is scored near its own logprobs, and one
 * that plays badly is scored low from its first mistake on.
 */

import { seededRandom } from "../utils/random";
import { detokenize, IM_END, IM_START, tokenize } from "./chat-template";
import { parseChatML } from "./chatml-parser";
import { actionText } from "./completion";
import type { Directives } from "./directives";

export interface TokenScore {
  logprob: number;
  /** 1 when the token is the one the scorer expected most. */
  rank: number;
  /** The token the scorer expected there instead, and its logprob, when it knows one. */
  expected: { id: number; logprob: number } | null;
}

const ON_PATH: TokenScore = { logprob: Math.log(0.9), rank: 1, expected: null };
const CONTEXT: TokenScore = { logprob: Math.log(0.5), rank: 1, expected: null };
const OFF_PATH = Math.log(0.05);

/**
 * The perfect player's whole turn after the prompt `before` (ids), in tokens. A fixed seed,
 * because even at temperature 0 a player may break a tie at random (tool-agent picking among
 * orders the request does not name).
 */
function perfectTurn(before: readonly number[], directives: Directives): number[] {
  const { messages, open, tools } = parseChatML(detokenize(before));
  const conversation = open === null ? messages : [...messages, open];
  const ask = { messages: conversation, temperature: 0, tools, native: tools.length > 0 };
  return [...tokenize(actionText(ask, seededRandom(0), directives)), IM_END];
}

/** Where a block's header (`<|im_start|>ROLE\n`) ends, and its role; null if it never does. */
function header(ids: readonly number[], start: number): { role: string; end: number } | null {
  for (let at = start + 1; at < ids.length && ids[at] !== IM_END; at++) {
    const text = detokenize(ids.slice(start + 1, at + 1));
    const newline = text.indexOf("\n");
    if (newline !== -1) return { role: text.slice(0, newline), end: at };
  }
  return null;
}

/** One score per prompt position (vLLM reports none for the first; it is scored anyway). */
export function teacherScores(ids: readonly number[], directives: Directives): TokenScore[] {
  const scores: TokenScore[] = ids.map(() => CONTEXT);
  for (let start = 0; start < ids.length; start++) {
    if (ids[start] !== IM_START) continue;
    const head = header(ids, start);
    if (head === null || head.role !== "assistant") continue;
    const perfect = perfectTurn(ids.slice(0, start), directives);
    let onPath = true;
    for (let at = head.end + 1, j = 0; at < ids.length; at++, j++) {
      const id = ids[at];
      const expected = perfect[j];
      if (onPath && id !== expected) {
        onPath = false;
        const known = expected === undefined ? null : { id: expected, logprob: ON_PATH.logprob };
        scores[at] = { logprob: OFF_PATH, rank: 2, expected: known };
      } else scores[at] = onPath ? ON_PATH : { logprob: OFF_PATH, rank: 2, expected: null };
      if (id === IM_END) break; // the closing token is the content's last
    }
  }
  return scores;
}
