/**
 * When the fleet run passes (`npm run test:fleet`): what it measures, written to
 * reliability/results/fleet.json, and the predicate behind its `ok`, apart from the run so that
 * a test can show a broken build fails it. The run kills one host of four and slows another;
 * neither is the episodes' fault, so a failed episode or a group landed as failed is a defect.
 */
import type { EpisodeEnds } from "./verdicts";

/** What GET /v1/hosts said of one host at one moment. */
export interface HostEvent {
  atSeconds: number;
  host: string;
  state: string;
  lastError: string | null;
}

export interface FleetRunResult {
  date: string;
  short: boolean;
  hosts: number;
  groups: number;
  groupSize: number;
  /** Turns of each marathon episode. */
  turns: number;
  /** Groups started after the killed host was readmitted. */
  lateGroups: number;
  /** The host SIGKILLed, and the one ten times slower, by index. */
  killedHost: number;
  slowHost: number;
  slowFactor: number;
  killedAtSeconds: number;
  /** Episodes holding a permit on the killed host just before the kill: what it interrupted. */
  inFlightOnKilledHost: number;
  /** When GET /v1/hosts first showed the killed host ejected; null: never. */
  ejectedAtSeconds: number | null;
  /**
   * When its process was started again, when a probe readmitted it (taking episodes on trial,
   * `probing`), and when it was healthy again, by an answer or a later probe (null: never).
   */
  revivedAtSeconds: number;
  readmittedAtSeconds: number | null;
  healthyAgainAtSeconds: number | null;
  /** Times a host other than the killed one was shown ejected: each is a healthy host lost. */
  otherEjections: number;
  /** Generations each host answered (the killed one: its second process only). */
  requestsByHost: number[];
  /** Every change of state GET /v1/hosts showed, in order. */
  timeline: HostEvent[];
  landed: number;
  failedGroups: number;
  served: number;
  episodes: number;
  lost: number;
  duplicated: number;
  episodeEnds: EpisodeEnds;
  failureReasons: Record<string, number>;
  seconds: number;
  latency: { ttftMs: number; msPerToken: number };
  ok: boolean;
  problems: string[];
}

export type FleetFigures = Omit<FleetRunResult, "ok" | "problems">;

/**
 * Every group landed (none as failed) and served once, every episode completed; the killed
 * host was ejected after it died and readmitted after it came back, and answered again; the
 * slow host kept serving; no other host was ever ejected.
 */
export function fleetVerdict(r: FleetFigures): { ok: boolean; problems: string[] } {
  const expected = r.groups * r.groupSize;
  const revived = r.requestsByHost[r.killedHost] ?? 0;
  const slow = r.requestsByHost[r.slowHost] ?? 0;
  const checks: [boolean, string][] = [
    [r.landed === r.groups, `${r.landed} of ${r.groups} groups landed`],
    [r.failedGroups === 0, `${r.failedGroups} groups landed as failed`],
    [r.served === r.groups, `${r.served} of ${r.groups} groups served to the trainer`],
    [r.lost === 0, `${r.lost} episodes lost`],
    [r.duplicated === 0, `${r.duplicated} episodes served twice`],
    [
      r.episodeEnds.completed === expected,
      `${r.episodeEnds.completed} of ${expected} episodes completed (${r.episodeEnds.truncated} truncated, ${r.episodeEnds.failed} failed)`,
    ],
    [r.inFlightOnKilledHost > 0, "the kill found no episode on the host"],
    [
      r.ejectedAtSeconds !== null && r.ejectedAtSeconds >= r.killedAtSeconds,
      "the killed host was never shown ejected",
    ],
    [
      r.readmittedAtSeconds !== null && r.readmittedAtSeconds >= r.revivedAtSeconds,
      "the killed host was not readmitted after it came back",
    ],
    [r.healthyAgainAtSeconds !== null, "the readmitted host was never healthy again"],
    [revived > 0, "the readmitted host answered nothing"],
    [r.otherEjections === 0, `hosts that were never killed were ejected ${r.otherEjections} times`],
    [slow > 0, "the slow host answered nothing"],
  ];
  const problems = checks.filter(([holds]) => !holds).map(([, problem]) => problem);
  return { ok: problems.length === 0, problems };
}
