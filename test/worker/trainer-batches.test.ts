// Leasing scored groups to trainers: whole groups in the batch format, each group to one
// trainer at a time, acks, releases and expiring leases, poison groups parked, and the filters.
// A lease's expiry is not waited for: the fake clock jumps past it (fake-clock.ts).
import { beforeAll, describe, expect, it } from "vitest";
import type {
  AckResult,
  Batch,
  EpisodeView,
  ReleaseResult,
  StartGroupInput,
  TrainerEpisode,
} from "../../src/client/edgeroll-client";
import { passTime, useFakeClock } from "./fake-clock";
import {
  type Answer,
  d1,
  type ErrorBody,
  getEpisode,
  guessExample,
  itemAt,
  leaseBatch as lease,
  post,
  startGroup,
  waitForGroup,
} from "./helpers";

/** Runs `count` groups through the engine and waits until all have landed. */
async function landGroups(count: number, body: (i: number) => StartGroupInput) {
  const ids = await Promise.all(Array.from({ length: count }, (_, i) => startGroup(body(i))));
  return Promise.all(ids.map((id) => waitForGroup(id, 60_000)));
}

const guessGroup = (run: string, seed: number, extra: Partial<StartGroupInput> = {}) => ({
  env: "guess-number",
  example: guessExample(`${run}-${seed}`, 1 + ((seed * 37) % 100)),
  group_size: 4,
  run_id: run,
  sampling: { model: "sim", temperature: 1, seed },
  ...extra,
});

/**
 * Lands exactly `count` groups that are not uniform (guess-number at temperature 1 varies, but
 * a group can still come out all-equal; those stay in D1, skipped by default leases).
 */
async function landVaried(
  run: string,
  count: number,
  extra: Partial<StartGroupInput> = {},
): Promise<string[]> {
  const varied: string[] = [];
  for (let seed = 1; varied.length < count; ) {
    const wanted = count - varied.length;
    const landed = await landGroups(wanted, (i) => guessGroup(run, seed + i, extra));
    seed += wanted;
    for (const group of landed) if ((group.score_std ?? 0) > 0) varied.push(group.group_id);
  }
  return varied;
}

const ack = (batch: string | null) => post<AckResult>(`/v1/batches/${batch}/ack`);
const release = (batch: string | null) => post<ReleaseResult>(`/v1/batches/${batch}/release`);
const groupIds = (batch: Batch) => batch.groups.map((g) => g.group_id);
/** The episode's SFT row, where the lease asked for them (`include: ["sft"]`). */
const sftOf = (episode: TrainerEpisode) => ("sft" in episode ? episode.sft : undefined);

describe("a lease of scored groups", () => {
  let landed: string[];
  let leased: Answer<Batch>;
  let stored: Map<string, EpisodeView>;

  beforeAll(async () => {
    landed = await landVaried("lease-shape", 2);
    leased = await lease({ max_groups: 10, run_id: "lease-shape" });
    const episodes = leased.body.groups.flatMap((g) => g.episodes);
    stored = new Map(
      await Promise.all(
        episodes.map(async (e) => [e.episode_id, await getEpisode(e.episode_id)] as const),
      ),
    );
  });

  const leasedEpisodes = () => leased.body.groups.flatMap((g) => g.episodes);
  const messagesOf = (episode: TrainerEpisode) => episode.messages ?? [];

  it("names a batch whose lease runs for the default five minutes", () => {
    expect(leased.status).toBe(200);
    expect(leased.body.batch_id).toMatch(/^b_/);
    expect(Date.parse(leased.body.lease_expires_at ?? "")).toBeGreaterThan(Date.now() + 250_000);
  });

  it("returns whole groups, each with its example", () => {
    expect(groupIds(leased.body).sort()).toEqual([...landed].sort());
    for (const group of leased.body.groups) {
      expect(group.episodes).toHaveLength(4);
      expect(group.example.metadata?.secret).toBeGreaterThan(0);
    }
  });

  it("gives each episode its reward, status and turns as stored, and its advantage over the group's mean", () => {
    for (const group of leased.body.groups) {
      const rewards = group.episodes.map((e) => e.reward ?? 0);
      const mean = rewards.reduce((a, b) => a + b, 0) / rewards.length;
      for (const episode of group.episodes) {
        const view = stored.get(episode.episode_id);
        expect(episode).toMatchObject({
          status: view?.status,
          reward: view?.score,
          success: view?.success,
          turns: view?.turns,
          policy_version: 0,
          per_turn_rewards: view?.per_turn_rewards,
        });
        expect(episode.advantage).toBeCloseTo((episode.reward ?? 0) - mean, 12);
      }
    }
  });

  it("marks the sampled turns of each transcript, each with the episode's advantage", () => {
    for (const episode of leasedEpisodes()) {
      const sampled = messagesOf(episode).filter((m) => m.sampled);
      expect(sampled).toHaveLength(episode.turns);
      expect(
        sampled.every((m) => m.role === "assistant" && m.advantage === episode.advantage),
      ).toBe(true);
      expect(
        messagesOf(episode)
          .filter((m) => !m.sampled)
          .every((m) => !("advantage" in m)),
      ).toBe(true);
    }
  });
});

