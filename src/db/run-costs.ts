/**
 * What a run's landed rows say it spent, read as the `run_costs` view sums them
 * (migrations/0033_run_cost_views.sql mirrors these sums), and which of its groups are still in
 * flight: one D1 batch, so a group is either landed in the sums or listed as running, never
 * both and never neither (api/run-spend.ts asks the running ones for the rest).
 */
import { NO_SPEND, type Spend } from "../costs/spend";

/**
 * Sums over a set of episodes `e`, as `run_costs` computes them. Only a landed group's count: a
 * group too large for one D1 batch lands in several, its row last, and until then its object
 * still answers for it.
 */
const EPISODE_SUMS = `COUNT(*) AS episodes,
  COALESCE(SUM(COALESCE(e.prompt_tokens, 0)), 0) AS prompt_tokens,
  COALESCE(SUM(e.cached_tokens), 0) AS cached_tokens,
  COALESCE(SUM(COALESCE(e.completion_tokens, 0)), 0) AS sampled_tokens,
  COALESCE(SUM(e.teacher_tokens), 0) AS teacher_tokens,
  COALESCE(SUM(e.judge_tokens), 0) AS judge_tokens,
  COALESCE(SUM(e.env_ms), 0) AS env_ms,
  COALESCE(SUM(e.generations), 0) AS generations,
  COALESCE(SUM(e.retries), 0) AS retries,
  COALESCE(SUM(e.discarded_tokens), 0) AS discarded_tokens,
  COALESCE(SUM(e.usd), 0) AS usd,
  COALESCE(SUM(e.unpriced_calls), 0) AS unpriced_calls`;
const LANDED_EPISODES = "episodes e JOIN groups g ON g.id = e.group_id AND g.status != 'running'";

interface EpisodeSums {
  episodes: number;
  prompt_tokens: number;
  cached_tokens: number;
  sampled_tokens: number;
  teacher_tokens: number;
  judge_tokens: number;
  env_ms: number;
  generations: number;
  retries: number;
  discarded_tokens: number;
  usd: number;
  unpriced_calls: number;
}

function spendOf(sums: EpisodeSums | undefined, groups: number, scoreMs: number): Spend {
  if (sums === undefined) return { ...NO_SPEND, groups, envSeconds: scoreMs / 1000 };
  return {
    groups,
    promptTokens: sums.prompt_tokens,
    cachedTokens: sums.cached_tokens,
    sampledTokens: sums.sampled_tokens,
    teacherTokens: sums.teacher_tokens,
    judgeTokens: sums.judge_tokens,
    envSeconds: (sums.env_ms + scoreMs) / 1000,
    generations: sums.generations,
    retries: sums.retries,
    discardedTokens: sums.discarded_tokens,
    usd: sums.usd,
    unpricedCalls: sums.unpriced_calls,
  };
}

export interface LandedSpend {
  /** Every landed episode's cost, every group started (running ones included) in `groups`. */
  landed: Spend;
  /** The run's groups D1 shows running: their costs are in their objects, not in `landed`. */
  running: string[];
}

/** The run's landed spend and its running groups, as of one consistent read. */
export async function landedSpend(db: D1Database, runId: string): Promise<LandedSpend> {
  const [sums, groups, running] = await db.batch([
    db.prepare(`SELECT ${EPISODE_SUMS} FROM ${LANDED_EPISODES} WHERE e.run_id = ?`).bind(runId),
    db
      .prepare(
        `SELECT COUNT(*) AS n, COALESCE(SUM(IIF(status = 'running', 0, score_ms)), 0) AS score_ms
         FROM groups WHERE run_id = ?`,
      )
      .bind(runId),
    db.prepare("SELECT id FROM groups WHERE run_id = ? AND status = 'running'").bind(runId),
  ]);
  const counted = (groups?.results as { n: number; score_ms: number }[] | undefined)?.[0];
  return {
    landed: spendOf(
      (sums?.results as EpisodeSums[] | undefined)?.[0],
      counted?.n ?? 0,
      counted?.score_ms ?? 0,
    ),
    running: ((running?.results ?? []) as { id: string }[]).map((g) => g.id),
  };
}

/**
 * What some groups' landed rows cost (groups counted 0: the run's count has them already): for a
 * group that landed between the read that listed it running and the ask of its object.
 */
export async function groupsSpend(db: D1Database, groupIds: readonly string[]): Promise<Spend> {
  if (groupIds.length === 0) return NO_SPEND;
  const ids = JSON.stringify(groupIds);
  const [sums, groups] = await db.batch([
    db
      .prepare(
        `SELECT ${EPISODE_SUMS} FROM ${LANDED_EPISODES} WHERE e.group_id IN (SELECT value FROM json_each(?))`,
      )
      .bind(ids),
    db
      .prepare(
        "SELECT COALESCE(SUM(score_ms), 0) AS ms FROM groups WHERE status != 'running' AND id IN (SELECT value FROM json_each(?))",
      )
      .bind(ids),
  ]);
  const scoreMs = ((groups?.results ?? []) as { ms: number }[])[0]?.ms ?? 0;
  return spendOf((sums?.results as EpisodeSums[] | undefined)?.[0], 0, scoreMs);
}
