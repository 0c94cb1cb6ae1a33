// Asynchronous RL (issue 20): a version bump past max_lag cancels only that run's running
// groups, which land with their stale episodes' transcripts; a paused run sends nothing to the
// host until it resumes, and then fails nothing; each sampled turn records the version it was
// sent at, and the episode's span covers every one.
//
// A weight sync is not waited out: the fake clock jumps past it (fake-clock.ts), and the group's
// heartbeat, which re-reads the run's policy, is run by hand meanwhile.
import { runDurableObjectAlarm } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import type {
  EpisodeView,
  GroupView,
  RunPolicySet,
  RunProgress,
} from "../../src/client/edgeroll-client";
import { END } from "../../src/rollout/outcomes";
import { passTime, withFakeClock } from "./fake-clock";
import {
  api,
  d1,
  getEpisode,
  getGroup,
  getJson,
  groupStub,
  guessExample,
  itemAt,
  setPolicy,
  simulatorRequests,
  startGroup,
  until,
  untilGroup,
  waitForGroup,
} from "./helpers";
import { lease } from "./token-helpers";

const group = (run: string, model: string, size: number, secret = 40) => ({
  env: "guess-number",
  example: guessExample(`${run}-${secret}`, secret),
  group_size: size,
  run_id: run,
  sampling: { model, temperature: 0 },
});

/** Longer than a generation's deadline window (2 s here) many times over. */
const WEIGHT_SYNC_MS = 30_000;

/**
 * The run's weight sync takes WEIGHT_SYNC_MS: the clock jumps by that much, and the group's
 * heartbeat beats three times meanwhile, re-reading the run's (still paused) policy.
 */
async function weightSync(id: string): Promise<void> {
  passTime(WEIGHT_SYNC_MS);
  for (let beat = 0; beat < 3; beat++)
    if (!(await runDurableObjectAlarm(groupStub(id))))
      throw new Error(`group ${id} had no heartbeat armed`);
}

/** Every message row is there, in order, and the sampled ones are the episode's turns. */
function expectIntact(episode: EpisodeView) {
  const seqs = episode.messages.map((m) => m.seq);
  expect(seqs).toEqual(seqs.map((_, i) => i));
  expect(episode.messages.filter((m) => m.sampled)).toHaveLength(episode.turns);
}

const sampledOf = (episode: EpisodeView) => episode.messages.filter((m) => m.sampled);

/**
 * Each sampled turn went out once: a deadline that had run through the pause would have timed
 * its first try out at once, and the turn would record a second attempt.
 */
function expectNoTryLost(episode: EpisodeView) {
  expect(sampledOf(episode).map((m) => m.attempts)).toEqual(sampledOf(episode).map(() => 1));
}
const versionsOf = (episode: EpisodeView) => sampledOf(episode).map((m) => m.policy_version);
const pacingOf = async (run: string) => (await getJson<RunProgress>(`/v1/runs/${run}`)).pacing;

