/**
 * The `pool` sampler: a curriculum from each example's history in the run. An example whose last
 * `skip_solved_after` groups were all solved (every scored episode a success) teaches nothing
 * more, nor does one none of whose last `skip_unsolved_after` groups solved anything: both are
 * skipped. A skipped example is sampled again after `retry_after` skips in a row, so a skill the
 * policy forgot, or one it has grown into, is noticed (docs/architecture.md says why).
 */
import { z } from "zod";

export const PoolOptionsSchema = z.strictObject({
  skip_solved_after: z.number().int().min(1).max(1000).optional(),
  skip_unsolved_after: z.number().int().min(1).max(1000).optional(),
  /** Skips in a row after which a skipped example is sampled again. */
  retry_after: z.number().int().min(1).max(1000).default(4),
});
export type PoolOptions = z.infer<typeof PoolOptionsSchema>;

/** One landed group of the example, newest first: the share of its scored episodes that succeeded. */
export interface GroupSolveRate {
  solveRate: number;
}

/** Why the example is skipped now, or null to sample it. */
export function skipReason(
  options: PoolOptions,
  newestFirst: readonly GroupSolveRate[],
  skippedInARow: number,
): string | null {
  if (skippedInARow >= options.retry_after) return null;
  const lastAll = (n: number | undefined, test: (rate: number) => boolean) =>
    n !== undefined &&
    newestFirst.length >= n &&
    newestFirst.slice(0, n).every((g) => test(g.solveRate));
  if (lastAll(options.skip_solved_after, (rate) => rate === 1))
    return `solved in each of its last ${options.skip_solved_after} groups`;
  if (lastAll(options.skip_unsolved_after, (rate) => rate === 0))
    return `solved in none of its last ${options.skip_unsolved_after} groups`;
  return null;
}

/**
 * The example's landed training groups in this run at this environment version (an evaluation
 * measures, it does not teach), newest first, as many as
 * the longest rule reads. Episodes without a success (failed, or an environment with no
 * threshold) do not count; a group with none counted is left out.
 */
export async function recentSolveRates(
  db: D1Database,
  where: { runId: string; env: string; envVersion: string; exampleId: string },
  limit: number,
): Promise<GroupSolveRate[]> {
  const rows = await db
    .prepare(
      `SELECT AVG(e.success) AS rate FROM groups g JOIN episodes e ON e.group_id = g.id
       WHERE g.run_id = ?1 AND g.env = ?2 AND g.env_version = ?3 AND g.example_id = ?4
         AND g.kind = 'train' AND g.status = 'landed' AND e.success IS NOT NULL
       GROUP BY g.id ORDER BY g.finished_at DESC LIMIT ?5`,
    )
    .bind(where.runId, where.env, where.envVersion, where.exampleId, limit)
    .all<{ rate: number }>();
  return rows.results.map((r) => ({ solveRate: r.rate }));
}
