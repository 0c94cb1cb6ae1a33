/**
 * The simulator's chat template and tokenizer: ChatML, as Qwen-family models render it, over a
 * real BPE vocabulary (cl100k_base, whose ids 100264 and 100265 are `<|im_start|>` and
 * `<|im_end|>`). The text is split on the special tokens first and each piece is encoded on its
 * own, as Hugging Face tokenizers do, so the ids are what a real host would send.
 *
 * `drop-reasoning` re-renders earlier assistant turns without their `<think>…</think>` block, as
 * Qwen3's template does for turns before the last user message: the prompt then no longer
 * starts with the tokens the model produced, which is the drift edgeroll must detect.
 *
 * Tools render as Qwen2.5's template renders them (hermes.ts): offered tools in the system
 * prompt, an assistant's `tool_calls` as `<tool_call>` blocks after its text, and consecutive
 * `tool` messages as `<tool_response>` blocks in one user turn.
 */
import { decoder } from "gpt-tokenizer/BytePairEncodingCore";
import { decode, encode } from "gpt-tokenizer/encoding/cl100k_base";
import { DEFAULT_SYSTEM, hermesCall, type ToolSpec, toolResponse, toolsBlock } from "./hermes";

export const IM_START = 100264;
export const IM_END = 100265;
const SPECIAL: Record<string, number> = { "<|im_start|>": IM_START, "<|im_end|>": IM_END };

/** The template's own tokens, which a host leaves out of the text it decodes for a client. */
export const isSpecialToken = (id: number) => id === IM_START || id === IM_END;

export type TemplateKind = "chatml" | "drop-reasoning";

export interface TemplateMessage {
  role: string;
  content: string;
  tool_calls?: { id?: string; function: { name: string; arguments: string } }[];
  /** On a `tool` message, the call it answers (the template does not render it). */
  tool_call_id?: string;
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

const CLOSE = "<|im_end|>\n";
const REASONING = /<think>[\s\S]*?<\/think>\s*/g;

/**
 * A call's arguments as the template receives them: vLLM parses the wire's JSON string into an
 * object first, and makes one that is not an object, or not JSON at all, `{}`.
 */
function callArguments(json: string): unknown {
  try {
    const value: unknown = JSON.parse(json);
    return typeof value === "object" && value !== null && !Array.isArray(value) ? value : {};
  } catch {
    return {};
  }
}

/** What an assistant turn's content renders as: its text, and its tool calls as Qwen writes them. */
function assistantBody(message: TemplateMessage): string {
  const calls = (message.tool_calls ?? []).map((c) =>
    hermesCall(c.function.name, callArguments(c.function.arguments)),
  );
  return [message.content, ...calls].filter(Boolean).join("\n");
}

/**
 * How a rendering ends, as vLLM's `add_generation_prompt` and `continue_final_message` choose:
 * with the generation prompt `<|im_start|>assistant\n` (what chat completions send the model),
 * closed after the last message, or with the last message left open for the model to continue.
 */
export type PromptEnding = "generation-prompt" | "closed" | "open-final";

/** A conversation's blocks, each `<|im_start|>ROLE\nBODY<|im_end|>\n`, as Qwen renders them. */
function blocks(
  messages: readonly TemplateMessage[],
  kind: TemplateKind,
  tools: readonly ToolSpec[],
): string[] {
  const lastUser = messages.findLastIndex((m) => m.role === "user");
  const withSystem =
    tools.length > 0 && messages[0]?.role !== "system"
      ? [{ role: "system", content: DEFAULT_SYSTEM }, ...messages]
      : messages;
  const offset = withSystem.length - messages.length;
  const parts: string[] = [];
  for (const [i, m] of withSystem.entries()) {
    if (m.role === "tool") {
      // Replies to one action share a user turn: each opens it or joins the one before.
      const reply = toolResponse(m.content);
      const opened = withSystem[i - 1]?.role === "tool" ? parts.pop() : undefined;
      const turn = opened?.slice(0, -CLOSE.length) ?? "<|im_start|>user";
      parts.push(`${turn}${reply}${CLOSE}`);
      continue;
    }
    let body = m.role === "assistant" ? assistantBody(m) : m.content;
    if (m.role === "system" && i === 0 && tools.length > 0) body += toolsBlock(tools);
    if (kind === "drop-reasoning" && m.role === "assistant" && i - offset < lastUser)
      body = body.replace(REASONING, "");
    parts.push(`<|im_start|>${m.role}\n${body}<|im_end|>\n`);
  }
  return parts;
}

/** The whole conversation, then (by default) the generation prompt `<|im_start|>assistant\n`. */
export function renderPrompt(
  messages: readonly TemplateMessage[],
  kind: TemplateKind,
  ending: PromptEnding = "generation-prompt",
  tools: readonly ToolSpec[] = [],
): string {
  const closed = blocks(messages, kind, tools).join("");
  if (ending === "closed") return closed;
  if (ending === "open-final") return closed.replace(/<\|im_end\|>\n$/, "");
  return `${closed}<|im_start|>assistant\n`;
}
