/**
 * Token-in generation: each prompt is built from ids, never by re-rendering the transcript.
 * The next prompt is what the previous turn left (its prompt, then the sampled completion),
 * the template's closing of that assistant turn, then the environment's new messages as the
 * template renders them after an assistant turn, ending in the generation prompt (the
 * "bridge").
 *
 * Both are measured with the host's own template (`/tokenize`), against a fixed dummy
 * conversation (verl's `continuous_token.py`, prime-rl's bridge tokens):
 * - closing: render [user, assistant "ok"] without a generation prompt; the closing is every id
 *   after the reply's last occurrence (ChatML: `<|im_end|>`, `\n`).
 * - bridge: render [user, assistant "ok", ...new messages] with the generation prompt; the
 *   bridge is every id after the dummy reply and its closing.
 *
 * Where it can fail, and what happens then:
 * - A template that renders the dummy reply differently once messages follow it (changes its
 *   content, drops it): the reply and closing are not found, the episode ends
 *   `tokens_unavailable` naming this. (Re-rendering the *reasoning* of earlier turns, as Qwen3
 *   does, is harmless: the dummy reply has none, and the real turns are never re-rendered.)
 * - A model whose end-of-turn token is not the closing's first id (an EOS the template does not
 *   write): the whole closing follows it, so the sequence holds both.
 * - A completion cut by `max_completion_tokens` or a stop string: it has no end-of-turn token;
 *   the whole closing follows it, as the template would close the message. The ids of a stop
 *   string the model sampled stay in the sequence (mask 1, they were sampled), while the text
 *   the environment sees is the host's decoding without it, as in chat mode.
 * - Templates whose earlier messages change with later ones (a system prompt listing the turn
 *   count or the date): the model keeps seeing the first rendering. That is the point of token
 *   in, but such a conversation is one the template itself would never produce.
 */

/** The fixed conversation the seams are measured against. */
export const DUMMY_USER = { role: "user" as const, content: "edgeroll" };
export const DUMMY_REPLY = "ok";
export const DUMMY_CONVERSATION = [
  DUMMY_USER,
  { role: "assistant" as const, content: DUMMY_REPLY },
];

/** Where `needle` starts in `haystack` at or after `from` (searching backwards with `last`). */
export function indexOfIds(
  haystack: Int32Array,
  needle: Int32Array,
  { from = 0, last = false } = {},
): number {
  const matchesAt = (at: number) => {
    for (let j = 0; j < needle.length; j++) if (haystack[at + j] !== needle[j]) return false;
    return true;
  };
  if (last) {
    for (let at = haystack.length - needle.length; at >= from; at--) if (matchesAt(at)) return at;
  } else {
    for (let at = from; at + needle.length <= haystack.length; at++) if (matchesAt(at)) return at;
  }
  return -1;
}

export class TemplateSeamError extends Error {
  override name = "TemplateSeamError";
}

/**
 * The ids the template writes after an assistant turn's content.
 * `rendered`: the dummy conversation without a generation prompt; `reply`: the dummy reply's ids.
 */
export function closingOf(rendered: Int32Array, reply: Int32Array): Int32Array {
  const at = indexOfIds(rendered, reply, { last: true });
  const closing = at === -1 ? new Int32Array(0) : rendered.slice(at + reply.length);
  if (closing.length === 0)
    throw new TemplateSeamError(
      "the chat template does not end an assistant turn with ids of its own after the content",
    );
  return closing;
}

/**
 * The ids of messages that follow an assistant turn, up to and including the generation
 * prompt. `rendered`: the dummy conversation and those messages, with the generation prompt.
 */
export function bridgeOf(rendered: Int32Array, reply: Int32Array, closing: Int32Array): Int32Array {
  const seam = new Int32Array(reply.length + closing.length);
  seam.set(reply);
  seam.set(closing, reply.length);
  const at = indexOfIds(rendered, seam);
  if (at === -1)
    throw new TemplateSeamError(
      "the chat template renders an assistant turn differently once messages follow it: the environment's messages cannot be appended as ids",
    );
  return rendered.slice(at + seam.length);
}

/** The next prompt: the previous sequence, the closing its completion lacks, then the bridge. */
export function nextPrompt(
  previous: Int32Array,
  closing: Int32Array,
  bridge: Int32Array,
): Int32Array {
  // A completion that ended on its own ends with the closing's first id (`<|im_end|>`).
  const glue = previous.at(-1) === closing[0] ? closing.subarray(1) : closing;
  const ids = new Int32Array(previous.length + glue.length + bridge.length);
  ids.set(previous);
  ids.set(glue, previous.length);
  ids.set(bridge, previous.length + glue.length);
  return ids;
}
