/**
 * The limits a start must pass once its request is checked, each a 429: the run's budget
 * (`budget_exhausted`: it has spent a limit, src/costs/budget.ts) and the starting token's quota
 * of groups in flight (`quota_exceeded`, with Retry-After). A retried start of a group that
 * already exists passes both: it starts nothing. Both read durable state and are checked
 * without a lock, so starts racing each other can each pass: a run overshoots by at most what
 * was in flight or being started.
 */

import {
  type BudgetLimits,
  describeReached,
  hasLimits,
  needsInFlight,
  type ReachedLimit,
  reachedLimits,
} from "../costs/budget";
import type { Spend } from "../costs/spend";
import { readBudget } from "../db/run-budgets";
import { groupsInFlightBy, landedSpend } from "../db/run-costs";
import { knownGroupHash } from "../rollout/registration";
import { quotaOf } from "./auth";
import { ApiError } from "./errors";
import { inFlightOf } from "./run-spend";

/** How long a start over its token's quota is told to wait: about a turn of a short group. */
export const QUOTA_RETRY_AFTER_S = 5;

export interface StartIdentity {
  runId: string;
  /** Who starts it (a token's principal, `local` without tokens); null: no quota applies. */
  principal: string | null;
  groupId: string;
  /** A start under an Idempotency-Key may be the retry of one that created its group. */
  keyed: boolean;
}

/** Refuses the start with a 429 when the run's budget or the token's quota is spent. */
export async function admitStart(env: Env, start: StartIdentity): Promise<void> {
  const [budget, quota] = await Promise.all([
    readBudget(env.DB, start.runId),
    start.principal === null ? null : quotaOf(env as { API_TOKENS?: string }, start.principal),
  ]);
  const limited = budget !== null && hasLimits(budget.limits);
  if (!limited && quota === null) return;
  if (start.keyed && (await knownGroupHash(env.DB, start.groupId)) !== null) return;
  if (quota !== null && start.principal !== null) {
    const inFlight = await groupsInFlightBy(env.DB, start.principal);
    if (inFlight >= quota)
      throw new ApiError(
        429,
        "quota_exceeded",
        `this token may have ${quota} groups in flight (max_inflight_groups) and has ${inFlight}: start again once some land`,
        { max_inflight_groups: quota, in_flight: inFlight },
        { "retry-after": String(QUOTA_RETRY_AFTER_S) },
      );
  }
  if (budget === null || !limited) return;
  const { reached } = await spentAgainst(env, start.runId, budget.limits);
  if (reached.length > 0)
    throw new ApiError(429, "budget_exhausted", describeReached(start.runId, reached), {
      reached,
    });
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
