/** A chat message as clients send it (OpenAI's shape), and what the chat template reads of it. */
import { z } from "zod";
import type { TemplateMessage } from "./chat-template";

export const WireMessageSchema = z
  .object({
    role: z.string(),
    content: z.string().nullish(),
    tool_calls: z
      .array(z.object({ function: z.object({ name: z.string(), arguments: z.string() }) }).loose())
      .nullish(),
  })
  .loose();
export type WireMessage = z.infer<typeof WireMessageSchema>;

export function templateMessages(messages: readonly WireMessage[]): TemplateMessage[] {
  return messages.map((m) => ({
    role: m.role,
    content: m.content ?? "",
    ...(m.tool_calls ? { tool_calls: m.tool_calls } : {}),
  }));
}
