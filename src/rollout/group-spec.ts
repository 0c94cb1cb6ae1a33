/** What a rollout group is asked to do: the validated request, persisted as the group's spec. */
import { z } from "zod";
import {
  AdvantageSchema,
  AlgorithmSchema,
  CreditAssignmentSchema,
  GenerationSchema,
  GroupKindSchema,
  OverlongSchema,
  TokensSchema,
} from "../domain/group-options";
import { TaskExampleSchema } from "../sdk";

export const SamplingSchema = z.strictObject({
  model: z.string().min(1).max(256),
  temperature: z.number().min(0).max(5).default(1),
  top_p: z.number().gt(0).max(1).default(1),
  /** Per action (one tool call or one reply), not per episode. */
  max_completion_tokens: z.number().int().min(1).max(262_144).default(1024),
  stop: z.union([z.string().min(1), z.array(z.string().min(1)).min(1).max(8)]).optional(),
  /** Makes sampling reproducible: each generation gets a seed derived from this one. */
  seed: z
    .number()
    .int()
    .min(0)
    .max(2 ** 31 - 1)
    .optional(),
});
export type Sampling = z.infer<typeof SamplingSchema>;

/** A run id: what `run_id` takes, and what a run's routes accept in their path. */
export const RUN_ID_PATTERN = /^[A-Za-z0-9][\w.:-]{0,127}$/;
export const RUN_ID_RULE = "letters, digits and . _ : - only, at most 128";

/** The request's fields, shared by what a caller sends and what a running group keeps. */
const REQUEST_FIELDS = {
  env: z.string().min(1).max(128),
  example: TaskExampleSchema,
  /** A group of 1 is for evaluation or data collection: it carries no advantage. */
  group_size: z.number().int().min(1).max(256),
  prompt_text: z.string().max(200_000).default(""),
  run_id: z.string().regex(RUN_ID_PATTERN, RUN_ID_RULE).default("default"),
  /** The policy that samples the group; by default the run's (POST /v1/runs/:id/policy), else 0. */
  policy_version: z
    .number()
    .int()
    .min(0)
    .max(2 ** 31 - 1)
    .optional(),
  credit_assignment: CreditAssignmentSchema.default("per_episode"),
  advantage: AdvantageSchema.default("mean"),
  sampling: SamplingSchema,
  /** Must hold the system prompt plus the whole running transcript. */
  max_context_tokens: z.number().int().min(64).max(2_097_152).default(32_768),
  /**
   * Token-exact episodes: `auto` asks the host for token ids and logprobs and records them
   * when it sends them; `required` fails an episode whose host does not (`tokens_unavailable`);
   * `off` does not ask.
   */
  tokens: TokensSchema.default("auto"),
  /**
   * `chat`: the host renders the transcript each turn (`/chat/completions`). `tokens`: edgeroll
   * sends the prompt as ids (`/completions`): the previous prompt, the completion, then the
   * environment's new messages as the template renders them — never re-rendered, so no
   * prefix breaks (src/tokens/token-in.ts).
   */
  generation: GenerationSchema.default("chat"),
  /** `opd`: on-policy distillation; a teacher scores the student's own tokens after each episode. */
  algorithm: AlgorithmSchema.default("grpo"),
  teacher: z.strictObject({ model: z.string().min(1).max(256) }).optional(),
  /**
   * `eval` measures the `policy_version` it names (required): never leased by a trainer, never
   * cancelled as stale, and served first within EVAL_SHARE of each host (docs/architecture.md).
   */
  kind: GroupKindSchema.default("train"),
  /**
   * The environment version the group must run (`version` in its class or `/info`): a 409 when
   * the environment declares another. Omitted, the declared one is filled in as the group starts.
   */
  env_version: z.string().min(1).max(128).optional(),
  /**
   * What becomes of an episode whose last action hit `max_completion_tokens`: `keep` (as any
   * other), `mask` (advantage 0, all-zero sample mask) or `filter` (never leased); under both
   * it is left out of the group's baseline (docs/architecture.md, "Over-long episodes").
   */
  overlong: OverlongSchema.default("keep"),
};

export const StartGroupRequestSchema = z
  .strictObject(REQUEST_FIELDS)
  .superRefine((r, ctx) => {
    const problem = (path: (string | number)[], message: string) =>
      ctx.addIssue({ code: "custom", path, message });
    if (r.kind === "eval" && r.policy_version === undefined)
      problem(
        ["policy_version"],
        'required with kind "eval": an evaluation measures one named policy version',
      );
    if (r.sampling.max_completion_tokens >= r.max_context_tokens)
      problem(["sampling", "max_completion_tokens"], "must be smaller than max_context_tokens");
    if (r.generation === "tokens" && r.tokens === "off")
      problem(
        ["generation"],
        'generation "tokens" builds each prompt from the host\'s token ids: it cannot run with tokens: "off"',
      );
    if (r.algorithm === "opd") {
      if (r.teacher === undefined)
        problem(["teacher"], 'required with algorithm "opd": {"model": "<teacher model>"}');
      if (r.tokens === "off")
        problem(["tokens"], 'algorithm "opd" scores the student\'s token ids: it needs tokens');
      if (r.credit_assignment === "per_turn")
        problem(
          ["credit_assignment"],
          'algorithm "opd" trains on per-token teacher logprobs: per_turn credit does not apply',
        );
    } else if (r.teacher !== undefined) problem(["teacher"], 'only with algorithm "opd"');
  })
  // Both need every turn's ids: token-in builds each prompt from them, and an episode the
  // teacher cannot score is no use to distillation.
  .transform((r) =>
    r.algorithm === "opd" || r.generation === "tokens" ? { ...r, tokens: "required" as const } : r,
  );
/** What a caller asked for, validated; `policy_version` may still be the run's to fill in. */
export type AskedGroupRequest = z.infer<typeof StartGroupRequestSchema>;

/**
 * A group's request as it runs, every default filled in and its policy version known: what its
 * object keeps in its spec and parses again whenever it wakes. A field added since the group
 * started takes its default (a group from before token-in has no `generation`: it is `chat`);
 * one dropped since is ignored.
 */
export const GroupRequestSchema = z.object({
  ...REQUEST_FIELDS,
  policy_version: REQUEST_FIELDS.policy_version.unwrap().default(0),
});
export type StartGroupRequest = z.infer<typeof GroupRequestSchema>;

/** The request with its policy version: the one asked for, else the run's, else 0. */
export function withPolicyVersion(
  asked: AskedGroupRequest,
  runVersion: number | null = null,
): StartGroupRequest {
  return { ...asked, policy_version: asked.policy_version ?? runVersion ?? 0 };
}

/** A group as its object keeps it: parsed from storage on every wake, never cast. */
export const GroupSpecSchema = z.object({
  groupId: z.string(),
  request: GroupRequestSchema,
  /** SHA-256 of the canonical request: a retried POST must match it. */
  requestHash: z.string(),
  idempotencyKey: z.string().nullable(),
  createdAt: z.string(),
  /** The principal (token digest prefix) that started it, for its token's in-flight quota. */
  startedBy: z.string().nullable().default(null),
});
export type GroupSpec = z.infer<typeof GroupSpecSchema>;

export function episodeId(groupId: string, index: number): string {
  return `${groupId}-e${index}`;
}

/** The seed for one generation: distinct per episode and turn, reproducible from the group's. */
export function generationSeed(
  sampling: Sampling,
  episode: number,
  turn: number,
): number | undefined {
  if (sampling.seed === undefined) return undefined;
  return (sampling.seed * 1_000_003 + episode * 10_007 + turn) % 2 ** 31;
}
