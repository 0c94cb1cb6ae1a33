/**
 * What a run's landed rows say it spent, read as the `run_costs` view sums them
 * (migrations/0033_run_cost_views.sql mirrors these sums), and which of its groups are still in
 * flight: one D1 batch, so a group is either landed in the sums or listed as running, never
 * both and never neither (api/run-spend.ts asks the running ones for the rest).
 */
import { NO_SPEND, type Spend } from "../costs/spend";

/** Sums over a set of episodes, as `run_costs` computes them. */
const EPISODE_SUMS = `COUNT(*) AS episodes,
  COALESCE(SUM(COALESCE(prompt_tokens, 0)), 0) AS prompt_tokens,
  COALESCE(SUM(cached_tokens), 0) AS cached_tokens,
  COALESCE(SUM(COALESCE(completion_tokens, 0)), 0) AS sampled_tokens,
  COALESCE(SUM(teacher_tokens), 0) AS teacher_tokens,
  COALESCE(SUM(judge_tokens), 0) AS judge_tokens,
  COALESCE(SUM(env_ms), 0) AS env_ms,
  COALESCE(SUM(generations), 0) AS generations,
  COALESCE(SUM(retries), 0) AS retries,
  COALESCE(SUM(discarded_tokens), 0) AS discarded_tokens,
  COALESCE(SUM(usd), 0) AS usd,
  COALESCE(SUM(unpriced_calls), 0) AS unpriced_calls`;

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
  const [sums, groups] = await db.batch([
    db.prepare(`SELECT ${EPISODE_SUMS} FROM episodes WHERE run_id = ?`).bind(runId),
    db
      .prepare(`SELECT id, status = 'running' AS running, score_ms FROM groups WHERE run_id = ?`)
      .bind(runId),
  ]);
  const rows = (groups?.results ?? []) as { id: string; running: number; score_ms: number }[];
  const landedScoreMs = rows.reduce((ms, g) => ms + (g.running ? 0 : g.score_ms), 0);
  return {
    landed: spendOf((sums?.results as EpisodeSums[] | undefined)?.[0], rows.length, landedScoreMs),
    running: rows.filter((g) => g.running).map((g) => g.id),
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
        `SELECT ${EPISODE_SUMS} FROM episodes WHERE group_id IN (SELECT value FROM json_each(?))`,
      )
      .bind(ids),
    db
      .prepare(
        "SELECT COALESCE(SUM(score_ms), 0) AS ms FROM groups WHERE id IN (SELECT value FROM json_each(?))",
      )
      .bind(ids),
  ]);
  const scoreMs = ((groups?.results ?? []) as { ms: number }[])[0]?.ms ?? 0;
  return spendOf((sums?.results as EpisodeSums[] | undefined)?.[0], 0, scoreMs);
}

/** In-flight groups started by one principal (its token's quota). */
export async function groupsInFlightBy(db: D1Database, principal: string): Promise<number> {
  const row = await db
    .prepare("SELECT COUNT(*) AS n FROM groups WHERE started_by = ? AND status = 'running'")
    .bind(principal)
    .first<{ n: number }>();
  return row?.n ?? 0;
}