describe("a version bump past max_lag", () => {
  const hanging = "sim+hang:9@1";
  let bumped: RunPolicySet;
  let stale: GroupView;
  let untouched: GroupView;

  beforeAll(async () => {
    await setPolicy("ar-bump", { version: 0, max_lag: 1 });
    await setPolicy("ar-bump-other", { version: 0, max_lag: 1 });
    // The second generation of every episode hangs: only an abort ends it before its deadlines.
    const staleId = await startGroup(group("ar-bump", hanging, 3));
    const otherId = await startGroup(group("ar-bump-other", "sim+latency:150+tag:other", 2));
    await untilGroup(
      staleId,
      (g) => g.episodes.every((e) => e.turns === 1 && e.state === "generating"),
      "waiting on its second generation",
    );
    bumped = await setPolicy("ar-bump", { version: 2 });
    stale = await waitForGroup(staleId);
    untouched = await waitForGroup(otherId);
  });

  it("cancels the run's running groups, which land failed as stale, and only that run's", () => {
    expect(bumped).toMatchObject({ groups_running: 1, groups_notified: 1 });
    expect(stale.status).toBe("failed");
    expect(stale.episodes.map((e) => e.failure_reason)).toEqual([
      END.stale_policy,
      END.stale_policy,
      END.stale_policy,
    ]);
    // The other run's policy did not move: its group ran to the end.
    expect(untouched.status).toBe("landed");
    expect(untouched.episodes.every((e) => e.state === "completed")).toBe(true);
  });

  it("aborts their generations in flight rather than wait out a deadline", async () => {
    // One hanging try each, never the retry a timeout would have sent.
    expect(await simulatorRequests(hanging)).toBe(6);
  });

  it("keeps each cancelled episode's transcript, and says why it ended", async () => {
    for (const { episode_id } of stale.episodes) {
      const episode = await getEpisode(episode_id);
      expect(episode.failure_detail).toBe(
        "the run's policy moved to version 2; this group's lowest version is 0, more than max_lag 1 behind",
      );
      // The opening, the first action and the environment's answer.
      expect(episode.turns).toBe(1);
      expectIntact(episode);
      expect(episode.messages.map((m) => m.role)).toEqual(["user", "assistant", "user"]);
    }
  });

  it("counts the waste in SQL", async () => {
    expect(
      await d1(
        "SELECT run_id, failure_reason, COUNT(*) AS n FROM episodes WHERE run_id LIKE 'ar-bump%' GROUP BY 1, 2 ORDER BY 1",
      ),
    ).toEqual([
      { run_id: "ar-bump", failure_reason: END.stale_policy, n: 3 },
      { run_id: "ar-bump-other", failure_reason: null, n: 2 },
    ]);
    expect(await d1("SELECT * FROM run_policy_state WHERE run_id = 'ar-bump'")).toEqual([
      expect.objectContaining({
        version: 2,
        max_lag: 1,
        paused: 0,
        groups_in_flight: 0,
        groups_unleased: 0,
        stale_episodes: 3,
        stale_turns: 3,
      }),
    ]);
  });
});

describe("a run paused for a weight sync", () => {
  const model = "sim+tag:paused";
  let id: string;
  let sentWhilePaused: number;
  let held: GroupView;
  let overview: string;
  let groupPage: string;
  let pacingWhilePaused: RunProgress["pacing"];
  let notified: number;
  let landed: GroupView;
  let episodes: EpisodeView[];

  beforeAll(() =>
    withFakeClock(async () => {
      // max_lag 0: the resume's bump would cancel a group that had sampled at 1; this one has
      // sent nothing, so its turns are all the new version's.
      await setPolicy("ar-pause", { version: 1, max_lag: 0, paused: true });
      id = await startGroup(group("ar-pause", model, 2));
      // Both episodes opened: each is at its first generation, waiting for the run to resume.
      await untilGroup(id, (g) => g.episodes.every((e) => e.state === "generating"), "opened");
      await weightSync(id);
      sentWhilePaused = await simulatorRequests(model);
      held = await getGroup(id);
      overview = await (await api("/?run=ar-pause")).text();
      groupPage = await (await api(`/groups/${id}`)).text();
      pacingWhilePaused = await pacingOf("ar-pause");
      // The weight sync is done: version 2, resumed.
      notified = (await setPolicy("ar-pause", { version: 2, paused: false })).groups_notified;
      landed = await waitForGroup(id);
      episodes = await Promise.all(landed.episodes.map((e) => getEpisode(e.episode_id)));
    }),
  );

  it("sends the host nothing and times nothing out while paused, however long the sync", () => {
    expect(sentWhilePaused).toBe(0);
    expect(held).toMatchObject({ status: "running", paused: true });
    expect(held.episodes.map((e) => [e.state, e.failure_reason])).toEqual([
      ["generating", null],
      ["generating", null],
    ]);
  });

  it("shows the pause on the dashboard: the run's policy, and the group waiting on it", () => {
    expect(overview).toMatch(/<h2>Policies<\/h2>/);
    expect(overview).toMatch(
      /<td>ar-pause<\/td><td class="num">1<\/td><td class="num">0<\/td><td>paused<\/td><td class="num">1<\/td>/,
    );
    expect(groupPage).toContain("paused for a weight sync");
  });

  it("counts the paused group in flight in the run's pacing", () => {
    expect(pacingWhilePaused).toEqual({
      in_flight: 1,
      unleased: 0,
      ahead: 1,
      by_version: [{ policy_version: 1, in_flight: 1, unleased: 0 }],
    });
  });

  it("lands every episode once resumed, each turn sampled by the new version", async () => {
    expect(notified).toBe(1);
    expect(landed.status).toBe("landed");
    expect(landed.episodes.every((e) => e.state === "completed")).toBe(true);
    expect(await simulatorRequests(model)).toBeGreaterThan(0);
    // Started at 1, every turn sampled by 2.
    expect(landed).toMatchObject({
      policy_version: 1,
      policy_version_min: 2,
      policy_version_max: 2,
    });
    const after = await getJson<RunProgress>("/v1/runs/ar-pause");
    expect(after.pacing.in_flight).toBe(0);
    expect(after.policy).toMatchObject({ version: 2, paused: false });
  });

  it("starts no deadline before the resume: no try is lost to the time the sync took", () => {
    for (const episode of episodes) expectNoTryLost(episode);
  });
});

