/**
 * The one coordinating object that bounds generations in flight toward the inference host,
 * across all groups. Over the limit, requests wait in a fair queue: groups take turns, and
 * each group's waiters are served in order. Permits are leases, persisted, so a restart
 * neither forgets them nor leaks them forever.
 */
import { DurableObject } from "cloudflare:workers";

interface Waiter {
  ticket: string;
  leaseMs: number;
  grant: () => void;
}

export class InflightLimiter extends DurableObject<Env> {
  private readonly permits = new Map<string, { group: string; expiresAt: number }>();
  private readonly waiting = new Map<string, Waiter[]>();
  /** Groups with waiters, in the order they are served (round robin). */
  private readonly turns: string[] = [];
  private limit = Number.POSITIVE_INFINITY;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    const sql = ctx.storage.sql;
    sql.exec(
      "CREATE TABLE IF NOT EXISTS permits (ticket TEXT PRIMARY KEY, group_id TEXT NOT NULL, expires_at INTEGER NOT NULL)",
    );
    for (const r of sql.exec("SELECT * FROM permits").toArray()) {
      this.permits.set(r.ticket as string, {
        group: r.group_id as string,
        expiresAt: Number(r.expires_at),
      });
    }
  }

  /** Resolves once the ticket holds a permit; waits in the fair queue when the limit is reached. */
  async acquire(ticket: string, group: string, leaseMs: number, limit: number): Promise<void> {
    this.limit = limit;
    this.expire();
    if (this.permits.has(ticket) || (this.permits.size < limit && this.turns.length === 0)) {
      this.grant(ticket, group, leaseMs);
      return;
    }
    await new Promise<void>((resolve) => {
      const queue = this.waiting.get(group) ?? [];
      if (queue.length === 0) this.turns.push(group);
      queue.push({ ticket, leaseMs, grant: resolve });
      this.waiting.set(group, queue);
    });
  }

  async release(ticket: string): Promise<void> {
    this.drop([ticket]);
  }

  /** A group restarted: the permits its earlier instance held belong to generations it lost. */
  async releaseGroup(group: string): Promise<void> {
    // Its waiters are dead calls too: granting them would only leak permits.
    this.waiting.delete(group);
    const turn = this.turns.indexOf(group);
    if (turn !== -1) this.turns.splice(turn, 1);
    this.drop([...this.permits].filter(([, p]) => p.group === group).map(([ticket]) => ticket));
  }

  async stats(): Promise<{ inFlight: number; waiting: number }> {
    let waiting = 0;
    for (const queue of this.waiting.values()) waiting += queue.length;
    return { inFlight: this.permits.size, waiting };
  }

  override async alarm(): Promise<void> {
    this.expire();
    this.pump();
    await this.armExpiry();
  }

  private grant(ticket: string, group: string, leaseMs: number): void {
    const expiresAt = Date.now() + leaseMs;
    const known = this.permits.has(ticket);
    this.permits.set(ticket, { group, expiresAt });
    this.ctx.storage.sql.exec(
      "INSERT OR REPLACE INTO permits (ticket, group_id, expires_at) VALUES (?, ?, ?)",
      ticket,
      group,
      expiresAt,
    );
    if (!known) void this.armExpiry();
  }

  private drop(tickets: string[]): void {
    for (const ticket of tickets) {
      if (this.permits.delete(ticket))
        this.ctx.storage.sql.exec("DELETE FROM permits WHERE ticket = ?", ticket);
    }
    this.pump();
  }

  /** Permits past their lease were lost with their holder. */
  private expire(): void {
    const now = Date.now();
    const stale = [...this.permits].filter(([, p]) => p.expiresAt <= now).map(([ticket]) => ticket);
    if (stale.length > 0) this.drop(stale);
  }

  /** Grants freed permits, one group at a time, in turn. */
  private pump(): void {
    while (this.permits.size < this.limit && this.turns.length > 0) {
      const group = this.turns.shift() as string;
      const queue = this.waiting.get(group) ?? [];
      const next = queue.shift();
      if (queue.length > 0) this.turns.push(group);
      else this.waiting.delete(group);
      if (next) {
        this.grant(next.ticket, group, next.leaseMs);
        next.grant();
      }
    }
  }

  private async armExpiry(): Promise<void> {
    let earliest = Number.POSITIVE_INFINITY;
    for (const p of this.permits.values()) earliest = Math.min(earliest, p.expiresAt);
    const current = await this.ctx.storage.getAlarm();
    if (earliest === Number.POSITIVE_INFINITY) return;
    if (current === null || current > earliest) await this.ctx.storage.setAlarm(earliest);
  }
}