describe("leasing scored groups", () => {
  it("answers 200 with no groups when nothing is available", async () => {
    expect(await lease({ max_groups: 5, run_id: "nothing-here" })).toEqual({
      status: 200,
      body: { batch_id: null, lease_expires_at: null, groups: [] },
    });
  });

  it("never gives two trainers leasing at the same moment the same group", async () => {
    const landed = await landVaried("concurrent", 4);
    const results = await Promise.all(
      Array.from({ length: 6 }, () => lease({ max_groups: 1, run_id: "concurrent" })),
    );
    const served = results.flatMap((r) => groupIds(r.body));
    expect(served.sort()).toEqual([...landed].sort());
    expect(new Set(served).size).toBe(served.length);
  });

  it("caps a batch by episodes, never splitting a group", async () => {
    await landVaried("by-episodes", 3);
    const { body } = await lease({ max_episodes: 9, run_id: "by-episodes" });
    expect(body.groups).toHaveLength(2);
    const single = await lease({ max_episodes: 1, run_id: "by-episodes" });
    expect(single.body.groups).toHaveLength(1);
    expect(itemAt(single.body.groups).episodes).toHaveLength(4);
  });
});

describe("acks, releases and expiry", () => {
  useFakeClock();

  it("ack marks the groups consumed, once; a second ack is a no-op that says so", async () => {
    await landVaried("ack", 1);
    const { body } = await lease({ max_groups: 5, run_id: "ack" });
    expect(await ack(body.batch_id)).toEqual({
      status: 200,
      body: {
        batch_id: body.batch_id,
        acked_groups: body.groups.length,
        lost_groups: 0,
        already_acked: false,
      },
    });
    const second = await ack(body.batch_id);
    expect(second.body).toMatchObject({ acked_groups: 0, already_acked: true });
    expect((await lease({ max_groups: 5, run_id: "ack" })).body.groups).toEqual([]);
    const [row] = await d1<{ delivery_state: string; acked_at: string }>(
      "SELECT delivery_state, acked_at FROM groups WHERE id = ?",
      itemAt(body.groups).group_id,
    );
    expect(row?.delivery_state).toBe("acked");
    expect(row?.acked_at).toBeTruthy();
  });

  it("release hands the groups back at once", async () => {
    await landVaried("release", 1);
    const first = await lease({ max_groups: 5, run_id: "release" });
    expect((await lease({ max_groups: 5, run_id: "release" })).body.groups).toEqual([]);
    const released = await release(first.body.batch_id);
    expect(released.body).toMatchObject({
      released_groups: first.body.groups.length,
      already_released: false,
    });
    const again = await lease({ max_groups: 5, run_id: "release" });
    expect(groupIds(again.body)).toEqual(groupIds(first.body));
    expect(itemAt(again.body.groups).deliveries).toBe(2);
    expect((await ack(first.body.batch_id)).status).toBe(409);
  });

  it("a lease that expires without an ack makes its groups available again, counting deliveries", async () => {
    await landVaried("expiry", 1);
    const first = await lease({ max_groups: 1, run_id: "expiry", lease_seconds: 60 });
    // A second short of the lease's minute, the group is still the first trainer's.
    passTime(59_000);
    expect((await lease({ max_groups: 1, run_id: "expiry" })).body.groups).toEqual([]);
    // The minute runs out with no ack.
    passTime(2_000);
    const second = await lease({ max_groups: 1, run_id: "expiry" });
    expect(itemAt(second.body.groups).group_id).toBe(itemAt(first.body.groups).group_id);
    expect(itemAt(second.body.groups).deliveries).toBe(2);
    // The first trainer acks too late: its groups went to the second, so they count as lost.
    expect((await ack(first.body.batch_id)).body).toMatchObject({
      acked_groups: 0,
      lost_groups: 1,
    });
  });

  it("parks a group delivered MAX_DELIVERIES times without an ack, visible in SQL, served only on request", async () => {
    await landVaried("poison", 1);
    for (let delivery = 1; delivery <= 3; delivery++) {
      const { body } = await lease({ max_groups: 1, run_id: "poison", lease_seconds: 60 });
      expect(itemAt(body.groups).deliveries).toBe(delivery);
      // Each lease's minute runs out with no ack.
      passTime(61_000);
    }
    expect((await lease({ max_groups: 1, run_id: "poison" })).body.groups).toEqual([]);
    expect(
      await d1(
        "SELECT accounting, deliveries FROM group_accounting WHERE run_id = 'poison' AND uniform = 0",
      ),
    ).toEqual([{ accounting: "parked", deliveries: 3 }]);
    const explicit = await lease({ max_groups: 1, run_id: "poison", include_parked: true });
    expect(explicit.body.groups).toHaveLength(1);
  });
});

