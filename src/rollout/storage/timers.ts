/**
 * One alarm, many timers: each timer is a row, and the object re-arms its single alarm to the
 * earliest. A timer is named by what it is for, never by a string built from it.
 */
import { z } from "zod";
import type { GroupDatabase } from "./database";

export type GroupTimer =
  /** Registering the group in D1 failed: try again. */
  | { kind: "register" }
  /** The score worker could not grade the group: try again. */
  | { kind: "score" }
  /** D1 or R2 refused the landing: try again. */
  | { kind: "land" }
  /** An episode's generation is parked until the host's Retry-After has passed. */
  | { kind: "retry"; episode: number };

const KindSchema = z.enum(["register", "score", "land", "retry"]);

/** The `episode` column of the group's own timers, which belong to no episode. */
const NO_EPISODE = -1;

const episodeOf = (timer: GroupTimer) => (timer.kind === "retry" ? timer.episode : NO_EPISODE);

function timerOf(kind: GroupTimer["kind"], episode: number): GroupTimer {
  return kind === "retry" ? { kind, episode } : { kind };
}

type Kind = GroupTimer["kind"];

export class TimersTable {
  /** When each timer is due, by kind, then by episode (NO_EPISODE for the group's own). */
  private mirror: Map<Kind, Map<number, number>> | null = null;

  constructor(private readonly db: GroupDatabase) {
    db.onReset(() => {
      this.mirror = null;
    });
    db.onCreate(() => {
      this.mirror = new Map();
    });
  }

  private get rows(): Map<Kind, Map<number, number>> {
    if (this.mirror === null) {
      this.mirror = new Map();
      for (const r of this.db.exec("SELECT kind, episode, due_at FROM timers"))
        this.of(KindSchema.parse(r.kind)).set(Number(r.episode), Number(r.due_at));
    }
    return this.mirror;
  }

  private of(kind: Kind): Map<number, number> {
    const mirror = this.mirror ?? this.rows;
    let byEpisode = mirror.get(kind);
    if (byEpisode === undefined) {
      byEpisode = new Map();
      mirror.set(kind, byEpisode);
    }
    return byEpisode;
  }

  set(timer: GroupTimer, dueAt: number): void {
    this.db.exec(
      "INSERT OR REPLACE INTO timers (kind, episode, due_at) VALUES (?, ?, ?)",
      timer.kind,
      episodeOf(timer),
      dueAt,
    );
    this.db.afterCommit(() => this.of(timer.kind).set(episodeOf(timer), dueAt));
  }

  clear(timer: GroupTimer): void {
    if (!this.isSet(timer)) return;
    this.db.exec("DELETE FROM timers WHERE kind = ? AND episode = ?", timer.kind, episodeOf(timer));
    this.db.afterCommit(() => this.of(timer.kind).delete(episodeOf(timer)));
  }

  /** Whether the timer is set, however far off. */
  isSet(timer: GroupTimer): boolean {
    return this.rows.get(timer.kind)?.has(episodeOf(timer)) === true;
  }

  /** The timers due by `now`, earliest first. */
  due(now: number): GroupTimer[] {
    const due: { timer: GroupTimer; dueAt: number }[] = [];
    for (const [kind, byEpisode] of this.rows)
      for (const [episode, dueAt] of byEpisode)
        if (dueAt <= now) due.push({ timer: timerOf(kind, episode), dueAt });
    return due.sort((a, b) => a.dueAt - b.dueAt).map((t) => t.timer);
  }

  /** When the earliest timer is due; null when none is set. */
  next(): number | null {
    let next: number | null = null;
    for (const byEpisode of this.rows.values())
      for (const dueAt of byEpisode.values()) next = next === null ? dueAt : Math.min(next, dueAt);
    return next;
  }
}
