/**
 * The limits a start must pass once its request is checked, each a 429: the run's budget
 * (`budget_exhausted`: it has spent a limit, src/costs/budget.ts) and the starting token's quota
 * of groups in flight (`quota_exceeded`, with Retry-After). A retried start of a group that
 * already exists passes both: it starts nothing. Counts of groups (the quota, `max_groups`) are
 * held exactly, by an atomic reservation; limits on tokens and money are read without a lock,
 * so starts racing each other may each pass one: a run passes those by at most what was in
 * flight or being started.
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
import { landedSpend } from "../db/run-costs";
import type { GroupSpec } from "../rollout/group-spec";
import { knownGroupHash, reserveGroup } from "../rollout/registration";
import { quotaOf } from "./auth";
import { ApiError } from "./errors";
import { inFlightOf } from "./run-spend";

/** How long a start over its token's quota is told to wait: about a turn of a short group. */
export const QUOTA_RETRY_AFTER_S = 5;

/**
 * Admits the start or refuses it with a 429: the run's budget first (what it has spent, landed
 * and in flight), then its token's quota and the run's `max_groups`, which reserve the group's
 * D1 row atomically (registration.ts). Answers whether it reserved the row, which the caller
 * takes back if the group's object then does not create the group.
 */
export async function admitStart(
  env: Env,
  spec: GroupSpec,
  keyed: boolean,
): Promise<{ reserved: boolean }> {
  const runId = spec.request.run_id;
  const [budget, quota] = await Promise.all([
    readBudget(env.DB, runId),
    spec.startedBy === null ? null : quotaOf(env as { API_TOKENS?: string }, spec.startedBy),
  ]);
  const limits = budget !== null && hasLimits(budget.limits) ? budget.limits : null;
  if (limits === null && quota === null) return { reserved: false };
  // The retry of a start that created its group starts nothing: it passes.
  if (keyed && (await knownGroupHash(env.DB, spec.groupId)) !== null) return { reserved: false };
  if (limits !== null) {
    const { reached } = await spentAgainst(env, runId, limits);
    if (reached.length > 0)
      throw new ApiError(429, "budget_exhausted", describeReached(runId, reached), { reached });
  }
  const maxGroups = limits?.max_groups ?? null;
  if (quota === null && maxGroups === null) return { reserved: false };
  const reservation = await reserveGroup(env.DB, spec, { quota, maxGroups });
  if (reservation.kind === "over_quota")
    throw new ApiError(
      429,
      "quota_exceeded",
      `this token may have ${quota} groups in flight (max_inflight_groups) and has them all running: start again once some land`,
      { max_inflight_groups: quota },
      { "retry-after": String(QUOTA_RETRY_AFTER_S) },
    );
  if (reservation.kind === "over_max_groups")
    throw new ApiError(
      429,
      "budget_exhausted",
      describeReached(runId, [{ limit: "max_groups", max: maxGroups ?? 0, spent: maxGroups ?? 0 }]),
      { reached: [{ limit: "max_groups", max: maxGroups, spent: maxGroups }] },
    );
  return { reserved: true };
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
