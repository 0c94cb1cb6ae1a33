/**
 * Supervised rows for SFT: the episode's opening as the prompt, `sftCompletion` as the target,
 * rendered in ChatML with the supervised character spans. Assistant bodies are supervised,
 * observations (user/tool/system turns) are masked.
 */
import type { EnvironmentMultiTurn } from "./environment";
import { openEpisode } from "./episode";
import { SftError } from "./errors";
import { parseTargetMessages, UnparseableSftTargetError } from "./sft-target";
import type { ChatMessage, TaskExample } from "./types";

export const RESERVED_TOKENS = ["<|im_start|>", "<|im_end|>"] as const;

export interface SftRow {
  exampleId: string;
  promptMessages: ChatMessage[];
  targetMessages: ChatMessage[];
  /** One flag per message of `promptMessages` then `targetMessages`: true where supervised. */
  mask: boolean[];
  /** ChatML rendering of the prompt and the target. */
  text: string;
  /** `[start, end)` character spans of `text` that carry loss, each ending after `<|im_end|>`. */
  spans: [number, number][];
  /** `role_aware` when the target parsed as messages; else the whole completion is supervised. */
  masking: "role_aware" | "completion_only";
  warnings: string[];
}

/** The string fields of a message that end up in the rendered text. */
function renderedFields(message: ChatMessage): [string, string][] {
  const fields: [string, string][] = [["content", message.content]];
  if (message.name !== undefined) fields.push(["name", message.name]);
  if (message.tool_call_id !== undefined) fields.push(["tool_call_id", message.tool_call_id]);
  for (const [i, call] of (message.tool_calls ?? []).entries()) {
    fields.push([`tool_calls[${i}].function.name`, call.function.name]);
    fields.push([`tool_calls[${i}].function.arguments`, call.function.arguments]);
  }
  return fields;
}

function rejectReservedTokens(where: string, field: string, text: string): void {
  const token = RESERVED_TOKENS.find((t) => text.includes(t));
  if (token !== undefined) {
    throw new SftError(`${where} field ${field} contains the reserved ChatML token "${token}"`);
  }
}

function checkMessages(exampleId: string, part: string, messages: readonly ChatMessage[]): void {
  for (const [i, message] of messages.entries()) {
    for (const [field, text] of renderedFields(message)) {
      rejectReservedTokens(
        `example "${exampleId}": ${part} message ${i} (${message.role})`,
        field,
        text,
      );
    }
  }
}

function messageBody(message: ChatMessage): string {
  const calls = (message.tool_calls ?? []).map(
    (c) =>
      `\n<tool_call>\n{"name": ${JSON.stringify(c.function.name)}, "arguments": ${c.function.arguments}}\n</tool_call>`,
  );
  return message.content + calls.join("");
}

/** Renders messages in ChatML; returns the text and the spans of the supervised messages. */
export function renderChatML(
  messages: readonly ChatMessage[],
  supervised: readonly boolean[],
): { text: string; spans: [number, number][] } {
  let text = "";
  const spans: [number, number][] = [];
  for (const [i, message] of messages.entries()) {
    text += `<|im_start|>${message.role}\n`;
    const start = text.length;
    text += `${messageBody(message)}<|im_end|>`;
    if (supervised[i]) spans.push([start, text.length]);
    text += "\n";
  }
  return { text, spans };
}

/**
 * A supervised row from a prompt and a target transcript: observations masked, assistant
 * bodies supervised. Throws `SftError` when a field holds a reserved ChatML token.
 */
export function transcriptSftRow(
  exampleId: string,
  promptMessages: readonly ChatMessage[],
  targetMessages: readonly ChatMessage[],
): SftRow {
  checkMessages(exampleId, "prompt", promptMessages);
  checkMessages(exampleId, "target", targetMessages);
  const mask = [
    ...promptMessages.map(() => false),
    ...targetMessages.map((m) => m.role === "assistant"),
  ];
  const { text, spans } = renderChatML([...promptMessages, ...targetMessages], mask);
  return {
    exampleId,
    promptMessages: [...promptMessages],
    targetMessages: [...targetMessages],
    mask,
    text,
    spans,
    masking: "role_aware",
    warnings: [],
  };
}

/** Builds one supervised row for `example` from its gold target; throws `SftError` when none can be built. */
export async function buildSftRow(
  env: EnvironmentMultiTurn,
  example: TaskExample,
  promptText: string,
): Promise<SftRow> {
  const promptMessages = await openEpisode(env, example, promptText);
  let targetMessages: ChatMessage[];
  try {
    targetMessages = parseTargetMessages(example, await env.sftCompletion(example));
  } catch (error) {
    if (!(error instanceof UnparseableSftTargetError)) throw error;
    checkMessages(example.id, "prompt", promptMessages);
    return completionOnlyRow(example, promptMessages, error);
  }
  return transcriptSftRow(example.id, promptMessages, targetMessages);
}

/** The fallback for a target that is not a transcript: supervise everything after the prompt. */
function completionOnlyRow(
  example: TaskExample,
  promptMessages: ChatMessage[],
  error: UnparseableSftTargetError,
): SftRow {
  rejectReservedTokens(`example "${example.id}": target`, "output", error.completionText);
  const prompt = renderChatML(promptMessages, []).text;
  const completion = `<|im_start|>assistant\n${error.completionText}<|im_end|>\n`;
  return {
    exampleId: example.id,
    promptMessages,
    targetMessages: [{ role: "assistant", content: error.completionText }],
    mask: [...promptMessages.map(() => false), true],
    text: prompt + completion,
    spans: [[prompt.length, prompt.length + completion.length]],
    masking: "completion_only",
    warnings: [
      `${error.message}; supervising the whole completion, observation masking is unproven`,
    ],
  };
}
