/** The default SFT target: what `example.output` says the model should have written. */
import { z } from "zod";
import { describeZodError, SftError } from "./errors";
import { type ChatMessage, ChatMessageSchema, type TaskExample } from "./types";

/** The target exists but is not a transcript of chat messages; rows fall back to completion-only. */
export class UnparseableSftTargetError extends SftError {
  override name = "UnparseableSftTargetError";
  constructor(
    reason: string,
    /** The target as text, supervised whole in the completion-only fallback. */
    readonly completionText: string,
  ) {
    super(reason);
  }
}

const TargetMessagesSchema = z.array(ChatMessageSchema).min(1);

/**
 * A scalar `output` becomes one assistant message; `{messages: [...]}` or a bare list is the
 * target transcript itself.
 */
export function defaultSftCompletion(example: TaskExample): ChatMessage[] {
  const output = example.output;
  if (output === undefined || output === null) {
    throw new SftError(`example "${example.id}" has no output to use as an SFT target`);
  }
  if (typeof output === "string" || typeof output === "number" || typeof output === "boolean") {
    return [{ role: "assistant", content: String(output) }];
  }
  const list = Array.isArray(output)
    ? output
    : typeof output === "object" && "messages" in output
      ? output.messages
      : undefined;
  if (list === undefined) {
    throw new UnparseableSftTargetError(
      `example "${example.id}": output is neither a scalar, a message list nor {messages: [...]}`,
      JSON.stringify(output),
    );
  }
  return parseTargetMessages(example, list);
}

/** Validates a target transcript, whether it came from the default or an override. */
export function parseTargetMessages(example: TaskExample, list: unknown): ChatMessage[] {
  const parsed = TargetMessagesSchema.safeParse(list);
  if (!parsed.success) {
    throw new UnparseableSftTargetError(
      `example "${example.id}": target transcript is not a list of chat messages (${describeZodError(parsed.error)})`,
      typeof list === "string" ? list : JSON.stringify(list),
    );
  }
  return parsed.data;
}
