import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import {
  api,
  getEpisode,
  getGroup,
  guessExample,
  type Json,
  startGroup,
  waitForGroup,
} from "./helpers";

async function post(path: string, body: unknown = {}) {
  const response = await api(path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Json };
}

const lease = (body: unknown) => post("/v1/batches/lease", body);

/** Runs `count` groups through the engine and waits until all have landed. */
async function landGroups(count: number, body: (i: number) => Json): Promise<string[]> {
  const ids = await Promise.all(Array.from({ length: count }, (_, i) => startGroup(body(i))));
  await Promise.all(ids.map((id) => waitForGroup(id, 60_000)));
  return ids;
}

const guessGroup = (run: string, seed: number, extra: Json = {}) => ({
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
async function landVaried(run: string, count: number, extra: Json = {}): Promise<string[]> {
  const varied: string[] = [];
  for (let seed = 1; varied.length < count; seed++) {
    const [id] = await landGroups(1, () => guessGroup(run, seed, extra));
    const group = await getGroup(id as string);
    if (group.score_std > 0) varied.push(group.group_id);
  }
  return varied;
}

describe("leasing scored groups", () => {
  it("returns whole groups with each episode's reward, advantage, status and marked transcript", async () => {
    const landed = await landVaried("lease-shape", 2);
    const { status, body } = await lease({ max_groups: 10, run_id: "lease-shape" });
    expect(status).toBe(200);
    expect(body.batch_id).toMatch(/^b_/);
    expect(Date.parse(body.lease_expires_at)).toBeGreaterThan(Date.now() + 250_000);
    expect(body.groups.map((g: Json) => g.group_id).sort()).toEqual([...landed].sort());
    for (const group of body.groups) {
      expect(group.episodes).toHaveLength(4);
      expect(group.example.metadata.secret).toBeGreaterThan(0);
      const rewards = group.episodes.map((e: Json) => e.reward);
      const mean = rewards.reduce((a: number, b: number) => a + b, 0) / rewards.length;
      for (const episode of group.episodes) {
        const stored = await getEpisode(episode.episode_id);
        expect(episode).toMatchObject({
          status: stored.status,
          reward: stored.score,
          success: stored.success,
          turns: stored.turns,
          policy_version: 0,
          per_turn_rewards: stored.per_turn_rewards,
        });
        expect(episode.advantage).toBeCloseTo(episode.reward - mean, 12);
        const sampled = episode.messages.filter((m: Json) => m.sampled);
        expect(sampled).toHaveLength(episode.turns);
        expect(
          sampled.every((m: Json) => m.role === "assistant" && m.advantage === episode.advantage),
        ).toBe(true);
        expect(
          episode.messages
            .filter((m: Json) => !m.sampled)
            .every((m: Json) => m.advantage === undefined),
        ).toBe(true);
      }
    }
  });

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
    const served = results.flatMap((r) => r.body.groups.map((g: Json) => g.group_id));
    expect(served.sort()).toEqual([...landed].sort());
    expect(new Set(served).size).toBe(served.length);
  });

  it("caps a batch by episodes, never splitting a group", async () => {
    await landVaried("by-episodes", 3);
    const { body } = await lease({ max_episodes: 9, run_id: "by-episodes" });
    expect(body.groups).toHaveLength(2);
    const single = await lease({ max_episodes: 1, run_id: "by-episodes" });
    expect(single.body.groups).toHaveLength(1);
    expect(single.body.groups[0].episodes).toHaveLength(4);
  });
});

