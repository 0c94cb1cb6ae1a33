/**
 * What the fleet scheduler knows of each host beyond its configuration, kept in its SQLite so a
 * restart forgets no ejection, pause, version or learned capability: one row per host, read once
 * when the object starts, written whenever it changes.
 */
import { numOrNull, textOrNull } from "../rollout/storage/columns";
import { HEALTHY, type HealthState, type HostHealth } from "./health";

export interface HostRecord {
  health: HostHealth;
  /** Takes no new episode (a trainer syncing its weights); what it has in flight finishes. */
  paused: boolean;
  /** The policy version it serves, as its trainer declared it; null when never declared. */
  policyVersion: number | null;
  /**
   * The models it refused the token fields for (SGLang streaming chat, hosts older than vLLM
   * 0.10.2): learned once, never asked again.
   */
  tokenRefusals: string[];
}

export const NEW_HOST: HostRecord = {
  health: HEALTHY,
  paused: false,
  policyVersion: null,
  tokenRefusals: [],
};

const UPSERT = `INSERT OR REPLACE INTO hosts (url, state, failures, last_ok_at, ejected_at,
  last_error, paused, policy_version, token_refusals) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`;

export class HostRecords {
  private readonly records = new Map<string, HostRecord>();

  constructor(private readonly sql: SqlStorage) {
    for (const r of sql.exec("SELECT * FROM hosts")) {
      this.records.set(String(r.url), {
        health: {
          state: String(r.state) as HealthState,
          failures: Number(r.failures),
          lastOkAt: Number(r.last_ok_at),
          ejectedAt: numOrNull(r.ejected_at),
          lastError: textOrNull(r.last_error),
        },
        paused: r.paused === 1,
        policyVersion: numOrNull(r.policy_version),
        tokenRefusals: JSON.parse(String(r.token_refusals)) as string[],
      });
    }
  }

  get(url: string): HostRecord {
    return this.records.get(url) ?? NEW_HOST;
  }

  /** Applies `change` and writes the row if anything changed; returns the record. */
  update(url: string, change: (record: HostRecord) => HostRecord): HostRecord {
    const before = this.get(url);
    const after = change(before);
    if (after === before) return before;
    this.records.set(url, after);
    const { health } = after;
    this.sql.exec(
      UPSERT,
      url,
      health.state,
      health.failures,
      health.lastOkAt,
      health.ejectedAt,
      health.lastError,
      after.paused ? 1 : 0,
      after.policyVersion,
      JSON.stringify(after.tokenRefusals),
    );
    return after;
  }
}
