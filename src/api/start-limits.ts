/**
 * The limits a start must pass once its request is checked, each a 429: the run's budget
 * (`budget_exhausted`: it has spent a limit, src/costs/budget.ts) and the starting token's quota
 * of groups in flight (`quota_exceeded`, with Retry-After); a rescore is held by `max_usd` alone. A
 * retried start of a group that already exists passes both: it starts nothing. Counts of groups
 * (the quota, `max_groups`) are held exactly, by the group's object as it registers
 * (registration.ts reserveGroup); limits on tokens and money are read without a lock, so starts
 * racing each other may each pass one: a run passes those by at most what was in flight or
 * being started.
 */
import {
  type BudgetLimits,
  describeReached,
  hasLimits,
  NO_LIMITS,
  needsInFlight,
  type ReachedLimit,
  reachedLimits,
} from "../costs/budget";
import type { Spend } from "../costs/spend";
import { readBudget } from "../db/run-budgets";
import { landedSpend } from "../db/run-costs";
import type { GroupSpec } from "../rollout/group-spec";
import { knownGroupHash, type StartCaps } from "../rollout/registration";
import { quotaOf } from "./auth";
import { ApiError } from "./errors";
import { inFlightOf } from "./run-spend";

/** How long a start over its token's quota is told to wait: about a turn of a short group. */
export const QUOTA_RETRY_AFTER_S = 5;

/**
 * Admits the start or refuses it with a 429 `budget_exhausted` when the run has spent a limit
 * (landed and in flight). Answers the caps the group's object then registers it within, exactly
 * (registration.ts reserveGroup): its token's quota and its run's `max_groups`; null for none.
 */
export async function admitStart(
  env: Env,
  spec: GroupSpec,
  keyed: boolean,
): Promise<StartCaps | null> {
  const runId = spec.request.run_id;
  const [budget, quota] = await Promise.all([
    readBudget(env.DB, runId),
    spec.startedBy === null ? null : quotaOf(env as { API_TOKENS?: string }, spec.startedBy),
  ]);
  const limits = budget !== null && hasLimits(budget.limits) ? budget.limits : null;
  if (limits === null && quota === null) return null;
  // The retry of a start that created its group starts nothing: it passes.
  if (keyed && (await knownGroupHash(env.DB, spec.groupId)) !== null) return null;
  if (limits !== null) {
    const { reached } = await spentAgainst(env, runId, limits);
    if (reached.length > 0) throw budgetExhausted(runId, reached);
  }
  const maxGroups = limits?.max_groups ?? null;
  return quota === null && maxGroups === null ? null : { quota, maxGroups };
}

/**
 * Admits a rescore, or refuses it with a 429 `budget_exhausted` once the run has spent its
 * `max_usd`: a rescore calls the judge again and nothing else, so it spends money but no sampled
 * or prompt tokens of the policy, and starts no group; the run's other limits do not hold it.
 */
export async function admitRescore(env: Env, runId: string): Promise<void> {
  const budget = await readBudget(env.DB, runId);
  const maxUsd = budget?.limits.max_usd ?? null;
  if (maxUsd === null) return;
  const { reached } = await spentAgainst(env, runId, { ...NO_LIMITS, max_usd: maxUsd });
  if (reached.length > 0) throw budgetExhausted(runId, reached);
}

/** The 429 for a start its object refused at registration: its token's quota, or max_groups. */
export function capRefusal(
  over: "over_quota" | "over_max_groups",
  runId: string,
  caps: StartCaps | null,
): ApiError {
  if (over === "over_quota")
    return new ApiError(
      429,
      "quota_exceeded",
      `this token may have ${caps?.quota} groups in flight (max_inflight_groups) and has them all running: start again once some land`,
      { max_inflight_groups: caps?.quota },
      { "retry-after": String(QUOTA_RETRY_AFTER_S) },
    );
  const max = caps?.maxGroups ?? 0;
  return budgetExhausted(runId, [{ limit: "max_groups", max, spent: max }]);
}

/** The 429 of a run that has reached limits of its budget, naming each and what was spent. */
function budgetExhausted(runId: string, reached: ReachedLimit[]): ApiError {
  return new ApiError(429, "budget_exhausted", describeReached(runId, reached), { reached });
}

/**
 * The run's spend against its limits, read as cheaply as they allow: what landed (and the groups
 * started) may be enough to reach one; only otherwise, and only for limits on tokens or money,
 * are the groups in flight asked.
 */
export async function spentAgainst(
  env: Env,
  runId: string,
  limits: BudgetLimits,
): Promise<{ reached: ReachedLimit[]; spent: Spend }> {
  const { landed, running } = await landedSpend(env.DB, runId);
  const reached = reachedLimits(limits, landed);
  if (reached.length > 0 || !needsInFlight(limits) || running.length === 0)
    return { reached, spent: landed };
  const { total } = await inFlightOf(env, landed, running);
  return { reached: reachedLimits(limits, total), spent: total };
}
