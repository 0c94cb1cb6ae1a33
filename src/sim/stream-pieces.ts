/**
 * How a stream hands out a choice's tokens, for chat and `/v1/completions` alike: two ids a
 * chunk, each chunk with the text those ids add. The text is the choice's own, sent as far as the
 * ids so far reach: so a stop string's tokens come and its text never does (vLLM holds back text
 * that may begin a stop string, and drops it once it is one), and a character whose bytes two
 * tokens share comes whole, in the chunk that completes it.
 */
import { detokenize } from "./chat-template";

export interface StreamPiece {
  /** The ids `choice.ids.slice(from, to)`. */
  from: number;
  to: number;
  /** What these ids add to the text streamed before them (the last piece sends all the rest). */
  text: string;
}

/** A decoded piece ends in U+FFFD where its last character's bytes are not all there yet. */
const UNFINISHED = /\uFFFD+$/;

/**
 * The first `count` of a choice's `ids` (chat sends the end-of-turn token apart), and its `text`,
 * which is what the ids spell or the start of it.
 */
export function streamPieces(
  choice: { ids: readonly number[]; text: string },
  count: number,
): StreamPiece[] {
  const pieces: StreamPiece[] = [];
  let sent = 0;
  // Ids decoded so far up to a whole character, and the length of their text: each piece decodes
  // only from there, so the stream costs one decoding of the ids, not one per chunk.
  let settled = 0;
  let settledLength = 0;
  for (let from = 0; from < count; from += 2) {
    const to = Math.min(from + 2, count);
    const tail = detokenize(choice.ids.slice(settled, to));
    const whole = tail.replace(UNFINISHED, "");
    const reach =
      to === count
        ? choice.text.length
        : Math.min(settledLength + whole.length, choice.text.length);
    if (whole.length === tail.length) {
      settled = to;
      settledLength += tail.length;
    }
    pieces.push({ from, to, text: choice.text.slice(sent, Math.max(sent, reach)) });
    sent = Math.max(sent, reach);
  }
  return pieces;
}