describe("filters", () => {
  it("skips uniform groups unless asked, and keeps them queryable", async () => {
    const [group] = await landGroups(1, () => ({
      env: "exact-answer",
      example: { id: "u", input: "What is 2 + 3?", output: "5" },
      group_size: 3,
      run_id: "uniform",
      sampling: { model: "sim", temperature: 0 },
    }));
    const id = group?.group_id;
    expect((await lease({ max_groups: 5, run_id: "uniform" })).body.groups).toEqual([]);
    expect(await d1("SELECT uniform, score_std FROM groups WHERE id = ?", id)).toEqual([
      { uniform: 1, score_std: 0 },
    ]);
    const asked = await lease({ max_groups: 5, run_id: "uniform", skip_uniform_groups: false });
    expect(groupIds(asked.body)).toEqual([id]);
    expect(itemAt(asked.body.groups).uniform).toBe(true);
  });

  it("serves only groups within max_policy_lag of the trainer's current policy", async () => {
    for (const version of [1, 4, 6]) await landVaried("lag", 1, { policy_version: version });
    const { body } = await lease({
      max_groups: 50,
      run_id: "lag",
      current_policy_version: 6,
      max_policy_lag: 2,
    });
    expect(body.groups.length).toBeGreaterThan(0);
    expect(new Set(body.groups.map((g) => g.policy_version))).toEqual(new Set([4, 6]));
    const refused = await post<ErrorBody>("/v1/batches/lease", {
      max_groups: 1,
      max_policy_lag: 2,
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toMatch(/max_policy_lag needs current_policy_version/);
  });

  it("filters by env", async () => {
    await landVaried("by-env", 1);
    expect(
      (await lease({ max_groups: 5, run_id: "by-env", env: "tool-agent" })).body.groups,
    ).toEqual([]);
    expect(
      (await lease({ max_groups: 5, run_id: "by-env", env: "guess-number" })).body.groups.length,
    ).toBeGreaterThan(0);
  });
});

describe("a batch of 1,000 episodes", () => {
  let leased: Answer<Batch>;
  const episodes = () => leased.body.groups.flatMap((g) => g.episodes);

  beforeAll(async () => {
    // In waves of 25 groups, to keep this 2-core machine from timing generations out.
    for (let wave = 0; wave < 5; wave++) {
      await landGroups(25, (i) => ({
        env: "exact-answer",
        example: {
          id: `big-${wave}-${i}`,
          input: `What is ${i} + ${wave}?`,
          output: String(i + wave),
        },
        group_size: 8,
        run_id: "big",
        sampling: { model: "sim", temperature: 1, seed: wave * 100 + i },
      }));
    }
    leased = await lease({
      max_episodes: 1000,
      run_id: "big",
      skip_uniform_groups: false,
      include: ["messages", "per_turn", "sft"],
    });
  }, 120_000);

  it("is leased in one batch of whole groups, inside D1's limits", () => {
    expect(leased.status).toBe(200);
    expect(leased.body.groups).toHaveLength(125);
    expect(episodes()).toHaveLength(1000);
  });

  it("carries every episode's transcript, or the reason it failed", () => {
    for (const episode of episodes()) {
      if (episode.status === "failed") {
        expect(episode.failure_reason).toBeTruthy();
        expect(episode.advantage).toBeNull();
      } else {
        expect(episode.messages).toHaveLength(2);
        expect(episode.messages?.[1]).toMatchObject({
          role: "assistant",
          sampled: true,
          turn: 0,
        });
      }
    }
  });

  it("carries an SFT row for each successful episode, and none for the others", () => {
    const successful = episodes().filter((e) => e.success);
    expect(successful.length).toBeGreaterThan(500);
    expect(successful.every((e) => sftOf(e)?.masking === "role_aware")).toBe(true);
    expect(
      episodes()
        .filter((e) => !e.success)
        .every((e) => sftOf(e) === null),
    ).toBe(true);
  });
});
