/**
 * The simulator's chat template and tokenizer: ChatML, as Qwen-family models render it, over a
 * real BPE vocabulary (cl100k_base, whose ids 100264 and 100265 are `<|im_start|>` and
 * `<|im_end|>`). The text is split on the special tokens first and each piece is encoded on its
 * own, as Hugging Face tokenizers do, so the ids are what a real host would send.
 *
 * `drop-reasoning` re-renders earlier assistant turns without their `<think>…</think>` block, as
 * Qwen3's template does for turns before the last user message: the prompt then no longer
 * starts with the tokens the model produced, which is the drift edgeroll must detect.
 */
import { decoder } from "gpt-tokenizer/BytePairEncodingCore";
import { decode, encode } from "gpt-tokenizer/encoding/cl100k_base";

export const IM_START = 100264;
export const IM_END = 100265;
const SPECIAL: Record<string, number> = { "<|im_start|>": IM_START, "<|im_end|>": IM_END };

/** The template's own tokens, which a host leaves out of the text it decodes for a client. */
export const isSpecialToken = (id: number) => id === IM_START || id === IM_END;

export type TemplateKind = "chatml" | "drop-reasoning";

export interface TemplateMessage {
  role: string;
  content: string;
  tool_calls?: { function: { name: string; arguments: string } }[];
}

/** Text to ids: special tokens split out first, each piece between them encoded alone. */
export function tokenize(text: string): number[] {
  const ids: number[] = [];
  for (const piece of text.split(/(<\|im_start\|>|<\|im_end\|>)/)) {
    if (piece === "") continue;
    const special = SPECIAL[piece];
    if (special !== undefined) ids.push(special);
    else ids.push(...encode(piece));
  }
  return ids;
}

/**
 * Ids to text, as a host decodes them: bytes that end mid-character come out as U+FFFD. The flush
 * matters: gpt-tokenizer decodes through one shared streaming TextDecoder and never flushes it, so
 * bytes left over by one decoding (a token slice that splits a character) would otherwise start
 * the next one, whatever it decodes.
 */
export function detokenize(ids: readonly number[]): string {
  return decode([...ids]) + decoder.decode();
}

const REASONING = /<think>[\s\S]*?<\/think>\s*/g;

/** What an assistant turn's content renders as: its text, and its tool calls as Qwen writes them. */
function assistantBody(message: TemplateMessage): string {
  const calls = (message.tool_calls ?? []).map(
    (c) =>
      `<tool_call>\n${JSON.stringify({ name: c.function.name, arguments: JSON.parse(c.function.arguments || "{}") })}\n</tool_call>`,
  );
  return [message.content, ...calls].filter(Boolean).join("\n");
}

/**
 * How a rendering ends, as vLLM's `add_generation_prompt` and `continue_final_message` choose:
 * with the generation prompt `<|im_start|>assistant\n` (what chat completions send the model),
 * closed after the last message, or with the last message left open for the model to continue.
 */
export type PromptEnding = "generation-prompt" | "closed" | "open-final";

/** The whole conversation, then (by default) the generation prompt `<|im_start|>assistant\n`. */
export function renderPrompt(
  messages: readonly TemplateMessage[],
  kind: TemplateKind,
  ending: PromptEnding = "generation-prompt",
): string {
  const lastUser = messages.findLastIndex((m) => m.role === "user");
  const parts = messages.map((m, i) => {
    let body = m.role === "assistant" ? assistantBody(m) : m.content;
    if (kind === "drop-reasoning" && m.role === "assistant" && i < lastUser)
      body = body.replace(REASONING, "");
    return `<|im_start|>${m.role}\n${body}<|im_end|>\n`;
  });
  const closed = parts.join("");
  if (ending === "closed") return closed;
  if (ending === "open-final") return closed.replace(/<\|im_end\|>\n$/, "");
  return `${closed}<|im_start|>assistant\n`;
}
