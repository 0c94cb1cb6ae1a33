/**
 * The one coordinating object that bounds generations in flight toward the inference host,
 * across all groups. An episode takes a permit when its driver starts and holds it through
 * its turns (it never has more than one generation in flight), giving it back when it ends or
 * parks; so the permits in use bound the generations in flight. Over the limit, requests wait
 * in a fair queue: groups take turns, each group's waiters in order. Permits are persisted
 * leases, so a restart neither forgets them nor leaks them forever. Every call is O(1); only
 * the alarm, which reclaims expired leases, looks at all of them.
 */
import { DurableObject } from "cloudflare:workers";
import { migrate } from "../../utils/migrations";
import { LIMITER_MIGRATIONS } from "./migrations";

interface Waiter {
  ticket: string;
  leaseMs: number;
  /** Answers the waiting `acquire`: true once granted, false if the ticket was withdrawn. */
  answer: (granted: boolean) => void;
}

export class InflightLimiter extends DurableObject<Env> {
  private readonly permits = new Map<string, { group: string; expiresAt: number }>();
  private readonly waiting = new Map<string, Waiter[]>();
  /** Groups with waiters, in the order they are served (round robin). */
  private readonly turns: string[] = [];
  private limit = Number.POSITIVE_INFINITY;
  /** When the alarm is set to go off, as far as this instance knows. */
  private alarmAt: number | null = null;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    migrate(ctx.storage, LIMITER_MIGRATIONS);
    for (const r of ctx.storage.sql.exec("SELECT * FROM permits").toArray()) {
      this.permits.set(r.ticket as string, {
        group: r.group_id as string,
        expiresAt: Number(r.expires_at),
      });
    }
    ctx.blockConcurrencyWhile(async () => {
      this.alarmAt = await ctx.storage.getAlarm();
    });
  }

  /**
   * Resolves true once the ticket holds a permit, waiting in the fair queue when the limit is
   * reached; false if its holder withdrew it meanwhile (`releaseMany`). Acquiring a ticket
   * already held renews its lease.
   */
  async acquire(ticket: string, group: string, leaseMs: number, limit: number): Promise<boolean> {
    this.limit = limit;
    if (this.grantsAtOnce(ticket)) {
      this.grant(ticket, group, leaseMs);
      return true;
    }
    return new Promise<boolean>((answer) => {
      const queue = this.waiting.get(group) ?? [];
      if (queue.length === 0) this.turns.push(group);
      queue.push({ ticket, leaseMs, answer });
      this.waiting.set(group, queue);
    });
  }

  /**
   * Grants at once whichever of a group's tickets can be granted without waiting, and returns
   * them; the caller queues the rest one by one with `acquire`. One call for a whole group's
   * episodes instead of one each: a call to this object costs more than what it does.
   */
  async acquireMany(
    tickets: readonly string[],
    group: string,
    leaseMs: number,
    limit: number,
  ): Promise<string[]> {
    this.limit = limit;
    const granted: string[] = [];
    for (const ticket of tickets) {
      if (this.grantsAtOnce(ticket)) {
        this.grant(ticket, group, leaseMs);
        granted.push(ticket);
      }
    }
    return granted;
  }

  /** Held already (a renewal), or a new one under the limit with no one in line. */
  private grantsAtOnce(ticket: string): boolean {
    return this.permits.has(ticket) || (this.permits.size < this.limit && this.turns.length === 0);
  }

  async release(ticket: string): Promise<void> {
    this.drop(ticket);
    this.pump();
  }

  /**
   * Gives back the permits of a group's tickets, and withdraws those still waiting: an episode
   * that ended while its permit was queued must not take one later.
   */
  async releaseMany(group: string, tickets: readonly string[]): Promise<void> {
    for (const ticket of tickets) this.drop(ticket);
    const queue = this.waiting.get(group);
    if (queue !== undefined) {
      const withdrawn = new Set(tickets);
      const kept = queue.filter((waiter) => !withdrawn.has(waiter.ticket));
      for (const waiter of queue) if (withdrawn.has(waiter.ticket)) waiter.answer(false);
      if (kept.length > 0) this.waiting.set(group, kept);
      else this.forgetWaiters(group);
    }
    this.pump();
  }

  /** A group restarted: the permits its earlier instance held belong to episodes it lost. */
  async releaseGroup(group: string): Promise<void> {
    // Its waiters are dead calls too: granting them would only leak permits. Each is answered
    // (not granted), so none can hang a caller that is still there.
    for (const waiter of this.waiting.get(group) ?? []) waiter.answer(false);
    this.forgetWaiters(group);
    for (const [ticket, permit] of this.permits) if (permit.group === group) this.drop(ticket);
    this.pump();
  }

  async stats(): Promise<{ inFlight: number; waiting: number }> {
    let waiting = 0;
    for (const queue of this.waiting.values()) waiting += queue.length;
    return { inFlight: this.permits.size, waiting };
  }

  /** Reclaims permits whose lease ran out (their holder is gone), then re-arms. */
  override async alarm(): Promise<void> {
    this.alarmAt = null;
    const now = Date.now();
    for (const [ticket, permit] of this.permits) if (permit.expiresAt <= now) this.drop(ticket);
    this.pump();
    let earliest = Number.POSITIVE_INFINITY;
    for (const permit of this.permits.values()) earliest = Math.min(earliest, permit.expiresAt);
    if (earliest !== Number.POSITIVE_INFINITY) this.arm(earliest);
  }

  private grant(ticket: string, group: string, leaseMs: number): void {
    const expiresAt = Date.now() + leaseMs;
    this.permits.set(ticket, { group, expiresAt });
    this.ctx.storage.sql.exec(
      "INSERT OR REPLACE INTO permits (ticket, group_id, expires_at) VALUES (?, ?, ?)",
      ticket,
      group,
      expiresAt,
    );
    if (this.alarmAt === null || expiresAt < this.alarmAt) this.arm(expiresAt);
  }

  /** Drops the group's queue and its turn in the round robin. */
  private forgetWaiters(group: string): void {
    this.waiting.delete(group);
    const turn = this.turns.indexOf(group);
    if (turn !== -1) this.turns.splice(turn, 1);
  }

  private arm(at: number): void {
    this.alarmAt = at;
    void this.ctx.storage.setAlarm(at);
  }

  private drop(ticket: string): void {
    if (this.permits.delete(ticket))
      this.ctx.storage.sql.exec("DELETE FROM permits WHERE ticket = ?", ticket);
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
        next.answer(true);
      }
    }
  }
}
