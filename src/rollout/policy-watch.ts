/**
 * Asynchronous RL, as one group lives it: the gate that holds its generations while the run is
 * paused, the signal that aborts them once the group is cancelled as stale, and the policy
 * version each turn goes out at. What it knows is kept in the object's storage (storage/policy.ts),
 * so a restart keeps all of it; the gate and the signals are this instance's.
 */
import type { KnownPolicy } from "../policy/known-policy";
import { Flights } from "./generation/flights";
import type { PolicyTable } from "./storage/policy";

/** The lowest and highest version some turns were sent at; nulls when there are none. */
export interface PolicySpan {
  min: number | null;
  max: number | null;
}

/**
 * The span of turns 0 to n - 1 of each episode (`sent`: episode to n), by `versionOf`: a turn's
 * version, or every version that sampled some of it.
 */
export function policySpan(
  sent: ReadonlyMap<number, number>,
  versionOf: (idx: number, turn: number) => number | readonly number[],
): PolicySpan {
  let min: number | null = null;
  let max: number | null = null;
  for (const [idx, turns] of sent)
    for (let turn = 0; turn < turns; turn++) {
      const versions = versionOf(idx, turn);
      for (const version of typeof versions === "number" ? [versions] : versions) {
        min = min === null ? version : Math.min(min, version);
        max = max === null ? version : Math.max(max, version);
      }
    }
  return { min, max };
}

export class PolicyWatch {
  private readonly cancel = new AbortController();
  /** Fires at the next pause or cancellation; renewed each time it fires. */
  private interrupts = new AbortController();
  /** Generations waiting for the run to resume, or for the group to be cancelled. */
  private waiters: (() => void)[] = [];
  /** Its generations in flight, which a pause with `interrupt` aborts. */
  readonly flights = new Flights();
  /** Resolves once the last interrupt's generations have recorded what it left of them. */
  private lastInterrupt: Promise<void> = Promise.resolve();

  constructor(private readonly table: PolicyTable) {}

  /** The run's policy as last heard; null for a run whose trainer never set one. */
  known(): KnownPolicy | null {
    return this.table.known();
  }

  get paused(): boolean {
    return this.table.known()?.paused === true;
  }

  /** Why the group was cancelled as stale; null while it runs on. */
  get stale(): string | null {
    const stale = this.table.stale();
    // An instance that wakes after the cancellation starts out cancelled.
    if (stale !== null && !this.cancel.signal.aborted) this.cancel.abort(new Error(stale));
    return stale;
  }

  /** Aborted once the group is cancelled: its generations in flight stop. */
  get signal(): AbortSignal {
    void this.stale;
    return this.cancel.signal;
  }

  /**
   * Fires at the next pause or cancellation: an episode queued for a permit gives its place up
   * then, rather than wait for a permit it could not use.
   */
  get interruption(): AbortSignal {
    if (this.paused || this.stale !== null) return AbortSignal.abort();
    return this.interrupts.signal;
  }

  private interrupt(): void {
    this.interrupts.abort();
    this.interrupts = new AbortController();
  }

  /** Takes an update if it is newer than what this group knows; true if it was. */
  apply(policy: KnownPolicy): boolean {
    if (!this.table.apply(policy)) return false;
    if (policy.paused) {
      if (policy.interrupt) this.lastInterrupt = this.flights.interrupt();
      this.interrupt();
    } else this.wake();
    return true;
  }

  /** Resolves once what the last interrupt aborted is recorded (kept or counted). */
  interruptRecorded(): Promise<void> {
    return this.lastInterrupt;
  }

  /** Cancels the group: its generations abort, and every waiting one is let go to end. */
  markStale(detail: string): void {
    if (this.table.stale() !== null) return;
    this.table.markStale(detail);
    this.cancel.abort(new Error(detail));
    this.interrupt();
    this.wake();
  }

  /** Resolves once the run is not paused, or the group was cancelled. */
  async untilRunnable(): Promise<void> {
    while (this.paused && this.stale === null)
      await new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const resolve of waiters) resolve();
  }

  /**
   * Records the version a turn's generation was sent at; a re-send records its own. That is the
   * host's when its trainer declared the version it serves (a rolling weight sync), else the
   * run's, once the run has a policy: before, every turn is sampled by the group's own version,
   * which needs no row (a run that never sets one writes nothing per turn).
   */
  recordSend(idx: number, turn: number, hostVersion: number | null = null): void {
    const version = hostVersion ?? this.table.known()?.version ?? null;
    if (version !== null) this.table.recordSend(idx, turn, version);
  }

  /** The version a turn was sent at: the recorded one, else the group's own (sent before any). */
  turnVersion(idx: number, turn: number, groupVersion: number): number {
    return this.table.turnVersion(idx, turn) ?? groupVersion;
  }

  /**
   * The lowest and highest version the generations sent so far went out at, given each
   * episode's sent turns (its sampled ones, and the one in flight); nulls before the first. A
   * group's lowest version decides whether it went stale.
   */
  span(sent: ReadonlyMap<number, number>, groupVersion: number): PolicySpan {
    return policySpan(sent, (idx, turn) => this.turnVersion(idx, turn, groupVersion));
  }
}
