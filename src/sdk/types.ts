/** Zod schemas for everything that crosses a wire; the TypeScript types are inferred from them. */
import { z } from "zod";

export const JsonObjectSchema = z.record(z.string(), z.unknown());
export type JsonObject = z.infer<typeof JsonObjectSchema>;

/** One row of a dataset: what the model is asked, the gold answer if any, and task data. */
export const TaskExampleSchema = z.strictObject({
  id: z.string().min(1).max(256),
  input: z.string(),
  output: z.unknown().optional(),
  metadata: JsonObjectSchema.optional(),
});
export type TaskExample = z.infer<typeof TaskExampleSchema>;

/** An OpenAI-style function call attached to an assistant message (native tool calling). */
export const ToolCallSchema = z.strictObject({
  id: z.string(),
  type: z.literal("function"),
  function: z.strictObject({ name: z.string().min(1), arguments: z.string() }),
});
export type ToolCall = z.infer<typeof ToolCallSchema>;

/**
 * A tool the model may call natively: an OpenAI function definition, its parameters a JSON
 * Schema object. The host renders these into the prompt and parses the model's calls.
 */
export const ToolDefinitionSchema = z.strictObject({
  type: z.literal("function"),
  function: z.strictObject({
    name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "letters, digits, _ and - only, at most 64"),
    description: z.string().max(4096).optional(),
    parameters: z
      .looseObject({ type: z.literal("object") })
      .optional()
      .describe("a JSON Schema object"),
    strict: z.boolean().optional(),
  }),
});
export type ToolDefinition = z.infer<typeof ToolDefinitionSchema>;

/** An episode's tools: none, or distinct names (a host cannot tell two same-named tools apart). */
export const ToolDefinitionsSchema = z
  .array(ToolDefinitionSchema)
  .max(128)
  .refine((tools) => new Set(tools.map((t) => t.function.name)).size === tools.length, {
    message: "tool names must be distinct",
  })
  // They travel with every generation and land with the group: kept well inside a row's limit.
  .refine((tools) => JSON.stringify(tools).length <= 256 * 1024, {
    message: "at most 256 KB of tool definitions, as JSON",
  });

export const ROLES = ["system", "user", "assistant", "tool"] as const;
export type Role = (typeof ROLES)[number];

/** A chat message in OpenAI's wire shape (snake_case), plus edgeroll's `metadata`. */
export const ChatMessageSchema = z
  .strictObject({
    role: z.enum(ROLES),
    content: z.string(),
    name: z.string().min(1).optional(),
    tool_calls: z.array(ToolCallSchema).optional(),
    tool_call_id: z.string().min(1).optional(),
    metadata: JsonObjectSchema.optional(),
  })
  .refine((m) => m.tool_calls === undefined || m.role === "assistant", {
    message: "only assistant messages may carry tool_calls",
    path: ["tool_calls"],
  })
  .refine((m) => m.tool_call_id === undefined || m.role === "tool", {
    message: "only tool messages may carry tool_call_id",
    path: ["tool_call_id"],
  });
export type ChatMessage = z.infer<typeof ChatMessageSchema>;

/** One part of a rubric's grade (rubric.ts): a weight of 0 is a metric, never rewarded. */
export const RewardComponentSchema = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, "letters, digits, _ - . only, at most 64"),
  value: z.number(),
  weight: z.number(),
});
export type RewardComponent = z.infer<typeof RewardComponentSchema>;

/**
 * A grade. `success` is `score >= threshold`; without a threshold success is unknown. With
 * `components` (a rubric's), the score must be their weighted sum: every part is accounted for.
 */
export const RewardResultSchema = z
  .strictObject({
    score: z.number(),
    threshold: z.number().optional(),
    metadata: JsonObjectSchema.default({}),
    components: z
      .array(RewardComponentSchema)
      .min(1)
      .max(64)
      .refine((cs) => new Set(cs.map((c) => c.name)).size === cs.length, {
        message: "component names must be distinct",
      })
      .optional(),
  })
  .superRefine((reward, ctx) => {
    if (reward.components === undefined) return;
    const sum = reward.components.reduce((total, c) => total + c.weight * c.value, 0);
    const scale = reward.components.reduce((total, c) => total + Math.abs(c.weight * c.value), 1);
    if (Math.abs(reward.score - sum) > 1e-9 * scale)
      ctx.addIssue({
        code: "custom",
        path: ["score"],
        message: `${reward.score} is not the weighted sum of its components (${sum})`,
      });
  });
export type RewardResult = z.infer<typeof RewardResultSchema>;
export type RewardResultInput = z.input<typeof RewardResultSchema>;

export function rewardSuccess(reward: RewardResult): boolean | null {
  return reward.threshold === undefined ? null : reward.score >= reward.threshold;
}

/** What `stepEpisode` returns: only the environment's new messages, never the action again. */
export const EnvironmentStepResultSchema = z.strictObject({
  done: z.boolean().default(true),
  messages: z.array(ChatMessageSchema).default([]),
  finalResponseText: z.string().nullish(),
  metadata: JsonObjectSchema.default({}),
});
export type EnvironmentStepResult = z.infer<typeof EnvironmentStepResultSchema>;
export type EnvironmentStepResultInput = z.input<typeof EnvironmentStepResultSchema>;

/** A message of the episode after the opening prompt: a sampled action or an environment reply. */
export const EnvironmentTurnSchema = z.strictObject({
  role: z.enum(ROLES),
  content: z.string(),
  name: z.string().nullish(),
  metadata: JsonObjectSchema.default({}),
});
export type EnvironmentTurn = z.infer<typeof EnvironmentTurnSchema>;

/** A finished episode as the scorer sees it. */
export const EnvironmentEpisodeSchema = z.strictObject({
  messages: z.array(ChatMessageSchema),
  responseText: z.string(),
  turns: z.array(EnvironmentTurnSchema).default([]),
  metadata: JsonObjectSchema.default({}),
  latencyMs: z.number().int().nonnegative().nullish(),
  totalTokens: z.number().int().nonnegative().nullish(),
});
export type EnvironmentEpisode = z.infer<typeof EnvironmentEpisodeSchema>;

export type MaybePromise<T> = T | Promise<T>;
