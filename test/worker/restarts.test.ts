import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import "../../fixtures/register";
import { configFrom } from "../../src/config";
import { GuessNumber } from "../../src/environments/guess-number";
import { rolloutGroup } from "../../src/rollout/bindings";
import type { LiveEpisode } from "../../src/rollout/group-api";
import type { RolloutGroup } from "../../src/rollout/group-object";
import { END, TERMINAL_STATES } from "../../src/rollout/outcomes";
import type { EnvironmentEpisode, ScoreContext, TaskExample } from "../../src/sdk";
import {
  count,
  getGroup,
  groupStub,
  guessExample,
  lastError,
  startGroup,
  until,
  waitForGroup,
} from "./helpers";
import { registerTestEnvironment } from "./test-environments";

/**
 * Guess-number whose first grading of each example hangs, past SCORE_TIMEOUT_S, until the test
 * lets it go (polling a flag: a promise resolved from the test's request would cross requests).
 */
const graded = new Set<string>();
const letGo = new Set<string>();
class SlowFirstScoring extends GuessNumber {
  override async scoreEpisodes(
    example: TaskExample,
    episodes: readonly EnvironmentEpisode[],
    contexts?: readonly ScoreContext[],
  ) {
    if (!graded.has(example.id)) {
      graded.add(example.id);
      while (!letGo.has(example.id)) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return super.scoreEpisodes(example, episodes, contexts);
  }
}
registerTestEnvironment("slow-first-scoring", () => new SlowFirstScoring());

async function expectLandedOnce(id: string, episodes: number): Promise<void> {
  expect(await count("SELECT COUNT(*) AS n FROM groups WHERE id = ?", id)).toBe(1);
  expect(await count("SELECT COUNT(*) AS n FROM episodes WHERE group_id = ?", id)).toBe(episodes);
  const messages = await count("SELECT COUNT(*) AS n FROM messages WHERE group_id = ?", id);
  const seqs = await count(
    "SELECT COUNT(*) AS n FROM (SELECT DISTINCT episode_id, seq FROM messages WHERE group_id = ?)",
    id,
  );
  expect(messages).toBe(seqs);
  // Each episode's transcript is complete: seq runs 0..n-1 without gaps.
  const gaps = await count(
    `SELECT COUNT(*) AS n FROM (SELECT episode_id, MAX(seq) + 1 AS top, COUNT(*) AS rows
       FROM messages WHERE group_id = ? GROUP BY episode_id) WHERE top != rows`,
    id,
  );
  expect(gaps).toBe(0);
}

async function storageTables(stub: DurableObjectStub<RolloutGroup>): Promise<string[]> {
  return runInDurableObject(stub, (_instance, state) =>
    state.storage.sql
      .exec(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_%' ESCAPE '\\'",
      )
      .toArray()
      .map((r) => String(r.name)),
  );
}

/** Statuses of a group's episodes, from its object (fresh stub, fresh instance if evicted). */
async function episodeStates(id: string): Promise<LiveEpisode[]> {
  const live = await rolloutGroup(env, id).status();
  return live?.episodes ?? [];
}

/**
 * Every unfinished episode parked on a timer. The host answers the third generation of each
 * episode with 503 and Retry-After: 1.5, a wait the object keeps in storage, not in memory: with
 * nothing in flight it is idle, and eviction (which first drains in-flight work) is immediate.
 */
const PARK_AT_TURN_2 = "sim+fail:503:1@2+retryafter:1.5";

async function untilParked(id: string): Promise<LiveEpisode[]> {
  await until(async () => {
    const states = await episodeStates(id);
    const open = states.filter((e) => !TERMINAL_STATES.includes(e.status));
    return open.length > 0 && open.every((e) => e.retryAt !== null);
  }, `group ${id} parked every open episode`);
  return episodeStates(id);
}

describe("restarts", () => {
  it("an object evicted mid-episode resumes from its transcripts and lands exactly once", async () => {
    const id = await startGroup({
      env: "guess-number",
      example: guessExample("evict", 71),
      group_size: 3,
      sampling: { model: PARK_AT_TURN_2, temperature: 1, seed: 21 },
    });
    const parked = await untilParked(id);
    await evictDurableObject(groupStub(id));
    // A new instance, built from storage alone, sees the episodes exactly where they were.
    const resumed = await episodeStates(id);
    expect(resumed.map((e) => [e.status, e.turns])).toEqual(parked.map((e) => [e.status, e.turns]));
    expect(resumed.some((e) => e.status === "generating" && e.turns === 2)).toBe(true);

    const group = await waitForGroup(id);
    expect(group.status).toBe("landed");
    expect(group.episodes.every((e) => e.state === "completed" && e.turns >= 3)).toBe(true);
    await expectLandedOnce(id, 3);
    expect(await storageTables(groupStub(id))).toEqual([]);
  });

  it("re-dispatches, and records, a generation that was in flight when its instance died", async () => {
    const id = await startGroup({
      env: "guess-number",
      example: guessExample("lost", 33),
      group_size: 2,
      sampling: { model: PARK_AT_TURN_2, temperature: 1, seed: 4 },
    });
    await untilParked(id);
    await evictDurableObject(groupStub(id));
    // What storage holds when an instance dies with requests in flight: generations marked sent.
    // (Graceful eviction drains in-flight work first, so the loss itself cannot be staged here;
    // the crash test kills workerd for real.)
    const lost = await runInDurableObject(groupStub(id), (_instance, state) => {
      state.storage.sql.exec(
        "UPDATE generations SET state = 'sent', retry_at = NULL WHERE state = 'waiting'",
      );
      return Number(
        state.storage.sql.exec("SELECT COUNT(*) AS n FROM generations WHERE state = 'sent'").one()
          .n,
      );
    });
    expect(lost).toBeGreaterThan(0);

    const group = await waitForGroup(id);
    expect(group.status).toBe("landed");
    expect(group.episodes.reduce((sum, e) => sum + e.redispatches, 0)).toBe(lost);
    await expectLandedOnce(id, 2);
  });

  it("fails an episode redispatch_limit when its generations are lost to more restarts than MAX_REDISPATCHES; the rest land", async () => {
    const { MAX_REDISPATCHES } = configFrom(env);
    const losses = MAX_REDISPATCHES + 1;
    // Every episode parks on a Retry-After at each of turns 1..losses (marathon episodes run their
    // whole budget, so none ends before); each time, episode 0's generation is lost with its
    // instance, as a killed process loses a request in flight.
    const parks = Array.from({ length: losses }, (_, t) => `fail:503:1@${t + 1}`).join("+");
    const id = await startGroup({
      env: "marathon",
      example: {
        id: "redispatch-limit",
        input: "Keep going.",
        metadata: { turns: losses + 2, reply_bytes: 20 },
      },
      group_size: 3,
      sampling: { model: `sim+${parks}+retryafter:1.5`, temperature: 1, seed: 17 },
    });
    for (let turn = 1; turn <= losses; turn++) {
      await until(async () => {
        const states = await episodeStates(id);
        const open = states.filter((e) => !TERMINAL_STATES.includes(e.status));
        const first = states[0];
        return (
          open.every((e) => e.retryAt !== null) && first?.turns === turn && first.retryAt !== null
        );
      }, `episode 0 parked at turn ${turn}`);
      await evictDurableObject(groupStub(id));
      const flipped = await runInDurableObject(
        groupStub(id),
        (_instance, state) =>
          state.storage.sql.exec(
            "UPDATE generations SET state = 'sent', retry_at = NULL WHERE idx = 0 AND state = 'waiting'",
          ).rowsWritten,
      );
      expect(flipped).toBe(1);
    }

    const group = await waitForGroup(id);
    const [lost, ...rest] = group.episodes;
    // Each episode's own outcome first: a wrong group status alone would not say which failed, or why.
    expect(
      rest.map((e) => [e.state, e.end_reason ?? e.failure_reason, e.failure_detail ?? null]),
    ).toEqual(rest.map(() => ["completed", END.max_turns, null]));
    expect(lost).toMatchObject({
      state: "failed",
      failure_reason: END.redispatch_limit,
      failure_detail: `generation lost to ${losses} restarts`,
      redispatches: MAX_REDISPATCHES,
      turns: losses,
    });
    expect(rest.map((e) => [e.state, e.end_reason, e.turns, e.redispatches])).toEqual(
      rest.map(() => ["completed", END.max_turns, losses + 2, 0]),
    );
    expect(rest.every((e) => e.score === 1)).toBe(true);
    expect(group.status).toBe("landed");
    await expectLandedOnce(id, 3);
    expect(await storageTables(groupStub(id))).toEqual([]);
  });

  it("an object evicted mid-scoring resumes, grades and lands exactly once", async () => {
    const id = await startGroup({
      env: "slow-first-scoring",
      example: guessExample("evict-scoring", 45),
      group_size: 3,
      sampling: { model: "sim", temperature: 1, seed: 31 },
    });
    // The first grading runs past SCORE_TIMEOUT_S (2 s): the group waits in `scoring` for a retry.
    await until(
      async () => lastError(await getGroup(id)) === "scoreEpisodes ran past SCORE_TIMEOUT_S",
      "timed its grading out",
    );
    expect((await getGroup(id)).status).toBe("scoring");
    letGo.add("evict-scoring");
    await evictDurableObject(groupStub(id));
    const group = await waitForGroup(id);
    expect(group.status).toBe("landed");
    expect(group.episodes.every((e) => e.score !== null)).toBe(true);
    await expectLandedOnce(id, 3);
    expect(await storageTables(groupStub(id))).toEqual([]);
  });

  it("an object evicted mid-landing keeps its transcripts and lands exactly once when D1 is back", async () => {
    await env.DB.exec("ALTER TABLE messages RENAME TO messages_away");
    let id = "";
    try {
      id = await startGroup({
        env: "guess-number",
        example: guessExample("evict-landing", 12),
        group_size: 2,
        sampling: { model: "sim", temperature: 0 },
      });
      await until(
        async () => (lastError(await getGroup(id)) ?? "").startsWith("D1:"),
        "met the D1 outage",
      );
      await evictDurableObject(groupStub(id));
      // The new instance, built from storage alone, still holds every transcript.
      const held = await runInDurableObject(groupStub(id), (_instance, state) =>
        Number(state.storage.sql.exec("SELECT COUNT(*) AS n FROM messages").one().n),
      );
      expect(held).toBeGreaterThan(4);
    } finally {
      await env.DB.exec("ALTER TABLE messages_away RENAME TO messages");
    }
    const group = await waitForGroup(id);
    expect(group.status).toBe("landed");
    await expectLandedOnce(id, 2);
  });

  it("duplicate alarm deliveries start no second driver and no second landing", async () => {
    const id = await startGroup({
      env: "guess-number",
      example: guessExample("alarms", 12),
      group_size: 2,
      sampling: { model: "sim+latency:50", temperature: 1, seed: 8 },
    });
    const stub = groupStub(id);
    for (let i = 0; i < 5; i++) {
      await Promise.all([
        runInDurableObject(stub, (instance: RolloutGroup) => instance.alarm()),
        runInDurableObject(stub, (instance: RolloutGroup) => instance.alarm()),
      ]);
      await new Promise((resolve) => setTimeout(resolve, 40));
    }
    const group = await waitForGroup(id);
    // Failures named, so a run that fails says why.
    expect({ status: group.status, failures: group.failures }).toEqual({
      status: "landed",
      failures: [],
    });
    expect(group.episodes.every((e) => e.redispatches === 0)).toBe(true);
    await expectLandedOnce(id, 2);
    // Landed and deleted: a late alarm finds nothing to do.
    expect(await runDurableObjectAlarm(stub)).toBe(false);
    await runInDurableObject(stub, (instance: RolloutGroup) => instance.alarm());
    await expectLandedOnce(id, 2);
  });
});