describe("acks, releases and expiry", () => {
  it("ack marks the groups consumed, once; a second ack is a no-op that says so", async () => {
    await landVaried("ack", 1);
    const { body } = await lease({ max_groups: 5, run_id: "ack" });
    const first = await post(`/v1/batches/${body.batch_id}/ack`);
    expect(first).toEqual({
      status: 200,
      body: {
        batch_id: body.batch_id,
        acked_groups: body.groups.length,
        lost_groups: 0,
        already_acked: false,
      },
    });
    const second = await post(`/v1/batches/${body.batch_id}/ack`);
    expect(second.body).toMatchObject({ acked_groups: 0, already_acked: true });
    expect((await lease({ max_groups: 5, run_id: "ack" })).body.groups).toEqual([]);
    const row = await env.DB.prepare("SELECT delivery_state, acked_at FROM groups WHERE id = ?")
      .bind(body.groups[0].group_id)
      .first<{ delivery_state: string; acked_at: string }>();
    expect(row?.delivery_state).toBe("acked");
    expect(row?.acked_at).toBeTruthy();
  });

  it("release hands the groups back at once", async () => {
    await landVaried("release", 1);
    const first = await lease({ max_groups: 5, run_id: "release" });
    expect((await lease({ max_groups: 5, run_id: "release" })).body.groups).toEqual([]);
    const released = await post(`/v1/batches/${first.body.batch_id}/release`);
    expect(released.body).toMatchObject({
      released_groups: first.body.groups.length,
      already_released: false,
    });
    const again = await lease({ max_groups: 5, run_id: "release" });
    expect(again.body.groups.map((g: Json) => g.group_id)).toEqual(
      first.body.groups.map((g: Json) => g.group_id),
    );
    expect(again.body.groups[0].deliveries).toBe(2);
    expect((await post(`/v1/batches/${first.body.batch_id}/ack`)).status).toBe(409);
  });

  it("a lease that expires without an ack makes its groups available again, counting deliveries", async () => {
    await landVaried("expiry", 1);
    const first = await lease({ max_groups: 1, run_id: "expiry", lease_seconds: 1 });
    expect((await lease({ max_groups: 1, run_id: "expiry" })).body.groups).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const second = await lease({ max_groups: 1, run_id: "expiry" });
    expect(second.body.groups[0].group_id).toBe(first.body.groups[0].group_id);
    expect(second.body.groups[0].deliveries).toBe(2);
    // The first trainer acks too late: its groups went to the second, so they count as lost.
    expect((await post(`/v1/batches/${first.body.batch_id}/ack`)).body).toMatchObject({
      acked_groups: 0,
      lost_groups: 1,
    });
  });

  it("parks a group delivered MAX_DELIVERIES times without an ack, visible in SQL, served only on request", async () => {
    await landVaried("poison", 1);
    for (let delivery = 1; delivery <= 3; delivery++) {
      const { body } = await lease({ max_groups: 1, run_id: "poison", lease_seconds: 1 });
      expect(body.groups[0].deliveries).toBe(delivery);
      await new Promise((resolve) => setTimeout(resolve, 1050));
    }
    expect((await lease({ max_groups: 1, run_id: "poison" })).body.groups).toEqual([]);
    const accounting = await env.DB.prepare(
      "SELECT accounting, deliveries FROM group_accounting WHERE run_id = 'poison' AND uniform = 0",
    ).all();
    expect(accounting.results).toEqual([{ accounting: "parked", deliveries: 3 }]);
    const explicit = await lease({ max_groups: 1, run_id: "poison", include_parked: true });
    expect(explicit.body.groups).toHaveLength(1);
  });
});

describe("filters", () => {
  it("skips uniform groups unless asked, and keeps them queryable", async () => {
    const [id] = await landGroups(1, () => ({
      env: "exact-answer",
      example: { id: "u", input: "What is 2 + 3?", output: "5" },
      group_size: 3,
      run_id: "uniform",
      sampling: { model: "sim", temperature: 0 },
    }));
    expect((await lease({ max_groups: 5, run_id: "uniform" })).body.groups).toEqual([]);
    const row = await env.DB.prepare("SELECT uniform, score_std FROM groups WHERE id = ?")
      .bind(id)
      .first();
    expect(row).toEqual({ uniform: 1, score_std: 0 });
    const asked = await lease({ max_groups: 5, run_id: "uniform", skip_uniform_groups: false });
    expect(asked.body.groups.map((g: Json) => g.group_id)).toEqual([id]);
    expect(asked.body.groups[0].uniform).toBe(true);
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
    expect(new Set(body.groups.map((g: Json) => g.policy_version))).toEqual(new Set([4, 6]));
    const refused = await lease({ max_groups: 1, max_policy_lag: 2 });
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

describe("large batches", () => {
  it("leases 1,000 episodes in one batch, inside D1's limits", async () => {
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
    const { status, body } = await lease({
      max_episodes: 1000,
      run_id: "big",
      skip_uniform_groups: false,
      include: ["messages", "per_turn", "sft"],
    });
    expect(status).toBe(200);
    expect(body.groups).toHaveLength(125);
    const episodes = body.groups.flatMap((g: Json) => g.episodes);
    expect(episodes).toHaveLength(1000);
    // Every episode is there with its status; any that failed did so on the record.
    for (const episode of episodes) {
      if (episode.status === "failed") {
        expect(episode.failure_reason).toBeTruthy();
        expect(episode.advantage).toBeNull();
      } else {
        expect(episode.messages).toHaveLength(2);
        expect(episode.messages[1]).toMatchObject({ role: "assistant", sampled: true, turn: 0 });
      }
    }
    const successful = episodes.filter((e: Json) => e.success);
    expect(successful.length).toBeGreaterThan(500);
    expect(successful.every((e: Json) => e.sft?.masking === "role_aware")).toBe(true);
    expect(episodes.filter((e: Json) => !e.success).every((e: Json) => e.sft === null)).toBe(true);
  }, 120_000);
});
