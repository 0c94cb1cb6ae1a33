/**
 * How an episode ends, defined once: the states it passes through, and every end reason, each
 * bound to the state it ends in. Below the database, so D1's columns are typed by the same enums
 * the group object records. Code names reasons through `END`; the strings themselves are data
 * (D1 rows, the API, SQL views).
 */
import { z } from "zod";

export const EpisodeStateSchema = z.enum([
  "opening",
  "generating",
  "stepping",
  "completed",
  "truncated",
  "failed",
]);
export type EpisodeState = z.infer<typeof EpisodeStateSchema>;

/** The states an episode ends in: the only ones a landed episode has. */
export const EndStateSchema = EpisodeStateSchema.extract(["completed", "truncated", "failed"]);
export type EndState = z.infer<typeof EndStateSchema>;
export const TERMINAL_STATES: readonly EpisodeState[] = EndStateSchema.options;

/** It ran its course: the environment said done, or the action budget ran out. */
export const CompletedReasonSchema = z.enum(["done", "max_turns"]);
/** It no longer fits: the host said so (`context_length`), or edgeroll's budget did. */
export const TruncatedReasonSchema = z.enum(["context_length", "context_budget"]);
/** Something failed, attributed to the one boundary that did. */
export const FailureReasonSchema = z.enum([
  // the inference host
  "generation_timeout",
  "inference_rejected",
  "inference_unavailable",
  "inference_malformed",
  "redispatch_limit",
  "tokens_unavailable",
  // the teacher host (on-policy distillation)
  "teacher_failed",
  // the environment
  "env_error",
  "env_unavailable",
  "step_timeout",
  "step_unavailable",
  "score_error",
  // the judge model a score hook asked (no grade after its retries; a re-score may give one)
  "judge_error",
  // the trainer: its policy moved more than the run's max_lag past the group's (async RL)
  "stale_policy",
  // edgeroll itself
  "internal_error",
]);
export type CompletedReason = z.infer<typeof CompletedReasonSchema>;
export type TruncatedReason = z.infer<typeof TruncatedReasonSchema>;
export type FailureReason = z.infer<typeof FailureReasonSchema>;

export const EndReasonSchema = z.enum([
  ...CompletedReasonSchema.options,
  ...TruncatedReasonSchema.options,
  ...FailureReasonSchema.options,
]);
export type EndReason = z.infer<typeof EndReasonSchema>;

/** Every end reason by name: `END.generation_timeout`. */
export const END = EndReasonSchema.enum;
