/**
 * A chat message as clients send it (OpenAI's shape), and what the chat template reads of it; and
 * a tool a request offers for native calls.
 */
import { z } from "zod";
import type { TemplateMessage } from "./chat-template";

export const WireMessageSchema = z
  .object({
    role: z.string(),
    content: z.string().nullish(),
    tool_calls: z
      .array(
        z
          .object({
            id: z.string().optional(),
            function: z.object({ name: z.string(), arguments: z.string() }),
          })
          .loose(),
      )
      .nullish(),
    tool_call_id: z.string().nullish(),
  })
  .loose();
export type WireMessage = z.infer<typeof WireMessageSchema>;

/** One of a request's `tools`: an OpenAI function definition. */
export const WireToolSchema = z
  .object({
    type: z.literal("function").default("function"),
    function: z
      .object({
        name: z.string().min(1),
        description: z.string().nullish(),
        parameters: z.record(z.string(), z.unknown()).nullish(),
        strict: z.boolean().nullish(),
      })
      .loose(),
  })
  .loose();

export function templateMessages(messages: readonly WireMessage[]): TemplateMessage[] {
  return messages.map((m) => ({
    role: m.role,
    content: m.content ?? "",
    ...(m.tool_calls ? { tool_calls: m.tool_calls } : {}),
    ...(m.tool_call_id ? { tool_call_id: m.tool_call_id } : {}),
  }));
}
