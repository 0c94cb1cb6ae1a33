/**
 * The generation each episode is waiting for, if any. `queued`: to be sent; `sent`: on its way
 * to the host (a row that outlives the instance that sent it means the request was lost);
 * `waiting`: parked until `retryAt` because the host asked for a long backoff. The deadline
 * window (`deadlineAt`) spans an attempt's transport retries; a timeout opens a new one.
 */
import { z } from "zod";
import { ColumnUpdate } from "./column-update";
import { numOrNull, type Row } from "./columns";
import type { GroupDatabase } from "./database";

export const GenerationStateSchema = z.enum(["queued", "sent", "waiting"]);

export interface GenerationRow {
  idx: number;
  state: z.infer<typeof GenerationStateSchema>;
  timeouts: number;
  /** HTTP attempts this turn, across every window. */
  attempts: number;
  /** Transport retries used in the current window. */
  retries: number;
  sentAt: number | null;
  deadlineAt: number | null;
  retryAt: number | null;
}

function toGeneration(r: Row): GenerationRow {
  return {
    idx: Number(r.idx),
    state: GenerationStateSchema.parse(r.state),
    timeouts: Number(r.timeouts),
    attempts: Number(r.attempts),
    retries: Number(r.retries),
    sentAt: numOrNull(r.sent_at),
    deadlineAt: numOrNull(r.deadline_at),
    retryAt: numOrNull(r.retry_at),
  };
}

const UPDATABLE = [
  "state",
  "timeouts",
  "attempts",
  "retries",
  "sentAt",
  "deadlineAt",
  "retryAt",
] as const;

export class GenerationsTable {
  private mirror: Map<number, GenerationRow> | null = null;
  /** Every transition below in one statement (column-update.ts says why). */
  private readonly update: ColumnUpdate<(typeof UPDATABLE)[number]>;

  constructor(private readonly db: GroupDatabase) {
    this.update = new ColumnUpdate(db, "generations", UPDATABLE, "idx = ?");
    db.onReset(() => {
      this.mirror = null;
    });
    // A new group waits for no generation yet.
    db.onCreate(() => {
      this.mirror = new Map();
    });
  }

  private get rows(): Map<number, GenerationRow> {
    if (this.mirror === null) {
      this.mirror = new Map();
      for (const r of this.db.exec("SELECT * FROM generations"))
        this.mirror.set(Number(r.idx), toGeneration(r));
    }
    return this.mirror;
  }

  get(idx: number): GenerationRow | null {
    return this.rows.get(idx) ?? null;
  }

  has(idx: number): boolean {
    return this.rows.has(idx);
  }

  /** Writes the changed fields in the one UPDATE; the mirror takes them once it commits. */
  private change(idx: number, patch: Partial<Omit<GenerationRow, "idx">>): void {
    this.update.run(patch, idx);
    this.db.afterCommit(() => {
      const current = this.get(idx);
      if (current) this.rows.set(idx, { ...current, ...patch });
    });
  }

  /**
   * The generation is on its way to the host. The row is written only now: an instance that
   * dies while an episode waits for a permit leaves nothing to redo.
   */
  markSent(idx: number, deadlineAt: number): void {
    const sentAt = this.db.now();
    if (this.get(idx) === null) {
      this.db.exec(
        "INSERT INTO generations (idx, state, sent_at, deadline_at) VALUES (?, 'sent', ?, ?)",
        idx,
        sentAt,
        deadlineAt,
      );
      const row: GenerationRow = {
        idx,
        state: "sent",
        timeouts: 0,
        attempts: 0,
        retries: 0,
        sentAt,
        deadlineAt,
        retryAt: null,
      };
      this.db.afterCommit(() => this.rows.set(idx, row));
      return;
    }
    this.change(idx, { state: "sent", sentAt, deadlineAt, retryAt: null });
  }

  /**
   * A generation marked sent that did not go out after all (its run paused while its prompt was
   * being built), or was aborted by a pause with `interrupt`: back to waiting, with a fresh
   * window once it goes out again, so a restart meanwhile is not counted as a lost request.
   */
  unsend(idx: number): void {
    this.change(idx, { state: "queued", deadlineAt: null });
  }

  /** Lost with an earlier instance of the object: queued again, with a fresh window. */
  requeue(idx: number): void {
    this.change(idx, { state: "queued", deadlineAt: null, retries: 0 });
  }

  /** It ran past its deadline; returns how many times that has happened this turn. */
  timedOut(idx: number, attempts: number): number {
    const current = this.get(idx);
    const timeouts = (current?.timeouts ?? 0) + 1;
    const total = (current?.attempts ?? 0) + attempts;
    this.change(idx, { state: "queued", timeouts, attempts: total, deadlineAt: null, retries: 0 });
    return timeouts;
  }

  /** The host asked for a long wait: the generation sleeps in storage until `retryAt`. */
  park(idx: number, retryAt: number, attempts: number): void {
    const current = this.get(idx);
    const total = (current?.attempts ?? 0) + attempts;
    const retries = (current?.retries ?? 0) + attempts;
    this.change(idx, { state: "waiting", retryAt, attempts: total, retries });
  }

  /** The episode has its action, or ended: it waits for no generation. */
  remove(idx: number): void {
    this.db.exec("DELETE FROM generations WHERE idx = ?", idx);
    this.db.afterCommit(() => this.rows.delete(idx));
  }
}
