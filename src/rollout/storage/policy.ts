/**
 * Asynchronous RL, as the group object keeps it: the run's policy as last heard (pushed by the
 * API, re-read on the heartbeat), why the group was cancelled as stale if it was, and the
 * version each turn's generation was sent at.
 */
import type { KnownPolicy } from "../../policy/known-policy";
import { numOrNull, textOrNull } from "./columns";
import type { GroupDatabase } from "./database";

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

export class PolicyTable {
  private cache: State | null = null;

  constructor(private readonly db: GroupDatabase) {
    db.onReset(() => {
      this.cache = null;
    });
    // A new group has heard no policy yet (the start pushes one in a write after this).
    db.onCreate(() => {
      this.cache = { policy: null, stale: null, turns: new Map() };
    });
  }

  private get state(): State {
    if (this.cache === null) {
      const row = this.db.exec("SELECT * FROM run_policy WHERE id = 1").toArray()[0];
      const turns = new Map<number, Map<number, number>>();
      for (const r of this.db.exec("SELECT idx, turn, version FROM turn_versions")) {
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
                maxLag: numOrNull(row.max_lag),
                paused: row.paused === 1,
                // An interrupt acts once, when the update is taken: generations in flight then
                // were aborted; an instance reading it back has none from before.
                interrupt: false,
                revision: Number(row.revision),
              },
        stale: textOrNull(row?.stale),
        turns,
      };
    }
    return this.cache;
  }

  /** The run's policy as last heard; null for a run whose trainer never set one. */
  known(): KnownPolicy | null {
    return this.state.policy;
  }

  stale(): string | null {
    return this.state.stale;
  }

  /** Takes an update if it is newer than what this group knows; true if it was. */
  apply(policy: KnownPolicy): boolean {
    const known = this.state.policy;
    if (known !== null && policy.revision <= known.revision) return false;
    this.db.exec(
      `INSERT INTO run_policy (id, version, max_lag, paused, revision) VALUES (1, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET version = excluded.version, max_lag = excluded.max_lag,
         paused = excluded.paused, revision = excluded.revision`,
      policy.version,
      policy.maxLag,
      policy.paused ? 1 : 0,
      policy.revision,
    );
    this.db.afterCommit(() => {
      this.state.policy = { ...policy, interrupt: false };
    });
    return true;
  }

  markStale(detail: string): void {
    if (this.state.policy === null)
      throw new Error("a group goes stale only against its run's policy");
    this.db.exec("UPDATE run_policy SET stale = ? WHERE id = 1", detail);
    this.db.afterCommit(() => {
      this.state.stale = detail;
    });
  }

  /** Records the version a turn's generation was sent at; a re-send records its own. */
  recordSend(idx: number, turn: number, version: number): void {
    this.db.exec(
      "INSERT OR REPLACE INTO turn_versions (idx, turn, version) VALUES (?, ?, ?)",
      idx,
      turn,
      version,
    );
    this.db.afterCommit(() => {
      const episode = this.state.turns.get(idx) ?? new Map<number, number>();
      episode.set(turn, version);
      this.state.turns.set(idx, episode);
    });
  }

  /** The version a turn was sent at, if it was recorded. */
  turnVersion(idx: number, turn: number): number | undefined {
    return this.state.turns.get(idx)?.get(turn);
  }
}
