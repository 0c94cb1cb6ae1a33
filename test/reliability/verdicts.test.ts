// The predicates behind the load and crash runs' `ok`: a deliberately broken build (every episode
// failing) must make both runs fail, and so must any one failed episode or idle kill.
import { describe, expect, it } from "vitest";
import { fleetVerdict } from "../../reliability/fleet-verdict";
import { crashVerdict, type EpisodeEnds, loadVerdict } from "../../reliability/verdicts";

const GROUPS = 40;
const SIZE = 8;
const EPISODES = GROUPS * SIZE;

const healthyLoad = {
  date: "2026-12-01T00:00:00.000Z",
  short: true,
  groups: GROUPS,
  groupSize: SIZE,
  started: GROUPS,
  landed: GROUPS,
  failedGroups: 0,
  served: GROUPS,
  episodes: EPISODES,
  distinctEpisodes: EPISODES,
  lost: 0,
  duplicated: 0,
  episodeEnds: { completed: EPISODES, truncated: 0, failed: 0 },
  peakInFlightEpisodes: EPISODES,
  seconds: 30,
  turns: 1600,
  turnsPerSecond: 53,
  overheadMs: { count: 1300, p50: 20, p99: 90, mean: 25 },
  latency: { ttftMs: 250, msPerToken: 10, msPerPromptToken: 0.05 },
};

const kill = (atSeconds: number, midEpisode: number) => ({
  atSeconds,
  started: 12,
  midEpisode,
  scoring: 0,
  landedBefore: 4,
});

const healthyCrash = {
  date: "2026-12-01T00:00:00.000Z",
  short: true,
  groups: GROUPS,
  groupSize: SIZE,
  maxRedispatches: 20,
  kills: [kill(3, 4), kill(6, 7), kill(9, 5)],
  seconds: 40,
  groupRows: GROUPS,
  landedGroups: GROUPS,
  failedGroups: 0,
  episodes: EPISODES,
  expectedEpisodes: EPISODES,
  duplicatedEpisodes: 0,
  brokenTranscripts: 0,
  unaccountedEpisodes: 0,
  episodeEnds: { completed: EPISODES, truncated: 0, failed: 0 },
  redispatches: 60,
  failureReasons: {},
};

/** What a build whose every episode fails produces: every group lands, as failed. */
const allFailed: EpisodeEnds = { completed: 0, truncated: 0, failed: EPISODES };

describe("the load run's verdict", () => {
  it("passes a run where every group landed and every episode completed", () => {
    expect(loadVerdict(healthyLoad)).toEqual({ ok: true, problems: [] });
  });

  it("fails a deliberately broken build: every episode failed, every group landed as failed", () => {
    const broken = { ...healthyLoad, landed: 0, failedGroups: GROUPS, episodeEnds: allFailed };
    expect(loadVerdict(broken)).toEqual({
      ok: false,
      problems: [
        `0 of ${GROUPS} groups landed`,
        `${GROUPS} groups landed as failed`,
        `0 of ${EPISODES} episodes completed (0 truncated, ${EPISODES} failed)`,
      ],
    });
  });

  it("fails one failed episode in a group that landed", () => {
    const one = {
      ...healthyLoad,
      episodeEnds: { completed: EPISODES - 1, truncated: 0, failed: 1 },
    };
    expect(loadVerdict(one).ok).toBe(false);
  });

  it("fails a lost or duplicated episode, and a group never served", () => {
    expect(loadVerdict({ ...healthyLoad, lost: 1 }).problems).toEqual(["1 episodes lost"]);
    expect(loadVerdict({ ...healthyLoad, duplicated: 2 }).problems).toEqual([
      "2 episodes served twice",
    ]);
    expect(loadVerdict({ ...healthyLoad, served: GROUPS - 1 }).ok).toBe(false);
  });
});

