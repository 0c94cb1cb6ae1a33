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
): Promise<{ ok: true; policy: RunPolicy; running: string[] } | { ok: false; current: RunPolicy }> {
  // One round trip, in one transaction: the update (fields not given keep the row's, or take
  // their defaults on a new row), then the run's running groups, read after it so that a group
  // starting meanwhile either read the new policy or is in this list. A sync's stall waits on
  // every round trip here (bench:sync).
  const [written, running] = await db.batch<Record<string, unknown>>([
    db
      .prepare(
        `INSERT INTO run_policies (run_id, version, max_lag, paused, interrupt, updated_at, updated_by, revision)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 1)
         ON CONFLICT (run_id) DO UPDATE SET version = excluded.version,
           max_lag = CASE WHEN ?8 THEN excluded.max_lag ELSE run_policies.max_lag END,
           paused = CASE WHEN ?9 THEN excluded.paused ELSE run_policies.paused END,
           interrupt = excluded.interrupt, updated_at = excluded.updated_at,
           updated_by = excluded.updated_by, revision = run_policies.revision + 1
         WHERE excluded.version >= run_policies.version
         RETURNING version, max_lag, paused, updated_at, revision`,
      )
      .bind(
        runId,
        update.version,
        update.maxLag ?? null,
        update.paused === true ? 1 : 0,
        update.interrupt === true ? 1 : 0,
        new Date().toISOString(),
        principal,
        update.maxLag === undefined ? 0 : 1,
        update.paused === undefined ? 0 : 1,
      ),
    db.prepare("SELECT id FROM groups WHERE run_id = ? AND status = 'running'").bind(runId),
  ]);
  const row = written?.results[0] as
    | {
        version: number;
        max_lag: number | null;
        paused: number;
        updated_at: string;
        revision: number;
      }
    | undefined;
  // Refused: a concurrent, newer update is ahead.
  if (row === undefined)
    return { ok: false, current: (await readRunPolicy(db, runId)) as RunPolicy };
  return {
    ok: true,
    policy: {
      runId,
      version: row.version,
      maxLag: row.max_lag,
      paused: row.paused === 1,
      interrupt: update.interrupt === true,
      updatedAt: row.updated_at,
      updatedBy: principal,
      revision: row.revision,
    },
    running: (running?.results ?? []).map((r) => String(r.id)),
  };
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
