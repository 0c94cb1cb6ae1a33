/**
 * When the load and crash runs pass: what they measure (`LoadResult`, `CrashResult`, written to
 * reliability/results/) and the predicates behind their `ok`, apart from the runs so that a test
 * can show a broken build fails them. Neither run injects a fault into an episode (the host and
 * the environment are healthy; the crash run kills the process, which the pipeline must absorb),
 * so a failed episode or a group landed as failed is a defect in both: `ok` needs every group
 * landed, none as failed, and every episode completed.
 */

/** Episodes by how they ended: `completed` (done or max_turns), `truncated`, `failed`. */
export type EpisodeEnds = Record<"completed" | "truncated" | "failed", number>;

export interface LoadResult {
  date: string;
  short: boolean;
  groups: number;
  groupSize: number;
  started: number;
  /** Landed with at least one episode that did not fail. */
  landed: number;
  /** Landed as failed: every episode failed. */
  failedGroups: number;
  served: number;
  episodes: number;
  distinctEpisodes: number;
  lost: number;
  duplicated: number;
  episodeEnds: EpisodeEnds;
  peakInFlightEpisodes: number;
  seconds: number;
  turns: number;
  turnsPerSecond: number;
  overheadMs: { count: number; p50: number | null; p99: number | null; mean: number | null };
  latency: { ttftMs: number; msPerToken: number; msPerPromptToken: number };
  ok: boolean;
  /** Why `ok` is false, one line each; empty when it is true. */
  problems: string[];
}

/** Where the run stood at one kill, read from every started group just before it. */
export interface Kill {
  atSeconds: number;
  /** Groups started so far (the waves before this kill and this one). */
  started: number;
  /** Groups with episodes still running: what the kill interrupts. */
  midEpisode: number;
  /** Groups done with their episodes, being graded or landed. */
  scoring: number;
  landedBefore: number;
}

export interface CrashResult {
  date: string;
  short: boolean;
  groups: number;
  groupSize: number;
  /** The run's MAX_REDISPATCHES: above the kills, so no episode can run out of re-dispatches. */
  maxRedispatches: number;
  kills: Kill[];
  seconds: number;
  /** Groups with a D1 row, as started. */
  groupRows: number;
  landedGroups: number;
  failedGroups: number;
  episodes: number;
  expectedEpisodes: number;
  duplicatedEpisodes: number;
  brokenTranscripts: number;
  unaccountedEpisodes: number;
  episodeEnds: EpisodeEnds;
  redispatches: number;
  failureReasons: Record<string, number>;
  ok: boolean;
  /** Why `ok` is false, one line each; empty when it is true. */
  problems: string[];
}

export interface Verdict {
  ok: boolean;
  problems: string[];
}

type Expectation = [holds: boolean, problem: string];

function verdict(expectations: readonly Expectation[]): Verdict {
  const problems = expectations.filter(([holds]) => !holds).map(([, problem]) => problem);
  return { ok: problems.length === 0, problems };
}

function endsOf(ends: EpisodeEnds, expected: number): Expectation[] {
  return [
    [
      ends.completed === expected,
      `${ends.completed} of ${expected} episodes completed (${ends.truncated} truncated, ${ends.failed} failed)`,
    ],
  ];
}

type LoadFigures = Omit<LoadResult, "ok" | "problems">;
type CrashFigures = Omit<CrashResult, "ok" | "problems">;

/** Every group started, landed (none as failed) and served once; every episode completed. */
export function loadVerdict(r: LoadFigures): Verdict {
  const expected = r.groups * r.groupSize;
  return verdict([
    [r.started === r.groups, `${r.started} of ${r.groups} groups started`],
    [r.landed === r.groups, `${r.landed} of ${r.groups} groups landed`],
    [r.failedGroups === 0, `${r.failedGroups} groups landed as failed`],
    [r.served === r.groups, `${r.served} of ${r.groups} groups served to the trainer`],
    [r.lost === 0, `${r.lost} episodes lost`],
    [r.duplicated === 0, `${r.duplicated} episodes served twice`],
    ...endsOf(r.episodeEnds, expected),
  ]);
}

/**
 * Every group landed exactly once (none as failed), every episode there once, whole, and
 * completed; and every kill interrupted something. A kill costs an episode at most one
 * re-dispatch (its one generation in flight), so with more re-dispatches allowed than kills a
 * `redispatch_limit` failure cannot come from the kills: no failure is expected of them.
 */
export function crashVerdict(r: CrashFigures): Verdict {
  const idle = r.kills.filter((k) => k.midEpisode === 0).length;
  return verdict([
    [
      r.kills.length < r.maxRedispatches,
      `${r.kills.length} kills but MAX_REDISPATCHES ${r.maxRedispatches}: kills could fail episodes`,
    ],
    [r.groupRows === r.groups, `${r.groupRows} of ${r.groups} groups have a D1 row`],
    [r.landedGroups === r.groups, `${r.landedGroups} of ${r.groups} groups landed`],
    [r.failedGroups === 0, `${r.failedGroups} groups landed as failed`],
    [r.episodes === r.expectedEpisodes, `${r.episodes} of ${r.expectedEpisodes} episodes landed`],
    [r.duplicatedEpisodes === 0, `${r.duplicatedEpisodes} episodes landed twice`],
    [r.brokenTranscripts === 0, `${r.brokenTranscripts} transcripts with gaps`],
    [r.unaccountedEpisodes === 0, `${r.unaccountedEpisodes} episodes without a final status`],
    ...endsOf(r.episodeEnds, r.expectedEpisodes),
    [idle === 0, `${idle} of ${r.kills.length} kills found no group mid-episode`],
  ]);
}
