/**
 * A run producer's SQLite: its request and state, the dataset it covers (copied in at the start,
 * so a later upload under the same name changes nothing mid-run), where each epoch has got to,
 * and every group it meant to start. A start is written here before it is sent (`starting`), so
 * a producer killed between the two sends it again under the same key on restart: no group is
 * lost, and none is made twice.
 */
import type { TaskExample } from "../sdk";

/**
 * `running` until every epoch is covered and every group has landed (`done`), or `stopped`
 * (DELETE, or a refusal no retry can mend: the environment changed version under the run).
 */
export type ProducerState = "running" | "done" | "stopped";

/**
 * A start's life: `pending` (a resample waiting for room), `starting` (written, not yet
 * answered), `running`, then `landed` or `failed` (the group's outcome), or `rejected` (the
 * environment refused the example: a 422, recorded with its message), or `skipped` (the pool
 * sampler passed it over this epoch, and why), or `cancelled` (a resample still waiting when the
 * producer stopped, or a start the stop caught before any group had it).
 */
export type StartStatus =
  | "cancelled"
  | "pending"
  | "starting"
  | "running"
  | "landed"
  | "failed"
  | "rejected"
  | "skipped";

export interface ProducerRow {
  runId: string;
  request: unknown;
  envVersion: string;
  datasetSha256: string;
  /** In every group key: the request's group fields and the dataset (production-plan.ts). */
  planDigest: string;
  state: ProducerState;
  reason: string | null;
  /** The last tick's fault, until a tick goes through. */
  lastError: string | null;
  /** The principal whose POST made it: its groups count against that token's quota. */
  startedBy: string | null;
  /** The limit its starts wait on (the run's budget, its token's quota); null when none. */
  waiting: string | null;
  epoch: number;
  slot: number;
  createdAt: string;
  finishedAt: string | null;
}

export interface StartRow {
  key: string;
  epoch: number;
  /** The example's place in the dataset. */
  pos: number;
  attempt: number;
  status: StartStatus;
  groupId: string | null;
  uniform: boolean | null;
  detail: string | null;
}

function startRow(r: Record<string, SqlStorageValue>): StartRow {
  return {
    key: String(r.key),
    epoch: Number(r.epoch),
    pos: Number(r.pos),
    attempt: Number(r.attempt),
    status: String(r.status) as StartStatus,
    groupId: r.group_id === null ? null : String(r.group_id),
    uniform: r.uniform === null ? null : r.uniform === 1,
    detail: r.detail === null ? null : String(r.detail),
  };
}

export class ProducerStorage {
  constructor(private readonly sql: SqlStorage) {}

  producer(): ProducerRow | null {
    const r = this.sql.exec("SELECT * FROM producer").toArray()[0];
    if (r === undefined) return null;
    return {
      runId: String(r.run_id),
      request: JSON.parse(String(r.request)),
      envVersion: String(r.env_version),
      datasetSha256: String(r.dataset_sha256),
      planDigest: String(r.plan_digest),
      state: String(r.state) as ProducerState,
      reason: r.reason === null ? null : String(r.reason),
      lastError: r.last_error === null ? null : String(r.last_error),
      startedBy: r.started_by === null ? null : String(r.started_by),
      waiting: r.waiting === null ? null : String(r.waiting),
      epoch: Number(r.epoch),
      slot: Number(r.slot),
      createdAt: String(r.created_at),
      finishedAt: r.finished_at === null ? null : String(r.finished_at),
    };
  }

  /**
   * A new producer: its request and dataset replace the last one's, and it starts from the first
   * epoch. Groups the last one started are not started again: their keys reach them.
   */
  begin(
    row: Omit<
      ProducerRow,
      "state" | "reason" | "lastError" | "waiting" | "epoch" | "slot" | "finishedAt"
    >,
    examples: readonly TaskExample[],
  ): void {
    this.sql.exec("DELETE FROM producer");
    this.sql.exec("DELETE FROM examples");
    this.sql.exec("DELETE FROM starts");
    this.sql.exec(
      `INSERT INTO producer (id, run_id, request, env_version, dataset_sha256, plan_digest, state, epoch, slot, created_at, started_by)
       VALUES (1, ?, ?, ?, ?, ?, 'running', 0, 0, ?, ?)`,
      row.runId,
      JSON.stringify(row.request),
      row.envVersion,
      row.datasetSha256,
      row.planDigest,
      row.createdAt,
      row.startedBy,
    );
    for (const [pos, example] of examples.entries())
      this.sql.exec(
        "INSERT INTO examples (pos, id, example) VALUES (?, ?, ?)",
        pos,
        example.id,
        JSON.stringify(example),
      );
  }

  /** Moves the cursor: the next slot of this epoch is the one to start next. */
  advance(epoch: number, slot: number): void {
    this.sql.exec("UPDATE producer SET epoch = ?, slot = ?", epoch, slot);
  }

  setWaiting(waiting: string | null): void {
    this.sql.exec("UPDATE producer SET waiting = ?", waiting);
  }

  setLastError(error: string | null): void {
    this.sql.exec("UPDATE producer SET last_error = ?", error);
  }