describe("the crash run's verdict", () => {
  it("passes a run where every group landed once, every episode completed, every kill mid-episode", () => {
    expect(crashVerdict(healthyCrash)).toEqual({ ok: true, problems: [] });
  });

  it("fails a deliberately broken build: every episode failed, every group landed as failed", () => {
    const broken = {
      ...healthyCrash,
      landedGroups: 0,
      failedGroups: GROUPS,
      episodeEnds: allFailed,
      failureReasons: { env_error: EPISODES },
    };
    expect(crashVerdict(broken)).toEqual({
      ok: false,
      problems: [
        `0 of ${GROUPS} groups landed`,
        `${GROUPS} groups landed as failed`,
        `0 of ${EPISODES} episodes completed (0 truncated, ${EPISODES} failed)`,
      ],
    });
  });

  it("fails an episode the kills failed: redispatch_limit is not expected of them", () => {
    const lost = {
      ...healthyCrash,
      episodeEnds: { completed: EPISODES - 1, truncated: 0, failed: 1 },
      failureReasons: { redispatch_limit: 1 },
    };
    expect(crashVerdict(lost).ok).toBe(false);
    expect(crashVerdict({ ...healthyCrash, maxRedispatches: 3 }).problems).toEqual([
      "3 kills but MAX_REDISPATCHES 3: kills could fail episodes",
    ]);
  });

  it("fails a run whose kills found nothing mid-episode: they tested nothing", () => {
    const late = { ...healthyCrash, kills: [kill(3, 4), kill(30, 0), kill(33, 0)] };
    expect(crashVerdict(late).problems).toEqual(["2 of 3 kills found no group mid-episode"]);
  });

  it("fails a duplicated or broken transcript, and a group without its D1 row", () => {
    expect(crashVerdict({ ...healthyCrash, duplicatedEpisodes: 1 }).ok).toBe(false);
    expect(crashVerdict({ ...healthyCrash, brokenTranscripts: 1 }).ok).toBe(false);
    expect(crashVerdict({ ...healthyCrash, groupRows: GROUPS - 1 }).ok).toBe(false);
  });
});

const healthyFleet = {
  date: "2026-12-03T00:00:00.000Z",
  short: true,
  hosts: 4,
  groups: GROUPS,
  groupSize: SIZE,
  turns: 24,
  lateGroups: 10,
  killedHost: 1,
  slowHost: 2,
  slowFactor: 10,
  killedAtSeconds: 4,
  inFlightOnKilledHost: 64,
  ejectedAtSeconds: 4.4,
  revivedAtSeconds: 9.5,
  readmittedAtSeconds: 10.1,
  healthyAgainAtSeconds: 11,
  otherEjections: 0,
  requestsByHost: [600, 150, 480, 620],
  timeline: [],
  landed: GROUPS,
  failedGroups: 0,
  served: GROUPS,
  episodes: EPISODES,
  lost: 0,
  duplicated: 0,
  episodeEnds: { completed: EPISODES, truncated: 0, failed: 0 },
  failureReasons: {},
  seconds: 25,
  latency: { ttftMs: 100, msPerToken: 5 },
};

describe("the fleet run's verdict", () => {
  it("passes a run where every group landed and the dead host came back to work", () => {
    expect(fleetVerdict(healthyFleet)).toEqual({ ok: true, problems: [] });
  });

  it("fails episodes failed for the dead host, and a build that fails them all", () => {
    const one = {
      ...healthyFleet,
      episodeEnds: { completed: EPISODES - 1, truncated: 0, failed: 1 },
    };
    expect(fleetVerdict(one).ok).toBe(false);
    const broken = { ...healthyFleet, landed: 0, failedGroups: GROUPS, episodeEnds: allFailed };
    expect(fleetVerdict(broken).problems).toEqual([
      `0 of ${GROUPS} groups landed`,
      `${GROUPS} groups landed as failed`,
      `0 of ${EPISODES} episodes completed (0 truncated, ${EPISODES} failed)`,
    ]);
  });

  it("fails a dead host never ejected, never readmitted, or given nothing after it came back", () => {
    expect(fleetVerdict({ ...healthyFleet, ejectedAtSeconds: null }).problems).toEqual([
      "the killed host was never shown ejected",
    ]);
    expect(
      fleetVerdict({ ...healthyFleet, readmittedAtSeconds: null, healthyAgainAtSeconds: null })
        .problems,
    ).toEqual([
      "the killed host was not readmitted after it came back",
      "the readmitted host was never healthy again",
    ]);
    expect(fleetVerdict({ ...healthyFleet, requestsByHost: [600, 0, 480, 620] }).problems).toEqual([
      "the readmitted host answered nothing",
    ]);
  });

  it("fails a run in which a host that was never killed was ejected", () => {
    expect(fleetVerdict({ ...healthyFleet, otherEjections: 2 }).problems).toEqual([
      "hosts that were never killed were ejected 2 times",
    ]);
  });

  it("fails a kill that found nothing on the host: it tested nothing", () => {
    expect(fleetVerdict({ ...healthyFleet, inFlightOnKilledHost: 0 }).problems).toEqual([
      "the kill found no episode on the host",
    ]);
  });
});
