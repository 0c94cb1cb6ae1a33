/** A run's budget in D1 (`run_budgets`): its reads and writes only (the rule is src/costs/'s). */
import { eq } from "drizzle-orm";
import { drizzle } from "drizzle-orm/d1";
import { type BudgetLimits, type BudgetRequest, NO_LIMITS } from "../costs/budget";
import { runBudgets } from "./schema";

export interface RunBudget {
  limits: BudgetLimits;
  updatedAt: string;
  updatedBy: string | null;
}

const limitsOf = (row: typeof runBudgets.$inferSelect): BudgetLimits => ({
  max_sampled_tokens: row.maxSampledTokens,
  max_prompt_tokens: row.maxPromptTokens,
  max_usd: row.maxUsd,
  max_groups: row.maxGroups,
});

/** The run's budget; null when none was ever set. */
export async function readBudget(db: D1Database, runId: string): Promise<RunBudget | null> {
  const row = await drizzle(db).select().from(runBudgets).where(eq(runBudgets.runId, runId)).get();
  return row === undefined
    ? null
    : { limits: limitsOf(row), updatedAt: row.updatedAt, updatedBy: row.updatedBy };
}

/**
 * Sets the limits the request names (null removes one) and leaves the others as they are, in one
 * statement: two requests at once that name different limits both take effect.
 */
export async function writeBudget(
  db: D1Database,
  runId: string,
  request: BudgetRequest,
  principal: string,
): Promise<RunBudget> {
  const named = {
    ...(request.max_sampled_tokens === undefined
      ? {}
      : { maxSampledTokens: request.max_sampled_tokens }),
    ...(request.max_prompt_tokens === undefined
      ? {}
      : { maxPromptTokens: request.max_prompt_tokens }),
    ...(request.max_usd === undefined ? {} : { maxUsd: request.max_usd }),
    ...(request.max_groups === undefined ? {} : { maxGroups: request.max_groups }),
    updatedAt: new Date().toISOString(),
    updatedBy: principal,
  };
  const [row] = await drizzle(db)
    .insert(runBudgets)
    .values({ runId, ...named })
    .onConflictDoUpdate({ target: runBudgets.runId, set: named })
    .returning();
  if (row === undefined) throw new Error(`run_budgets: no row for "${runId}" after its upsert`);
  return { limits: limitsOf(row), updatedAt: row.updatedAt, updatedBy: row.updatedBy };
}

export const NO_BUDGET: RunBudget = { limits: NO_LIMITS, updatedAt: "", updatedBy: null };
