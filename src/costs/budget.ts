/**
 * A run's budget, and the rule that applies it: once what the run has spent (landed and in
 * flight) has reached any limit, no new group of the run starts. Groups already in flight
 * finish, so a run can pass a limit by at most what it had in flight; that overshoot is
 * reported, never hidden. Raising the limit lets starts through again.
 */
import { z } from "zod";
import type { Spend } from "./spend";

/** The limits, as the API names them, and what each one bounds. */
export const BUDGET_LIMITS = {
  max_sampled_tokens: "sampledTokens",
  max_prompt_tokens: "promptTokens",
  max_usd: "usd",
  max_groups: "groups",
} as const satisfies Record<string, keyof Spend>;
export type BudgetLimit = keyof typeof BUDGET_LIMITS;

const tokens = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);

/**
 * `POST /v1/runs/:run_id/budget`: any of the limits; a limit given replaces the one set, `null`
 * removes it, one not named stays as it was.
 */
export const BudgetRequestSchema = z
  .strictObject({
    max_sampled_tokens: tokens.nullable().optional(),
    max_prompt_tokens: tokens.nullable().optional(),
    max_usd: z.number().nonnegative().max(1e12).nullable().optional(),
    max_groups: tokens.nullable().optional(),
  })
  .refine((body) => Object.keys(body).length > 0, {
    message: `name at least one of ${Object.keys(BUDGET_LIMITS).join(", ")} (null removes one)`,
  });
export type BudgetRequest = z.infer<typeof BudgetRequestSchema>;

/** The limits set on a run; null: that one is not limited. */
export type BudgetLimits = Record<BudgetLimit, number | null>;

export const NO_LIMITS: BudgetLimits = {
  max_sampled_tokens: null,
  max_prompt_tokens: null,
  max_usd: null,
  max_groups: null,
};

/** A limit the run has reached: how much it allows and how much was spent. */
export interface ReachedLimit {
  limit: BudgetLimit;
  max: number;
  spent: number;
}

/** Every limit the spend has reached, in the order the API lists them. */
export function reachedLimits(limits: BudgetLimits, spent: Spend): ReachedLimit[] {
  const reached: ReachedLimit[] = [];
  for (const [limit, key] of Object.entries(BUDGET_LIMITS) as [BudgetLimit, keyof Spend][]) {
    const max = limits[limit];
    if (max !== null && spent[key] >= max) reached.push({ limit, max, spent: spent[key] });
  }
  return reached;
}

/** Whether any limit is set (a run without one is never checked). */
export const hasLimits = (limits: BudgetLimits): boolean =>
  Object.values(limits).some((max) => max !== null);

/** Whether a limit bounds what only the group objects in flight know (tokens, money). */
export const needsInFlight = (limits: BudgetLimits): boolean =>
  limits.max_sampled_tokens !== null ||
  limits.max_prompt_tokens !== null ||
  limits.max_usd !== null;

const units: Record<BudgetLimit, (n: number) => string> = {
  max_sampled_tokens: (n) => `${n} sampled tokens`,
  max_prompt_tokens: (n) => `${n} prompt tokens`,
  max_usd: (n) => `$${n.toFixed(4)}`,
  max_groups: (n) => `${n} groups`,
};

/** What a refused start says: which limit, what it allows and what was spent. */
export function describeReached(runId: string, reached: readonly ReachedLimit[]): string {
  const parts = reached.map(
    (r) =>
      `${r.limit} is ${units[r.limit](r.max)} and the run has spent ${units[r.limit](r.spent)}`,
  );
  return `run "${runId}" has reached its budget: ${parts.join("; ")} (raise it with POST /v1/runs/${runId}/budget)`;
}
