/** A run's budget in D1 (`run_budgets`): its reads and writes only (the rule is src/costs/'s). */
import { eq } from "drizzle-orm";
import { drizzle } from "drizzle-orm/d1";
import { type BudgetLimits, NO_LIMITS } from "../costs/budget";
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

/** Writes the run's limits whole (the route merged the request into the current ones). */
export async function writeBudget(
  db: D1Database,
  runId: string,
  limits: BudgetLimits,
  principal: string,
): Promise<RunBudget> {
  const row = {
    runId,
    maxSampledTokens: limits.max_sampled_tokens,
    maxPromptTokens: limits.max_prompt_tokens,
    maxUsd: limits.max_usd,
    maxGroups: limits.max_groups,
    updatedAt: new Date().toISOString(),
    updatedBy: principal,
  };
  const { runId: _key, ...set } = row;
  await drizzle(db).insert(runBudgets).values(row).onConflictDoUpdate({
    target: runBudgets.runId,
    set,
  });
  return { limits: limitsOf(row), updatedAt: row.updatedAt, updatedBy: principal };
}

export const NO_BUDGET: RunBudget = { limits: NO_LIMITS, updatedAt: "", updatedBy: null };
