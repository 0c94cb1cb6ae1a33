/**
 * The group's own row: its spec (parsed on every wake, so a spec written by an older deploy
 * takes today's defaults), its phase, and the bookkeeping of registration, scoring and landing.
 */
import { z } from "zod";
import { type GroupSpec, GroupSpecSchema } from "../group-spec";
import { ColumnUpdate } from "./column-update";
import { jsonOf, type Row, textOrNull } from "./columns";
import type { GroupDatabase } from "./database";

/** `running` until every episode ends, then `scoring`, `landing`, and gone once landed. */
export const GroupPhaseSchema = z.enum(["running", "scoring", "landing"]);
export type GroupPhase = z.infer<typeof GroupPhaseSchema>;

export interface GroupRow {
  spec: GroupSpec;
  phase: GroupPhase;
  registered: boolean;
  scoreAttempts: number;
  landAttempts: number;
  creditApplied: string | null;
  warnings: string[];
  lastError: string | null;
  /** The host its first episode was routed to: where the others start (they share a prompt). */
  homeHost: string | null;
  /** Failed calls to the inference hosts, by host: landed for `host_stats`. */
  hostFailures: Record<string, number>;
  /** Time its score calls took, all attempts (the run's bill counts it as environment time). */
  scoreMs: number;
}

const WarningsSchema = z.array(z.string());
const HostFailuresSchema = z.record(z.string(), z.number().int());

function toGroup(r: Row): GroupRow {
  return {
    spec: GroupSpecSchema.parse(jsonOf(r.spec)),
    phase: GroupPhaseSchema.parse(r.phase),
    registered: r.registered === 1,
    scoreAttempts: Number(r.score_attempts),
    landAttempts: Number(r.land_attempts),
    creditApplied: textOrNull(r.credit_applied),
    warnings: WarningsSchema.parse(jsonOf(r.warnings)),
    lastError: textOrNull(r.last_error),
    homeHost: textOrNull(r.home_host),
    hostFailures: HostFailuresSchema.parse(jsonOf(r.host_failures ?? "{}")),
    scoreMs: Number(r.score_ms ?? 0),
  };
}

const UPDATABLE = [
  "phase",
  "registered",
  "scoreAttempts",
  "landAttempts",
  "creditApplied",
  "warnings",
  "lastError",
  "homeHost",
  "hostFailures",
  "scoreMs",
] as const;

export class GroupStateTable {
  private cache: GroupRow | null = null;
  /** Every change below in one statement (column-update.ts says why). */
  private readonly update: ColumnUpdate<(typeof UPDATABLE)[number]>;

  constructor(private readonly db: GroupDatabase) {
    this.update = new ColumnUpdate(db, "group_state", UPDATABLE, "id = 1");
    db.onReset(() => {
      this.cache = null;
    });
  }

  get(): GroupRow {
    this.cache ??= toGroup(this.db.exec("SELECT * FROM group_state WHERE id = 1").one());
    return this.cache;
  }

  private patch(patch: Partial<GroupRow>): void {
    this.db.afterCommit(() => {
      this.cache = { ...this.get(), ...patch };
    });
  }

  insert(spec: GroupSpec): void {
    const json = JSON.stringify(spec);
    this.db.exec("INSERT INTO group_state (id, spec, phase) VALUES (1, ?, 'running')", json);
    // The row as a wake would read it back (its spec parsed as on every wake), without the read.
    const row = toGroup({
      spec: json,
      phase: "running",
      registered: 0,
      score_attempts: 0,
      land_attempts: 0,
      credit_applied: null,
      warnings: "[]",
      last_error: null,
      home_host: null,
      host_failures: "{}",
      score_ms: 0,
    });
    this.db.afterCommit(() => {
      this.cache = row;
    });
  }

  setPhase(phase: GroupPhase): void {
    this.update.run({ phase });
    this.patch({ phase });
  }

  markRegistered(): void {
    this.update.run({ registered: 1 });
    this.patch({ registered: true });
  }

  /** Counts one more attempt at `scoring` or `landing`, remembering why the last one failed. */
  countAttempt(what: "score" | "land", error: string | null): number {
    const group = this.get();
    const attempts = (what === "score" ? group.scoreAttempts : group.landAttempts) + 1;
    this.update.run({
      lastError: error,
      ...(what === "score" ? { scoreAttempts: attempts } : { landAttempts: attempts }),
    });
    this.patch({
      lastError: error,
      ...(what === "score" ? { scoreAttempts: attempts } : { landAttempts: attempts }),
    });
    return attempts;
  }

  /** The group's first routed episode names its home host. */
  setHomeHost(host: string): void {
    this.update.run({ homeHost: host });
    this.patch({ homeHost: host });
  }

  /** One more failed call to `host`. */
  countHostFailure(host: string): void {
    const hostFailures = { ...this.get().hostFailures };
    hostFailures[host] = (hostFailures[host] ?? 0) + 1;
    this.update.run({ hostFailures: JSON.stringify(hostFailures) });
    this.patch({ hostFailures });
  }

  /** A score call took `ms` (answered or not). */
  addScoreTime(ms: number): void {
    const scoreMs = this.get().scoreMs + ms;
    this.update.run({ scoreMs });
    this.patch({ scoreMs });
  }

  /** Credit is assigned: the group moves on to landing. */
  recordCredit(creditApplied: string, warnings: readonly string[]): void {
    this.update.run({
      creditApplied,
      warnings: JSON.stringify(warnings),
      phase: "landing",
    });
    this.patch({ creditApplied, warnings: [...warnings], phase: "landing" });
  }
}
