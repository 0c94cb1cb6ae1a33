/**
 * Asynchronous RL, as one group sees it: what it knows of its run's policy (pushed by the API on
 * every change, re-read from D1 on the heartbeat), the gate that holds its generations while the
 * run is paused, the policy version each turn was sent at, and whether the group has gone stale.
 * Beside the transcripts in the object's SQLite (tables of its own), so a restart keeps all of it.
 */
import { beyondMaxLag, type KnownPolicy } from "../db/run-policies";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS run_policy (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  version INTEGER NOT NULL,
  max_lag INTEGER,
  paused INTEGER NOT NULL,
  revision INTEGER NOT NULL,
  stale TEXT
);
CREATE TABLE IF NOT EXISTS turn_versions (
  idx INTEGER NOT NULL,
  turn INTEGER NOT NULL,
  version INTEGER NOT NULL,
  PRIMARY KEY (idx, turn)
);`;

interface State {
  policy: KnownPolicy | null;
  /** Why the group was cancelled as stale; null while it is not. */
  stale: string | null;
  /**
   * The version each episode's turns were (last) sent at, by turn; none for turns sent before
   * the run had a policy (those went out at the group's own version).
   */
  turns: Map<number, Map<number, number>>;
}

/** Why a group whose oldest generation went out at `lowest` is too stale to go on, or null. */
export function staleness(policy: KnownPolicy, lowest: number): string | null {
  if (!beyondMaxLag(policy, lowest)) return null;
  return `the run's policy moved to version ${policy.version}; this group's lowest version is ${lowest}, more than max_lag ${policy.maxLag} behind`;
}

/** The lowest and highest version some turns were sent at; nulls when there are none. */
export interface PolicySpan {
  min: number | null;
  max: number | null;
}

/** The span of turns 0 to n - 1 of each episode (`sent`: episode to n), by `versionOf`. */
export function policySpan(
  sent: ReadonlyMap<number, number>,
  versionOf: (idx: number, turn: number) => number,
): PolicySpan {
  let min: number | null = null;
  let max: number | null = null;
  for (const [idx, turns] of sent)
    for (let turn = 0; turn < turns; turn++) {
      const version = versionOf(idx, turn);
      min = min === null ? version : Math.min(min, version);
      max = max === null ? version : Math.max(max, version);
    }
  return { min, max };
}

export class PolicyWatch {
  private cache: State | null = null;
  private readonly cancel = new AbortController();
  /** Fires at the next pause or cancellation; renewed each time it fires. */
  private interrupts = new AbortController();
  /** Generations waiting for the run to resume, or for the group to be cancelled. */
  private waiters: (() => void)[] = [];

  constructor(private readonly sql: SqlStorage) {}

  private get state(): State {
    if (this.cache === null) {
      this.sql.exec(SCHEMA);
      const row = this.sql.exec("SELECT * FROM run_policy WHERE id = 1").toArray()[0];
      const turns = new Map<number, Map<number, number>>();
      for (const r of this.sql.exec("SELECT idx, turn, version FROM turn_versions")) {
        const idx = Number(r.idx);
        const episode = turns.get(idx) ?? new Map<number, number>();
        episode.set(Number(r.turn), Number(r.version));
        turns.set(idx, episode);
      }
      this.cache = {
        policy:
          row === undefined
            ? null
            : {
                version: Number(row.version),
                maxLag: row.max_lag === null ? null : Number(row.max_lag),
                paused: row.paused === 1,
                revision: Number(row.revision),
              },
        stale: (row?.stale as string | null | undefined) ?? null,
        turns,
      };
      // An instance that wakes after the cancellation starts out cancelled.
      if (this.cache.stale !== null) this.cancel.abort();
    }
    return this.cache;
  }

  /** The run's policy as last heard; null for a run whose trainer never set one. */
  known(): KnownPolicy | null {
    return this.state.policy;
  }

  get paused(): boolean {
    return this.state.policy?.paused === true;
  }

  /** Why the group was cancelled as stale; null while it runs on. */
  get stale(): string | null {
    return this.state.stale;
  }

  /** Aborted once the group is cancelled: its generations in flight stop. */
  get signal(): AbortSignal {
    void this.state;
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
    const known = this.state.policy;
    if (known !== null && policy.revision <= known.revision) return false;
    this.sql.exec(
      `INSERT INTO run_policy (id, version, max_lag, paused, revision) VALUES (1, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET version = excluded.version, max_lag = excluded.max_lag,
         paused = excluded.paused, revision = excluded.revision`,
      policy.version,
      policy.maxLag,
      policy.paused ? 1 : 0,
      policy.revision,
    );
    this.state.policy = { ...policy };
    if (policy.paused) this.interrupt();
    else this.wake();
    return true;
  }

  /** Cancels the group: its generations abort, and every waiting one is let go to end. */
  markStale(detail: string): void {
    if (this.state.stale !== null) return;
    const policy = this.state.policy;
    if (policy === null) throw new Error("a group goes stale only against its run's policy");
    this.sql.exec("UPDATE run_policy SET stale = ? WHERE id = 1", detail);
    this.state.stale = detail;
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
   * Records the version a turn's generation was sent at; a re-send records its own. Only once the
   * run has a policy: before, every turn is sampled by the group's own version, which needs no
   * row (a run that never sets one writes nothing per turn).
   */
  recordSend(idx: number, turn: number): void {
    const policy = this.state.policy;
    if (policy === null) return;
    this.sql.exec(
      "INSERT OR REPLACE INTO turn_versions (idx, turn, version) VALUES (?, ?, ?)",
      idx,
      turn,
      policy.version,
    );
    const episode = this.state.turns.get(idx) ?? new Map<number, number>();
    episode.set(turn, policy.version);
    this.state.turns.set(idx, episode);
  }

  /** The version a turn was sent at: the recorded one, else the group's own (sent before any). */
  turnVersion(idx: number, turn: number, groupVersion: number): number {
    return this.state.turns.get(idx)?.get(turn) ?? groupVersion;
  }

  /**
   * The lowest and highest version the generations sent so far went out at, given each
   * episode's sent turns (its sampled ones, and the one in flight); nulls before the first. A
   * group's lowest version decides whether it went stale.
   */
  span(sent: ReadonlyMap<number, number>, groupVersion: number): PolicySpan {
    return policySpan(sent, (idx, turn) => this.turnVersion(idx, turn, groupVersion));
  }

  /** After landing: storage is gone, so is what was read from it. */
  forget(): void {
    this.cache = null;
  }
}
