/**
 * The judge's in-flight limit, one object for the whole deployment: a score worker holds a slot
 * for each judge call, so at most JUDGE_MAX_INFLIGHT calls run at once across every group being
 * graded, and judging never crowds the inference host out from under generation. A slot is
 * leased (a score worker that dies mid-call frees it when its lease ends), waiters are served
 * first come first served, and one that waits past its deadline is told no. Held in memory: an
 * evicted gate starts empty, which can let a few extra calls through once, never block them.
 * (A stateless worker cannot share a queue across requests: a promise one request leaves for
 * another to settle is cancelled by the runtime as hung. An object can.)
 */
import { DurableObject } from "cloudflare:workers";

interface Waiter {
  ticket: string;
  leaseMs: number;
  until: number;
  answer: (granted: boolean) => void;
}

export class JudgeGate extends DurableObject<Env> {
  /** Ticket → when its lease ends. */
  private readonly held = new Map<string, number>();
  private readonly waiting: Waiter[] = [];
  private timer: ReturnType<typeof setTimeout> | null = null;
  /** JUDGE_MAX_INFLIGHT, as the last caller read it from its configuration. */
  private limit = 1;

  /**
   * Waits for one of `limit` slots until `waitMs` from now: true once held (for `leaseMs`), false
   * if none came.
   */
  async acquire(ticket: string, limit: number, leaseMs: number, waitMs: number): Promise<boolean> {
    this.limit = limit;
    return new Promise<boolean>((answer) => {
      this.waiting.push({ ticket, leaseMs, until: Date.now() + waitMs, answer });
      this.pump();
    });
  }

  async release(ticket: string): Promise<void> {
    this.held.delete(ticket);
    this.pump();
  }

  /** Calls held now and waiting: what a test or an operator reads. */
  async load(): Promise<{ held: number; waiting: number; limit: number }> {
    this.pump();
    return { held: this.held.size, waiting: this.waiting.length, limit: this.limit };
  }

  private pump(): void {
    const now = Date.now();
    for (const [ticket, ends] of this.held) if (ends <= now) this.held.delete(ticket);
    for (let i = this.waiting.length - 1; i >= 0; i--) {
      const waiter = this.waiting[i] as Waiter;
      if (waiter.until > now) continue;
      this.waiting.splice(i, 1);
      waiter.answer(false);
    }
    while (this.held.size < this.limit && this.waiting.length > 0) {
      const waiter = this.waiting.shift() as Waiter;
      this.held.set(waiter.ticket, now + waiter.leaseMs);
      waiter.answer(true);
    }
    this.wakeAtNextChange(now);
  }

  /** Pumps again when the next lease ends or the next waiter gives up, whichever is first. */
  private wakeAtNextChange(now: number): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    if (this.waiting.length === 0) return;
    const next = Math.min(...this.held.values(), ...this.waiting.map((w) => w.until));
    this.timer = setTimeout(() => this.pump(), Math.max(0, next - now) + 1);
  }
}