describe("asynchronous RL", () => {
  it("holds a token-in group's generations too, its prompts then built and sent at the new version", () =>
    withFakeClock(async () => {
      const model = "sim+tag:paused-tokens";
      await setPolicy("ar-pause-tokens", { version: 4, paused: true });
      const id = await startGroup({ ...group("ar-pause-tokens", model, 1), generation: "tokens" });
      await untilGroup(id, (g) => itemAt(g.episodes).state === "generating", "opened");
      await weightSync(id);
      expect(await simulatorRequests(model)).toBe(0);
      await setPolicy("ar-pause-tokens", { version: 5, paused: false });
      const landed = await waitForGroup(id);
      expect(itemAt(landed.episodes).state).toBe("completed");
      expect(landed).toMatchObject({ policy_version_min: 5, policy_version_max: 5 });
      expectNoTryLost(await getEpisode(itemAt(landed.episodes).episode_id));
    }));

  it("reports what feeds the trainer by version: in flight, landed and unleased within max_lag", async () => {
    await setPolicy("ar-pace", { version: 3, max_lag: 1 });
    // Groups whose scores differ (at temperature 1 some do): uniform ones are never leased by
    // default, so they are not counted as feeding the trainer.
    let varied = 0;
    for (let seed = 1; varied < 2; seed++) {
      const id = await startGroup({
        ...group("ar-pace", "sim", 4, 30 + seed),
        sampling: { model: "sim", temperature: 1, seed },
      });
      if (!(await waitForGroup(id)).uniform) varied++;
    }
    expect(await pacingOf("ar-pace")).toEqual({
      in_flight: 0,
      unleased: 2,
      ahead: 2,
      by_version: [{ policy_version: 3, in_flight: 0, unleased: 2 }],
    });
    // Leased, they no longer wait for the trainer.
    expect(
      (await lease("ar-pace", { max_groups: 1, skip_uniform_groups: true })).groups,
    ).toHaveLength(1);
    expect(await pacingOf("ar-pace")).toMatchObject({ unleased: 1, ahead: 1 });
    // Two versions on, what is left at 3 is past max_lag: listed, but no longer counted.
    await setPolicy("ar-pace", { version: 5 });
    expect(await pacingOf("ar-pace")).toEqual({
      in_flight: 0,
      unleased: 0,
      ahead: 0,
      by_version: [{ policy_version: 3, in_flight: 0, unleased: 1 }],
    });
  });

  it("lets the generation in flight when the pause comes finish normally, then holds the next ones", () =>
    withFakeClock(async () => {
      const model = "sim+latency:600+tag:midpause";
      await setPolicy("ar-midpause", { version: 0 });
      // 37: three guesses at temperature 0 (50, 25, 37), the third sent after the resume.
      const id = await startGroup(group("ar-midpause", model, 1, 37));
      // The second generation is on its way to the host (sent, not yet answered).
      await until(async () => (await simulatorRequests(model)) >= 2, "sent the second generation");
      await setPolicy("ar-midpause", { version: 0, paused: true });
      // It comes back as usual and is recorded; the step runs; the next generation waits.
      const held = await untilGroup(
        id,
        (g) => itemAt(g.episodes).turns === 2 && itemAt(g.episodes).state === "generating",
        "recorded the turn in flight and stepped it",
      );
      expect(itemAt(held.episodes).failure_reason).toBeNull();
      await weightSync(id);
      expect(await simulatorRequests(model)).toBe(2);
      expect(itemAt((await getGroup(id)).episodes)).toMatchObject({
        turns: 2,
        state: "generating",
        failure_reason: null,
      });
      await setPolicy("ar-midpause", { version: 1, paused: false });
      const landed = await waitForGroup(id);
      expect(itemAt(landed.episodes).state).toBe("completed");
      const episode = await getEpisode(itemAt(landed.episodes).episode_id);
      expect(versionsOf(episode)).toEqual([0, 0, 1]);
      expectNoTryLost(episode);
    }));

  it("gives a parked retry that waits out a pause a fresh deadline: the pause does not time it out", () =>
    withFakeClock(async () => {
      // The second generation's first try is a 429 asking for 1.5 s: parked, inside a 2 s window.
      const model = "sim+fail:429:1@1+retryafter:1.5";
      await setPolicy("ar-parked", { version: 0 });
      const id = await startGroup(group("ar-parked", model, 1));
      await untilGroup(id, (g) => itemAt(g.episodes).retry_at !== null, "parked its retry");
      await setPolicy("ar-parked", { version: 0, paused: true });
      // The sync outlasts the retry time and the window the retry was parked in; the heartbeat
      // that wakes the parked retry finds the run paused, and the retry waits.
      await weightSync(id);
      await setPolicy("ar-parked", { version: 1, paused: false });
      const landed = await waitForGroup(id);
      expect(itemAt(landed.episodes).state).toBe("completed");
      const episode = await getEpisode(itemAt(landed.episodes).episode_id);
      // The 429, then the answer: no attempt lost to a window the pause used up.
      expect(itemAt(sampledOf(episode), 1)).toMatchObject({ attempts: 2, policy_version: 1 });
    }));
});

