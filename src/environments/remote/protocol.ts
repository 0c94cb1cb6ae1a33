/**
 * The remote environment protocol (docs/remote-env-protocol.md): JSON over HTTP, transcript
 * first, stateless. One schema per message, in the wire's snake_case; edgeroll validates every
 * answer against these before the SDK validates it again, as it does a built-in environment's.
 */
import { z } from "zod";
import {
  ChatMessageSchema,
  EnvironmentTurnSchema,
  JsonObjectSchema,
  RewardComponentSchema,
  TaskExampleSchema,
  ToolDefinitionsSchema,
} from "../../sdk";

export const InfoResponseSchema = z.object({
  name: z.string().min(1),
  version: z.string(),
  kind: z.enum(["multi_turn", "single_turn"]),
  max_score_concurrency: z.number().int().positive().optional(),
});
export type InfoResponse = z.infer<typeof InfoResponseSchema>;

export const StartRequestSchema = z.strictObject({
  example: TaskExampleSchema,
  prompt_text: z.string(),
});
export type StartRequest = z.infer<typeof StartRequestSchema>;

export const StartResponseSchema = z.object({
  messages: z.array(ChatMessageSchema).min(1),
  max_turns: z.number().int().positive(),
  /**
   * Native tool calling: the OpenAI function tools every generation of the episode offers;
   * absent (or empty) for a text-only environment.
   */
  tools: ToolDefinitionsSchema.optional(),
});

export const StepRequestSchema = z.strictObject({
  example: TaskExampleSchema,
  /** The whole transcript, ending with the sampled action being stepped. */
  messages: z.array(ChatMessageSchema).min(1),
  assistant_response: z.string(),
  episode_id: z.string().min(1),
  /** 0-based index of the action being stepped. */
  turn: z.number().int().nonnegative(),
});
export type StepRequest = z.infer<typeof StepRequestSchema>;

export const StepResponseSchema = z.object({
  done: z.boolean(),
  /** The environment's new messages only (the transcript already ends with the action). */
  messages: z.array(ChatMessageSchema),
  final_response_text: z.string().nullish(),
  metadata: JsonObjectSchema.default({}),
});

export const ScoredEpisodeSchema = z.strictObject({
  messages: z.array(ChatMessageSchema),
  response_text: z.string(),
  turns: z.array(EnvironmentTurnSchema),
  metadata: JsonObjectSchema,
});

export const ScoreRequestSchema = z.strictObject({
  example: TaskExampleSchema,
  episodes: z.array(ScoredEpisodeSchema).min(1),
});
export type ScoreRequest = z.infer<typeof ScoreRequestSchema>;

export const ScoreResponseSchema = z.object({
  results: z.array(
    z.object({
      score: z.number(),
      threshold: z.number().nullish(),
      metadata: JsonObjectSchema.default({}),
      /** A rubric's parts; the score must be their weighted sum. */
      components: z.array(RewardComponentSchema).nullish(),
    }),
  ),
});

export const ErrorBodySchema = z.object({
  error: z.object({
    code: z.string(),
    message: z.string(),
    /**
     * `example_rejected` (a 422 from `/start`): each field of the example the environment cannot
     * play, by its dotted path in the example (`metadata.secret`).
     */
    details: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
  }),
});

/** Every message by the name the protocol document gives it, for `docs/remote-env-schema/`. */
export const PROTOCOL_MESSAGES = {
  "info.response": InfoResponseSchema,
  "start.request": StartRequestSchema,
  "start.response": StartResponseSchema,
  "step.request": StepRequestSchema,
  "step.response": StepResponseSchema,
  "score.request": ScoreRequestSchema,
  "score.response": ScoreResponseSchema,
  error: ErrorBodySchema,
} as const;
