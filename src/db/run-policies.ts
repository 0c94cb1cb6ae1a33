/**
 * Asynchronous RL: a run's policy as its trainer sets it, in D1 (`run_policies`), so SQL sees it
 * and every API isolate reads the same; its reads and writes only (the rules are src/policy/'s).
 * The version only moves forward: a trainer that restarts from an older checkpoint says so with
 * a new run, not by rewinding this one.
 */
import { eq } from "drizzle-orm";
import { drizzle } from "drizzle-orm/d1";
import { runPolicies } from "./schema";

export type RunPolicy = typeof runPolicies.$inferSelect;

/** The run's groups still in flight, which a policy change must reach. */
export async function runningGroupIds(db: D1Database, runId: string): Promise<string[]> {
  const rows = await db
    .prepare("SELECT id FROM groups WHERE run_id = ? AND status = 'running'")
    .bind(runId)
    .all<{ id: string }>();
  return rows.results.map((r) => r.id);
}

export async function readRunPolicy(db: D1Database, runId: string): Promise<RunPolicy | null> {
  return (
    (await drizzle(db).select().from(runPolicies).where(eq(runPolicies.runId, runId)).get()) ?? null
  );
}

export interface PolicyUpdate {
  version: number;
  /** Absent: keep the run's; null: no limit. */
  maxLag?: number | null | undefined;
  /** Absent: keep the run's. */
  paused?: boolean | undefined;
  /** The pause aborts the run's generations in flight too (only with a pause). */
  interrupt?: boolean | undefined;
}

/** The run's policy after the update, or the newer one that made it a regression. */
export async function setRunPolicy(
  db: D1Database,
  runId: string,
  update: PolicyUpdate,
  principal: string,
): Promise<{ ok: true; policy: RunPolicy } | { ok: false; current: RunPolicy }> {
  const current = await readRunPolicy(db, runId);
  if (current !== null && update.version < current.version) return { ok: false, current };
  const next: RunPolicy = {
    runId,
    version: update.version,
    maxLag: update.maxLag === undefined ? (current?.maxLag ?? null) : update.maxLag,
    paused: update.paused ?? current?.paused ?? false,
    interrupt: update.interrupt === true,
    updatedAt: new Date().toISOString(),
    updatedBy: principal,
    revision: (current?.revision ?? 0) + 1,
  };
  // Conditional on the version still not being ahead: a concurrent, newer update wins.
  const written = await db
    .prepare(
      `INSERT INTO run_policies (run_id, version, max_lag, paused, interrupt, updated_at, updated_by, revision)
       VALUES (?, ?, ?, ?, ?, ?, ?, 1)
       ON CONFLICT (run_id) DO UPDATE SET version = excluded.version, max_lag = excluded.max_lag,
         paused = excluded.paused, interrupt = excluded.interrupt, updated_at = excluded.updated_at,
         updated_by = excluded.updated_by, revision = run_policies.revision + 1
       WHERE excluded.version >= run_policies.version
       RETURNING revision`,
    )
    .bind(
      runId,
      next.version,
      next.maxLag,
      next.paused ? 1 : 0,
      next.interrupt ? 1 : 0,
      next.updatedAt,
      principal,
    )
    .first<{ revision: number }>();
  if (written === null)
    return { ok: false, current: (await readRunPolicy(db, runId)) as RunPolicy };
  // The database's count, not ours: a concurrent update may have come between.
  return { ok: true, policy: { ...next, revision: written.revision } };
}

/**
 * A pause the trainer asked for (a weight sync), with what its answer still had in flight: idle
 * at once when that was none. A second pause at the same revision changes nothing.
 */
export async function recordSync(
  db: D1Database,
  policy: RunPolicy,
  inFlight: number | null,
): Promise<void> {
  await db
    .prepare(
      `INSERT INTO policy_syncs (run_id, revision, interrupt, paused_at, in_flight_at_answer, idle_at)
       VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
    )
    .bind(
      policy.runId,
      policy.revision,
      policy.interrupt ? 1 : 0,
      policy.updatedAt,
      inFlight,
      inFlight === 0 ? new Date().toISOString() : null,
    )
    .run();
}

/** The run was seen with nothing in flight while paused: its open syncs are idle from now. */
export async function markIdle(db: D1Database, runId: string): Promise<void> {
  await db
    .prepare("UPDATE policy_syncs SET idle_at = ? WHERE run_id = ? AND idle_at IS NULL")
    .bind(new Date().toISOString(), runId)
    .run();
}
