/** What the dashboard reads from D1: the SQL views, and a few lists. */
import type { BudgetLimits } from "../costs/budget";
import type { DeliveryState } from "../domain/delivery";
import type { GroupStatus } from "../domain/group-status";
import type { SpendView } from "../views/cost-view";

type Row = Record<string, unknown>;

async function all<T = Row>(db: D1Database, query: string, ...params: unknown[]): Promise<T[]> {
  return (
    await db
      .prepare(query)
      .bind(...params)
      .all<T>()
  ).results;
}

export interface RunRow {
  run_id: string;
  env: string;
  groups: number;
  episodes: number;
  failed: number;
  mean_reward: number | null;
  success_rate: number | null;
  mean_turns: number | null;
  mean_total_tokens: number | null;
  last_episode: string;
}

export interface RecentGroup {
  id: string;
  run_id: string;
  env: string;
  status: GroupStatus;
  group_size: number;
  score_mean: number | null;
  episodes_failed: number | null;
  delivery_state: DeliveryState;
  created_at: string;
}

/** Token drift: turns whose prompt did not extend what the previous turn left. */
export interface PrefixBreakRow {
  run_id: string;
  env: string;
  model: string | null;
  policy_version: number;
  episodes: number;
  turns: number;
  breaks: number;
  break_rate: number;
}

/** On-policy distillation: the student's reverse KL to its teacher, by policy version. */
export interface DistillationRow {
  run_id: string;
  env: string;
  teacher_model: string;
  policy_version: number;
  episodes: number;
  reverse_kl: number;
}

/** Asynchronous RL: a run's policy, what is waiting for its trainer, and what went stale. */
export interface PolicyRow {
  run_id: string;
  version: number;
  max_lag: number | null;
  paused: number;
  updated_at: string;
  groups_in_flight: number;
  groups_unleased: number;
  stale_episodes: number;
  stale_turns: number;
}

/**
 * Each inference host's share of the work from the `host_stats` view, summed over runs when no
 * run is chosen. Latency percentiles do not sum: they are a run's, null over all runs.
 */
export interface HostStatsRow {
  host: string;
  requests: number;
  failures: number;
  prompt_tokens: number;
  cached_tokens: number | null;
  cache_hit_rate: number | null;
  latency_ms_p50: number | null;
  latency_ms_p99: number | null;
}

export function hostStats(db: D1Database, run: string | null): Promise<HostStatsRow[]> {
  if (run !== null)
    return all<HostStatsRow>(
      db,
      `SELECT host, requests, failures, prompt_tokens, cached_tokens, cache_hit_rate,
         latency_ms_p50, latency_ms_p99 FROM host_stats WHERE run_id = ?1 ORDER BY host`,
      run,
    );
  return all<HostStatsRow>(
    db,
    `SELECT host, SUM(requests) AS requests, SUM(failures) AS failures,
       SUM(prompt_tokens) AS prompt_tokens, SUM(cached_tokens) AS cached_tokens,
       CAST(SUM(cached_tokens) AS REAL) / NULLIF(SUM(CASE WHEN cached_tokens IS NOT NULL THEN prompt_tokens END), 0) AS cache_hit_rate,
       NULL AS latency_ms_p50, NULL AS latency_ms_p99
     FROM host_stats GROUP BY host ORDER BY host`,
  );
}

/** One point of an evaluation curve: a metric of `eval_results` at one version. */
export interface EvalPoint {
  run_id: string;
  env: string;
  policy_version: number;
  k: number;
  pass_at_k: number;
  maj_at_k: number | null;
}

/** One rubric component of an environment, over the episodes shown (reward_component_stats). */
export interface ComponentRow {
  env: string;
  name: string;
  weight: number;
  episodes: number;
  mean_value: number;
}

/**
 * A run's bill from `run_costs` (landed groups; `groups` counts those in flight too) beside its
 * budget's limits (null: not set, or no budget), with its latest group's start.
 */
export type CostRow = SpendView &
  BudgetLimits & { run_id: string; groups_in_flight: number; episodes: number; last_group: string };

