/** A run's bill and budget as the API answers them (`GET /v1/runs/:id`, its `/budget`). */
import { BUDGET_LIMITS, type BudgetLimit, reachedLimits } from "../costs/budget";
import type { RunSpend, Spend } from "../costs/spend";
import type { RunBudget } from "../db/run-budgets";

/** Money rounded to a millionth of a dollar: float sums carry noise below that. */
const dollars = (usd: number) => Math.round(usd * 1e6) / 1e6;

/** The ledger's counters, named as the `run_costs` view names its columns. */
export function spendView(spend: Spend) {
  return {
    groups: spend.groups,
    prompt_tokens: spend.promptTokens,
    cached_tokens: spend.cachedTokens,
    sampled_tokens: spend.sampledTokens,
    teacher_tokens: spend.teacherTokens,
    judge_tokens: spend.judgeTokens,
    env_seconds: Math.round(spend.envSeconds * 1000) / 1000,
    generations: spend.generations,
    retries: spend.retries,
    discarded_tokens: spend.discardedTokens,
    usd: dollars(spend.usd),
    unpriced_calls: spend.unpricedCalls,
  };
}
export type SpendView = ReturnType<typeof spendView>;

/** What the run spent: landed rows, groups in flight so far, and both. */
export function costsView(costs: RunSpend) {
  return {
    /** Everything: what the budget is checked against. */
    total: spendView(costs.total),
    /** Landed groups' rows (the `run_costs` view), with every group started in `groups`. */
    landed: spendView(costs.landed),
    /** The groups still in flight, so far (their `groups` is 0: `landed.groups` has them). */
    in_flight: spendView(costs.inFlight),
    groups_in_flight: costs.groupsInFlight,
    /** Groups in flight whose spend is not counted: their object did not answer this read. */
    groups_unanswered: costs.unanswered,
  };
}
export type CostsView = ReturnType<typeof costsView>;

/** A run's budget against what it spent: the limits reached, and by how much it passed them. */
export function budgetView(runId: string, budget: RunBudget, spend: RunSpend) {
  const { total } = spend;
  const reached = reachedLimits(budget.limits, total).map((r) =>
    r.limit === "max_usd" ? { ...r, spent: dollars(r.spent) } : r,
  );
  const overshoot: Partial<Record<BudgetLimit, number>> = {};
  for (const r of reached)
    if (r.spent > r.max)
      overshoot[r.limit] = r.limit === "max_usd" ? dollars(r.spent - r.max) : r.spent - r.max;
  return {
    run_id: runId,
    limits: budget.limits,
    /** What each limit bounds, spent so far (landed and in flight). */
    spent: Object.fromEntries(
      (Object.entries(BUDGET_LIMITS) as [BudgetLimit, keyof Spend][]).map(([limit, key]) => [
        limit,
        limit === "max_usd" ? dollars(total[key]) : total[key],
      ]),
    ) as Record<BudgetLimit, number>,
    /** True once any limit is reached: new groups of the run are refused (429 budget_exhausted). */
    exhausted: reached.length > 0,
    reached,
    /**
     * How far past each reached limit the run went: groups in flight when it was reached
     * finish, so this is at most what they spent.
     */
    overshoot,
    /**
     * Running groups whose spend is not in `spent` (their object did not answer this read): the
     * figures are then low by what they spent.
     */
    groups_unanswered: spend.unanswered,
    updated_at: budget.updatedAt,
    updated_by: budget.updatedBy,
  };
}
export type BudgetView = ReturnType<typeof budgetView>;