describe("the version each turn was sent at", () => {
  let landed: GroupView;
  let episode: EpisodeView;
  let versions: (number | null | undefined)[];

  beforeAll(async () => {
    await setPolicy("ar-span", { version: 1 });
    const id = await startGroup(group("ar-span", "sim+latency:400+tag:span", 1));
    await untilGroup(id, (g) => itemAt(g.episodes).turns >= 1, "sampled a turn");
    await setPolicy("ar-span", { version: 2 });
    landed = await waitForGroup(id);
    episode = await getEpisode(itemAt(landed.episodes).episode_id);
    versions = versionsOf(episode);
  });

  it("is recorded on each sampled turn: before the change at 1, after it at 2, never back", () => {
    expect(versions[0]).toBe(1);
    expect(versions.at(-1)).toBe(2);
    expect([...versions].sort()).toEqual(versions);
    // The environment's messages carry no version: only sampled turns do.
    expect(episode.messages.filter((m) => !m.sampled).every((m) => !("policy_version" in m))).toBe(
      true,
    );
  });

  it("gives the group and the episode a span covering both sides of the change", () => {
    expect(landed).toMatchObject({
      policy_version: 1,
      policy_version_min: 1,
      policy_version_max: 2,
    });
    expect(episode).toMatchObject({ policy_version_min: 1, policy_version_max: 2 });
  });

  it("is what leases filter on: the span's lowest", async () => {
    // A trainer asking for version 2 or newer does not get a group with a turn sampled by 1.
    expect((await lease("ar-span", { min_policy_version: 2 })).groups).toEqual([]);
    const batch = await lease("ar-span", { min_policy_version: 1 });
    expect(batch.groups).toHaveLength(1);
    const served = itemAt(batch.groups);
    expect(served).toMatchObject({
      policy_version: 1,
      policy_version_min: 1,
      policy_version_max: 2,
    });
    const servedEpisode = itemAt(served.episodes);
    expect(servedEpisode).toMatchObject({ policy_version_min: 1, policy_version_max: 2 });
    expect(servedEpisode.messages.filter((m) => m.sampled).map((m) => m.policy_version)).toEqual(
      versions,
    );
  });
});
