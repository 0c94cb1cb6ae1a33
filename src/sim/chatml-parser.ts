/**
 * A ChatML prompt read back into messages, for `/v1/completions`: the client sends ids, the
 * simulator's player reads a conversation. `<|im_start|>ROLE\nCONTENT<|im_end|>\n` is one
 * message; a last block with no `<|im_end|>` is the turn the model is asked to continue (usually
 * an empty `<|im_start|>assistant\n`). Tool calls and replies stay in the text, as rendered.
 */
import { toolNamesIn } from "./hermes";
import type { SimMessage } from "./policies";

export interface ParsedPrompt {
  /** The closed messages, in order. */
  messages: SimMessage[];
  /** The last block, when the prompt leaves it open for the model. */
  open: SimMessage | null;
  /** The tools the system prompt offers (the template's `<tools>` block), by name. */
  tools: string[];
}

const START = "<|im_start|>";
const END = "<|im_end|>";

export function parseChatML(text: string): ParsedPrompt {
  const [before = "", ...blocks] = text.split(START);
  // Text outside any block is what a bare completion prompt is: someone's words to answer.
  const messages: SimMessage[] = before.trim() === "" ? [] : [{ role: "user", content: before }];
  let open: SimMessage | null = null;
  for (const [i, block] of blocks.entries()) {
    const closedAt = block.indexOf(END);
    const body = closedAt === -1 ? block : block.slice(0, closedAt);
    const newline = body.indexOf("\n");
    const message = {
      role: newline === -1 ? body : body.slice(0, newline),
      content: newline === -1 ? "" : body.slice(newline + 1),
    };
    if (closedAt === -1 && i === blocks.length - 1) open = message;
    else messages.push(message);
  }
  const system = messages[0]?.role === "system" ? messages[0].content : "";
  return { messages, open, tools: toolNamesIn(system) };
}