/** `run` narrows everything to one run; null means all runs. */
export async function overview(db: D1Database, run: string | null) {
  const [
    runs,
    scores,
    success,
    byVersion,
    failures,
    groups,
    totals,
    drift,
    distillation,
    policies,
    evals,
    components,
    costs,
  ] = await Promise.all([
    all<RunRow>(
      db,
      "SELECT * FROM run_summary WHERE ?1 IS NULL OR run_id = ?1 ORDER BY last_episode DESC LIMIT 100",
      run,
    ),
    // The newest 20,000 scored episodes are plenty for a distribution.
    all<{ env: string; score: number }>(
      db,
      `SELECT env, score FROM episodes WHERE score IS NOT NULL AND status != 'failed' AND (?1 IS NULL OR run_id = ?1)
       ORDER BY finished_at DESC LIMIT 20000`,
      run,
    ),
    all<{ env: string; rate: number }>(
      db,
      `SELECT env, AVG(success) AS rate FROM episodes WHERE success IS NOT NULL AND (?1 IS NULL OR run_id = ?1)
       GROUP BY env ORDER BY env`,
      run,
    ),
    all<{ run_id: string; env: string; policy_version: number; mean_reward: number }>(
      db,
      "SELECT run_id, env, policy_version, mean_reward FROM reward_by_policy_version WHERE ?1 IS NULL OR run_id = ?1",
      run,
    ),
    all<{ env: string; reason: string; episodes: number; example_detail: string }>(
      db,
      `SELECT env, failure_reason AS reason, COUNT(*) AS episodes, MAX(failure_detail) AS example_detail
       FROM episodes WHERE status = 'failed' AND (?1 IS NULL OR run_id = ?1)
       GROUP BY env, failure_reason ORDER BY episodes DESC`,
      run,
    ),
    all<RecentGroup>(
      db,
      `SELECT id, run_id, env, status, group_size, score_mean, episodes_failed, delivery_state, created_at
       FROM groups WHERE ?1 IS NULL OR run_id = ?1 ORDER BY created_at DESC LIMIT 40`,
      run,
    ),
    all<{ groups: number; landed: number; running: number }>(
      db,
      `SELECT COUNT(*) AS groups, SUM(status = 'landed') AS landed, SUM(status = 'running') AS running
       FROM groups WHERE ?1 IS NULL OR run_id = ?1`,
      run,
    ),
    all<PrefixBreakRow>(
      db,
      `SELECT * FROM prefix_breaks WHERE ?1 IS NULL OR run_id = ?1
       ORDER BY breaks DESC, run_id, env LIMIT 50`,
      run,
    ),
    all<DistillationRow>(
      db,
      `SELECT run_id, env, teacher_model, policy_version, episodes, reverse_kl FROM distillation
       WHERE ?1 IS NULL OR run_id = ?1 ORDER BY run_id, policy_version LIMIT 2000`,
      run,
    ),
    all<PolicyRow>(
      db,
      `SELECT run_id, version, max_lag, paused, updated_at, groups_in_flight, groups_unleased,
         stale_episodes, stale_turns FROM run_policy_state
       WHERE ?1 IS NULL OR run_id = ?1 ORDER BY updated_at DESC LIMIT 100`,
      run,
    ),
    // pass@1, and pass@k and maj@k at each version's largest k: the curves a trainer watches.
    all<EvalPoint>(
      db,
      `SELECT r.run_id, r.env, r.policy_version, r.k, r.pass_at_k, r.maj_at_k FROM eval_results r
       WHERE (?1 IS NULL OR r.run_id = ?1) AND (r.k = 1 OR r.k = (SELECT MAX(m.k) FROM eval_results m
         WHERE m.run_id = r.run_id AND m.env = r.env AND m.policy_version = r.policy_version))
       ORDER BY r.run_id, r.env, r.policy_version LIMIT 2000`,
      run,
    ),
    // Each rubric component over all its episodes: what a score is made of, metrics beside it.
    all<ComponentRow>(
      db,
      `SELECT env, name, MAX(weight) AS weight, SUM(episodes) AS episodes,
         SUM(mean_value * episodes) / SUM(episodes) AS mean_value
       FROM reward_component_stats WHERE ?1 IS NULL OR run_id = ?1
       GROUP BY env, name ORDER BY env, weight DESC, name LIMIT 200`,
      run,
    ),
    // The bill of the 20 runs whose latest group started last, with their budgets, in one read.
    all<CostRow>(
      db,
      `WITH recent AS (SELECT run_id, MAX(created_at) AS last_group FROM groups
         WHERE ?1 IS NULL OR run_id = ?1 GROUP BY run_id ORDER BY last_group DESC LIMIT 20)
       SELECT c.*, r.last_group, b.max_sampled_tokens, b.max_prompt_tokens, b.max_usd, b.max_groups
       FROM recent r JOIN run_costs c ON c.run_id = r.run_id
       LEFT JOIN run_budgets b ON b.run_id = r.run_id ORDER BY r.last_group DESC`,
      run,
    ),
  ]);
  return {
    runs,
    scores,
    success,
    byVersion,
    failures,
    groups,
    drift,
    distillation,
    policies,
    evals,
    components,
    costs,
    totals: totals[0] ?? { groups: 0, landed: 0, running: 0 },
  };
}
