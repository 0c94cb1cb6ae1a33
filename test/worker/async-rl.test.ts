// Asynchronous RL (issue 20): a version bump past max_lag cancels only that run's running
// groups, which land with their stale episodes' transcripts; a paused run sends nothing to the
// host until it resumes, and then fails nothing; each sampled turn records the version it was
// sent at, and the episode's span covers every one.
import { describe, expect, it } from "vitest";
import { END } from "../../src/rollout/outcomes";
import {
  api,
  getEpisode,
  getGroup,
  guessExample,
  type Json,
  postPolicy,
  simulatorRequests,
  startGroup,
  waitForGroup,
} from "./helpers";
import { d1, lease } from "./token-helpers";

async function setPolicy(run: string, body: object): Promise<Json> {
  const response = await postPolicy(run, body);
  const json: Json = await response.json();
  if (response.status !== 200)
    throw new Error(`policy: ${response.status} ${JSON.stringify(json)}`);
  return json;
}

const group = (run: string, model: string, size: number, secret = 40) => ({
  env: "guess-number",
  example: guessExample(`${run}-${secret}`, secret),
  group_size: size,
  run_id: run,
  sampling: { model, temperature: 0 },
});

/** Polls the live group until `ready` holds of it. */
async function until(id: string, ready: (group: Json) => boolean, what: string): Promise<Json> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const live = await getGroup(id);
    if (ready(live)) return live;
    if (Date.now() > deadline)
      throw new Error(`group ${id}: never ${what}: ${JSON.stringify(live)}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Every message row is there, in order, and the sampled ones are the episode's turns. */
function expectIntact(episode: Json) {
  const seqs = episode.messages.map((m: Json) => m.seq);
  expect(seqs).toEqual(seqs.map((_: number, i: number) => i));
  expect(episode.messages.filter((m: Json) => m.sampled)).toHaveLength(episode.turns);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("asynchronous RL", () => {
  it("cancels a run's groups left more than max_lag behind, aborting their generations, and only that run's", async () => {
    await setPolicy("ar-bump", { version: 0, max_lag: 1 });
    await setPolicy("ar-bump-other", { version: 0, max_lag: 1 });
    // The second generation of every episode hangs: only an abort ends it before its deadlines.
    const stale = await startGroup(group("ar-bump", "sim+hang:9@1", 3));
    const other = await startGroup(group("ar-bump-other", "sim+latency:150+tag:other", 2));
    await until(
      stale,
      (g) => g.episodes.every((e: Json) => e.turns === 1 && e.state === "generating"),
      "waiting on its second generation",
    );
    const bumped = await setPolicy("ar-bump", { version: 2 });
    expect(bumped).toMatchObject({ groups_running: 1, groups_notified: 1 });

    const landed = await waitForGroup(stale);
    expect(landed.status).toBe("failed");
    expect(landed.episodes.map((e: Json) => e.failure_reason)).toEqual([
      END.stale_policy,
      END.stale_policy,
      END.stale_policy,
    ]);
    // Aborted, not timed out: one hanging try each, never the retry a timeout would have sent.
    expect(await simulatorRequests("sim+hang:9@1")).toBe(6);
    for (const { episode_id } of landed.episodes) {
      const episode = await getEpisode(episode_id);
      expect(episode.failure_detail).toBe(
        "the run's policy moved to version 2; this group's lowest version is 0, more than max_lag 1 behind",
      );
      // The transcript is kept: the opening, the first action and the environment's answer.
      expect(episode.turns).toBe(1);
      expectIntact(episode);
      expect(episode.messages.map((m: Json) => m.role)).toEqual(["user", "assistant", "user"]);
    }
    // The other run's policy did not move: its group ran to the end.
    const untouched = await waitForGroup(other);
    expect(untouched.status).toBe("landed");
    expect(untouched.episodes.every((e: Json) => e.state === "completed")).toBe(true);
    // SQL counts the waste.
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

  it("holds a paused run's generations, deadlines not started, until it resumes; then nothing fails", async () => {
    const model = "sim+tag:paused";
    // max_lag 0: the resume's bump would cancel a group that had sampled at 1; this one has
    // sent nothing, so its turns are all the new version's.
    await setPolicy("ar-pause", { version: 1, max_lag: 0, paused: true });
    const id = await startGroup(group("ar-pause", model, 2));
    // Longer than a generation's deadline (2 s here), and several heartbeats (1 s) that re-read
    // the policy: none sends anything, none times out.
    await sleep(3_000);
    expect(await simulatorRequests(model)).toBe(0);
    const held = await getGroup(id);
    expect(held).toMatchObject({ status: "running", paused: true });
    expect(held.episodes.map((e: Json) => [e.state, e.failure_reason])).toEqual([
      ["generating", null],
      ["generating", null],
    ]);
    // The dashboard shows the pause: the run's policy, and the group waiting on it.
    const overview = await (await api("/?run=ar-pause")).text();
    expect(overview).toMatch(/<h2>Policies<\/h2>/);
    expect(overview).toMatch(
      /<td>ar-pause<\/td><td class="num">1<\/td><td class="num">0<\/td><td>paused<\/td><td class="num">1<\/td>/,
    );
    expect(await (await api(`/groups/${id}`)).text()).toContain("paused for a weight sync");
    const run: Json = await (await api("/v1/runs/ar-pause")).json();
    expect(run.pacing).toEqual({
      in_flight: 1,
      unleased: 0,
      ahead: 1,
      by_version: [{ policy_version: 1, in_flight: 1, unleased: 0 }],
    });

    // The weight sync is done: version 2, resumed.
    expect((await setPolicy("ar-pause", { version: 2, paused: false })).groups_notified).toBe(1);
    const landed = await waitForGroup(id);
    expect(landed.status).toBe("landed");
    expect(landed.episodes.every((e: Json) => e.state === "completed")).toBe(true);
    expect(await simulatorRequests(model)).toBeGreaterThan(0);
    // Started at 1, every turn sampled by 2.
    expect(landed).toMatchObject({
      policy_version: 1,
      policy_version_min: 2,
      policy_version_max: 2,
    });
    const after: Json = await (await api("/v1/runs/ar-pause")).json();
    expect(after.pacing.in_flight).toBe(0);
    expect(after.policy).toMatchObject({ version: 2, paused: false });
  });

  it("holds a token-in group's generations too, its prompts then built and sent at the new version", async () => {
    const model = "sim+tag:paused-tokens";
    await setPolicy("ar-pause-tokens", { version: 4, paused: true });
    const id = await startGroup({ ...group("ar-pause-tokens", model, 1), generation: "tokens" });
    await sleep(2_500);
    expect(await simulatorRequests(model)).toBe(0);
    await setPolicy("ar-pause-tokens", { version: 5, paused: false });
    const landed = await waitForGroup(id);
    expect(landed.episodes[0].state).toBe("completed");
    expect(landed).toMatchObject({ policy_version_min: 5, policy_version_max: 5 });
  });

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
    const pacing = async () => ((await (await api("/v1/runs/ar-pace")).json()) as Json).pacing;
    expect(await pacing()).toEqual({
      in_flight: 0,
      unleased: 2,
      ahead: 2,
      by_version: [{ policy_version: 3, in_flight: 0, unleased: 2 }],
    });
    // Leased, they no longer wait for the trainer.
    expect(
      (await lease("ar-pace", { max_groups: 1, skip_uniform_groups: true })).groups,
    ).toHaveLength(1);
    expect(await pacing()).toMatchObject({ unleased: 1, ahead: 1 });
    // Two versions on, what is left at 3 is past max_lag: listed, but no longer counted.
    await setPolicy("ar-pace", { version: 5 });
    expect(await pacing()).toEqual({
      in_flight: 0,
      unleased: 0,
      ahead: 0,
      by_version: [{ policy_version: 3, in_flight: 0, unleased: 1 }],
    });
  });

  it("lets the generation in flight when the pause comes finish normally, then holds the next ones", async () => {
    const model = "sim+latency:600+tag:midpause";
    await setPolicy("ar-midpause", { version: 0 });
    const id = await startGroup(group("ar-midpause", model, 1));
    // The second generation is on its way to the host (sent, not yet answered).
    await until(
      id,
      (g) => g.episodes[0].turns === 1 && g.episodes[0].state === "generating",
      "sampling its second turn",
    );
    for (let i = 0; (await simulatorRequests(model)) < 2; i++) {
      if (i > 400) throw new Error("the second generation was never sent");
      await sleep(5);
    }
    await setPolicy("ar-midpause", { version: 0, paused: true });
    // It comes back as usual and is recorded; the step runs; the next generation waits.
    const held = await until(id, (g) => g.episodes[0].turns === 2, "recorded the turn in flight");
    expect(held.episodes[0].failure_reason).toBeNull();
    await sleep(2_500);
    expect(await simulatorRequests(model)).toBe(2);
    const waiting = await getGroup(id);
    expect(waiting.episodes[0]).toMatchObject({
      turns: 2,
      state: "generating",
      failure_reason: null,
    });
    await setPolicy("ar-midpause", { version: 1, paused: false });
    const landed = await waitForGroup(id);
    expect(landed.episodes[0].state).toBe("completed");
    const episode = await getEpisode(landed.episodes[0].episode_id);
    const versions = episode.messages
      .filter((m: Json) => m.sampled)
      .map((m: Json) => m.policy_version);
    expect(versions.slice(0, 2)).toEqual([0, 0]);
    expect(versions.slice(2).every((v: number) => v === 1)).toBe(true);
  });

  it("gives a parked retry that waits out a pause a fresh deadline: the pause does not time it out", async () => {
    // The second generation's first try is a 429 asking for 1.5 s: parked, inside a 2 s window.
    const model = "sim+fail:429:1@1+retryafter:1.5";
    await setPolicy("ar-parked", { version: 0 });
    const id = await startGroup(group("ar-parked", model, 1));
    await until(id, (g) => g.episodes[0].retry_at !== null, "parked its retry");
    await setPolicy("ar-parked", { version: 0, paused: true });
    // Past the retry time and the old window's end.
    await sleep(2_500);
    await setPolicy("ar-parked", { version: 1, paused: false });
    const landed = await waitForGroup(id);
    expect(landed.episodes[0].state).toBe("completed");
    const episode = await getEpisode(landed.episodes[0].episode_id);
    const retried = episode.messages.filter((m: Json) => m.sampled)[1];
    // The 429, then the answer: no attempt lost to a window the pause used up.
    expect(retried).toMatchObject({ attempts: 2, policy_version: 1 });
  });

  it("records the version each turn was sent at; the episode's span covers both sides of a change, and leases filter on its lowest", async () => {
    await setPolicy("ar-span", { version: 1 });
    const id = await startGroup(group("ar-span", "sim+latency:400+tag:span", 1));
    await until(id, (g) => g.episodes[0].turns >= 1, "sampled a turn");
    await setPolicy("ar-span", { version: 2 });
    const landed = await waitForGroup(id);
    expect(landed).toMatchObject({
      policy_version: 1,
      policy_version_min: 1,
      policy_version_max: 2,
    });
    const episode = await getEpisode(landed.episodes[0].episode_id);
    const versions = episode.messages
      .filter((m: Json) => m.sampled)
      .map((m: Json) => m.policy_version);
    // Sent before the change at 1, after it at 2, never back.
    expect(versions[0]).toBe(1);
    expect(versions.at(-1)).toBe(2);
    expect([...versions].sort()).toEqual(versions);
    expect(episode).toMatchObject({ policy_version_min: 1, policy_version_max: 2 });
    // The environment's messages carry no version: only sampled turns do.
    expect(
      episode.messages.filter((m: Json) => !m.sampled).every((m: Json) => !("policy_version" in m)),
    ).toBe(true);

    // A trainer asking for version 2 or newer does not get a group with a turn sampled by 1.
    expect((await lease("ar-span", { min_policy_version: 2 })).groups).toEqual([]);
    const batch = await lease("ar-span", { min_policy_version: 1 });
    expect(batch.groups).toHaveLength(1);
    const [served] = batch.groups;
    expect(served).toMatchObject({
      policy_version: 1,
      policy_version_min: 1,
      policy_version_max: 2,
    });
    expect(served.episodes[0]).toMatchObject({ policy_version_min: 1, policy_version_max: 2 });
    expect(
      served.episodes[0].messages.filter((m: Json) => m.sampled).map((m: Json) => m.policy_version),
    ).toEqual(versions);
  });
});
