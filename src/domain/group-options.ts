/**
 * The choices a group's request makes, as enums: the request validates them (rollout/group-spec.ts),
 * D1's columns are typed by them (db/schema.ts), and the views answer with them.
 */
import { z } from "zod";

/** Whether every turn of an episode shares its advantage, or each turn has its own. */
export const CreditAssignmentSchema = z.enum(["per_episode", "per_turn"]);
export type CreditAssignment = z.infer<typeof CreditAssignmentSchema>;

/** Group-relative advantage: the score minus the group's mean, or divided by its std too. */
export const AdvantageSchema = z.enum(["mean", "mean_std"]);
export type Advantage = z.infer<typeof AdvantageSchema>;

/** Whether to ask the host for token ids and logprobs, and whether an episode needs them. */
export const TokensSchema = z.enum(["auto", "required", "off"]);
export type Tokens = z.infer<typeof TokensSchema>;

/** How a prompt reaches the host: as chat messages it renders, or as token ids. */
export const GenerationSchema = z.enum(["chat", "tokens"]);
export type Generation = z.infer<typeof GenerationSchema>;

/** `grpo`, or `opd`: on-policy distillation from a teacher. */
export const AlgorithmSchema = z.enum(["grpo", "opd"]);
export type Algorithm = z.infer<typeof AlgorithmSchema>;

/**
 * `train`: its episodes feed the trainer. `eval`: it measures a pinned policy version; never
 * leased, never cancelled as stale, and it lands where SQL's `eval_results` reads it.
 */
export const GroupKindSchema = z.enum(["train", "eval"]);
export type GroupKind = z.infer<typeof GroupKindSchema>;

/**
 * What becomes of an episode whose last sampled action hit its token cap (finish reason
 * `length`): `keep` trains on it as on any other, `mask` lands it with advantage 0 and an
 * all-zero sample mask, `filter` keeps it out of leases. Under both it takes no part in the
 * group's baseline (domain/overlong.ts).
 */
export const OverlongSchema = z.enum(["keep", "mask", "filter"]);
export type Overlong = z.infer<typeof OverlongSchema>;