  finish(state: Exclude<ProducerState, "running">, reason: string | null): void {
    this.sql.exec(
      "UPDATE producer SET state = ?, reason = ?, finished_at = ? WHERE state = 'running'",
      state,
      reason,
      new Date().toISOString(),
    );
  }

  /** A stop's: resamples waiting for room will not be sent. */
  cancelPending(): void {
    this.sql.exec("UPDATE starts SET status = 'cancelled' WHERE status = 'pending'");
  }

  exampleCount(): number {
    return Number(this.sql.exec("SELECT COUNT(*) AS n FROM examples").one().n);
  }

  example(pos: number): TaskExample {
    return JSON.parse(
      String(this.sql.exec("SELECT example FROM examples WHERE pos = ?", pos).one().example),
    );
  }

  /** Writes a start down before it is sent (or, for a resample, before there is room). */
  plan(
    key: string,
    planned: { epoch: number; pos: number; attempt: number },
    status: StartStatus,
    detail: string | null = null,
  ) {
    this.sql.exec(
      "INSERT OR IGNORE INTO starts (key, epoch, pos, attempt, status, detail) VALUES (?, ?, ?, ?, ?, ?)",
      key,
      planned.epoch,
      planned.pos,
      planned.attempt,
      status,
      detail,
    );
  }

  mark(key: string, status: StartStatus, fields: { groupId?: string; detail?: string } = {}) {
    this.sql.exec(
      "UPDATE starts SET status = ?, group_id = COALESCE(?, group_id), detail = COALESCE(?, detail) WHERE key = ?",
      status,
      fields.groupId ?? null,
      fields.detail ?? null,
      key,
    );
  }

  landed(key: string, status: "landed" | "failed", uniform: boolean): void {
    this.sql.exec(
      "UPDATE starts SET status = ?, uniform = ? WHERE key = ?",
      status,
      uniform ? 1 : 0,
      key,
    );
  }

  withStatus(...statuses: StartStatus[]): StartRow[] {
    const marks = statuses.map(() => "?").join(", ");
    return this.sql
      .exec(
        `SELECT * FROM starts WHERE status IN (${marks}) ORDER BY epoch, attempt, pos`,
        ...statuses,
      )
      .toArray()
      .map(startRow);
  }

  /** Starts by status, over the whole run. */
  counts(): Record<StartStatus, number> & { uniform: number; resampled: number } {
    const counts = {
      cancelled: 0,
      pending: 0,
      starting: 0,
      running: 0,
      landed: 0,
      failed: 0,
      rejected: 0,
      skipped: 0,
    };
    for (const r of this.sql.exec("SELECT status, COUNT(*) AS n FROM starts GROUP BY status"))
      counts[String(r.status) as StartStatus] = Number(r.n);
    const uniform = Number(
      this.sql
        .exec("SELECT COUNT(*) AS n FROM starts WHERE status = 'landed' AND uniform = 1")
        .one().n,
    );
    const resampled = Number(
      this.sql.exec("SELECT COUNT(*) AS n FROM starts WHERE attempt > 0").one().n,
    );
    return { ...counts, uniform, resampled };
  }

  /**
   * Examples with signal, by epoch: one of the example's groups in the epoch landed with rewards
   * that differ (what GRPO learns from), its first or a resample.
   */
  signalByEpoch(): Map<number, number> {
    const rows = this.sql.exec(
      `SELECT epoch, COUNT(DISTINCT pos) AS n FROM starts
       WHERE status = 'landed' AND uniform = 0 GROUP BY epoch`,
    );
    return new Map([...rows].map((r) => [Number(r.epoch), Number(r.n)]));
  }

  /** How many epochs in a row, up to the last, the pool sampler skipped the example. */
  skippedInARow(pos: number): number {
    let skipped = 0;
    for (const r of this.sql.exec(
      "SELECT status FROM starts WHERE pos = ? AND attempt = 0 ORDER BY epoch DESC",
      pos,
    )) {
      if (r.status !== "skipped") break;
      skipped++;
    }
    return skipped;
  }

  /** The first refusals, with the example they refused: what a user reads to fix the dataset. */
  rejections(limit: number): { exampleId: string; epoch: number; detail: string }[] {
    return this.sql
      .exec(
        `SELECT x.id AS example_id, s.epoch, s.detail FROM starts s JOIN examples x ON x.pos = s.pos
         WHERE s.status = 'rejected' ORDER BY s.epoch, s.pos LIMIT ?`,
        limit,
      )
      .toArray()
      .map((r) => ({
        exampleId: String(r.example_id),
        epoch: Number(r.epoch),
        detail: String(r.detail),
      }));
  }

  /**
   * Examples each epoch has finished with: the example's last attempt landed, failed or was
   * refused, and no resample of it waits or runs.
   */
  doneByEpoch(): Map<number, number> {
    const rows = this.sql.exec(
      `SELECT epoch, COUNT(*) AS n FROM (
         SELECT epoch, pos FROM starts GROUP BY epoch, pos
         HAVING SUM(status IN ('pending', 'starting', 'running')) = 0)
       GROUP BY epoch`,
    );
    return new Map([...rows].map((r) => [Number(r.epoch), Number(r.n)]));
  }
}
