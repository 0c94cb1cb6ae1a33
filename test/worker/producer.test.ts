// Runs that produce themselves (issue 32): a producer object per run starts one group per
// example and epoch from a dataset in R2, resamples an example whose group landed uniform up to
// `max_resamples` times, survives its object being evicted mid-run with no group lost or
// doubled, and refuses bad requests before it exists.
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { ProducerView } from "../../src/producer/producer-view";
import { producerKey } from "../../src/producer/production-plan";
import {
  type EnvironmentEpisode,
  EnvironmentSingleTurn,
  type RewardResultInput,
  type TaskExample,
} from "../../src/sdk";
import { api, d1, errorOf, postGroup, setPolicy, TOKENS, until } from "./helpers";
import { registerTestEnvironment } from "./test-environments";

/**
 * Scores a group by its members' order: every episode 1 when the example says `uniform`, else
 * 0, 1, 0, 1, ... — a group with signal, whatever the model said.
 */
class SignalByExample extends EnvironmentSingleTurn {
  buildPromptMessages(example: TaskExample) {
    return [{ role: "user" as const, content: example.input }];
  }
  scoreResponse(): RewardResultInput {
    return { score: 1 };
  }
  override async scoreEpisodes(example: TaskExample, episodes: readonly EnvironmentEpisode[]) {
    const uniform = (example.metadata as { uniform?: boolean } | undefined)?.uniform === true;
    return episodes.map((_, i) => ({ score: uniform ? 1 : i % 2, threshold: 1 }));
  }
}
registerTestEnvironment("signal-by-example", () => new SignalByExample());

const sampling = { model: "sim", temperature: 0.7, seed: 11, max_completion_tokens: 16 };

/** Pushes a dataset as a trainer does (POST /v1/datasets/:name). */
async function upload(name: string, rows: object[]): Promise<void> {
  const response = await api(`/v1/datasets/${name}`, {
    method: "POST",
    headers: { "content-type": "application/x-ndjson", authorization: `Bearer ${TOKENS.trainer}` },
    body: rows.map((r) => JSON.stringify(r)).join("\n"),
  });
  if (!response.ok) throw new Error(`push ${name}: ${response.status} ${await response.text()}`);
}

function postProducer(run: string, body: object, token = TOKENS.producer) {
  return api(`/v1/runs/${run}/producer`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
}

const producerOf = async (run: string) =>
  (await api(`/v1/runs/${run}/producer`)).json<ProducerView>();

async function untilDone(run: string): Promise<ProducerView> {
  await until(async () => (await producerOf(run)).state !== "running", `${run} done`, 60_000);
  const view = await producerOf(run);
  expect(view.rejections).toEqual([]);
  return view;
}

/** The run's groups per example, from D1: what the producer really started. */
async function groupsByExample(run: string): Promise<Record<string, number>> {
  const rows = await d1<{ example_id: string; n: number }>(
    "SELECT example_id, COUNT(*) AS n FROM groups WHERE run_id = ? GROUP BY example_id",
    run,
  );
  return Object.fromEntries(rows.map((r) => [r.example_id, r.n]));
}

const questions = (prefix: string, n: number) =>
  Array.from({ length: n }, (_, i) => ({
    id: `${prefix}-${i}`,
    input: `What is ${i} + ${i}?`,
    output: String(2 * i),
  }));

describe("a run's producer", () => {
  it("covers its dataset exactly `epochs` times, one group per example and epoch, then stops", async () => {
    await upload("prod-cover", questions("pc", 5));
    const response = await postProducer("prod-cover", {
      env: "exact-answer",
      dataset: "prod-cover",
      group_size: 2,
      epochs: 2,
      shuffle_seed: 7,
      max_in_flight: 3,
      sampling,
    });
    expect(response.status).toBe(202);
    const view = await untilDone("prod-cover");
    expect(view).toMatchObject({
      state: "done",
      env_version: "1",
      examples: 5,
      groups_started: 10,
      groups_in_flight: 0,
      resampled: 0,
      epochs: [
        { epoch: 0, examples_done: 5, examples: 5 },
        { epoch: 1, examples_done: 5, examples: 5 },
      ].map((e) => expect.objectContaining(e)),
    });
    expect(await groupsByExample("prod-cover")).toEqual(
      Object.fromEntries(questions("pc", 5).map((q) => [q.id, 2])),
    );
    // Every group pinned the version the producer started at.
    const versions = await d1<{ v: string }>(
      "SELECT DISTINCT env_version AS v FROM groups WHERE run_id = 'prod-cover'",
    );
    expect(versions).toEqual([{ v: "1" }]);
  });

  it("resamples an example whose group landed uniform up to max_resamples times, and no more", async () => {
    await upload("prod-dynamic", [
      { id: "always-uniform", input: "a", metadata: { uniform: true } },
      { id: "signal-1", input: "b" },
      { id: "signal-2", input: "c" },
    ]);
    const response = await postProducer("prod-dynamic", {
      env: "signal-by-example",
      dataset: "prod-dynamic",
      group_size: 2,
      epochs: 2,
      dynamic_sampling: { max_resamples: 2 },
      sampling,
    });
    expect(response.status).toBe(202);
    const view = await untilDone("prod-dynamic");
    // Per epoch: the uniform example's group and its 2 resamples; the others once each.
    expect(await groupsByExample("prod-dynamic")).toEqual({
      "always-uniform": 6,
      "signal-1": 2,
      "signal-2": 2,
    });
    expect(view).toMatchObject({ state: "done", groups_started: 10, resampled: 4 });
    expect(view.epochs.map((e) => e.examples_with_signal)).toEqual([2, 2]);
    expect(view.groups_uniform).toBe(6);
    // The uniform groups stay in SQL, each a group of its own with its own seed (per epoch and
    // attempt: 2 epochs x 3 attempts).
    const seeds = await d1<{ seed: number }>(
      "SELECT DISTINCT json_extract(sampling, '$.seed') AS seed FROM groups WHERE run_id = 'prod-dynamic' AND example_id = 'always-uniform'",
    );
    expect(seeds).toHaveLength(6);
    // Each example's history, as a curriculum reads it (the example_stats view).
    const stats = await d1(
      `SELECT example_id, env_version, attempts, episodes, mean_reward, solve_rate, reward_variance,
         last_policy_version FROM example_stats
       WHERE env = 'signal-by-example' AND example_id IN ('always-uniform', 'signal-1')
       ORDER BY example_id`,
    );
    expect(stats).toEqual([
      {
        example_id: "always-uniform",
        env_version: "0",
        attempts: 6,
        episodes: 12,
        mean_reward: 1,
        solve_rate: 1,
        reward_variance: 0,
        last_policy_version: 0,
      },
      {
        example_id: "signal-1",
        env_version: "0",
        attempts: 2,
        episodes: 4,
        mean_reward: 0.5,
        solve_rate: 0.5,
        reward_variance: 0.25,
        last_policy_version: 0,
      },
    ]);
  });

  it("with the pool sampler, skips an example solved in each of its last n groups, and retries it", async () => {
    await upload("prod-pool", [
      { id: "always-solved", input: "a", metadata: { uniform: true } },
      { id: "half-solved", input: "b" },
    ]);
    const body = {
      env: "signal-by-example",
      dataset: "prod-pool",
      group_size: 2,
      epochs: 6,
      // One at a time, so each decision sees every group before it landed.
      max_in_flight: 1,
      sampling,
      sampler: "pool",
    };
    await postProducer("prod-pool", { ...body, pool: { skip_solved_after: 2, retry_after: 100 } });
    const view = await untilDone("prod-pool");
    // Solved in epochs 0 and 1, then skipped in 2 to 5; the other is sampled every epoch.
    expect(await groupsByExample("prod-pool")).toEqual({ "always-solved": 2, "half-solved": 6 });
    expect(view).toMatchObject({ skipped: 4, groups_started: 8 });
    expect(view.epochs.every((e) => e.examples_done === 2)).toBe(true);

    await upload("prod-pool-retry", [
      { id: "always-solved", input: "a", metadata: { uniform: true } },
    ]);
    await postProducer("prod-pool-retry", {
      ...body,
      dataset: "prod-pool-retry",
      pool: { skip_solved_after: 2, retry_after: 2 },
    });
    await untilDone("prod-pool-retry");
    // Epochs 0, 1 sampled; 2, 3 skipped; 4 retried after two skips in a row; 5 skipped again.
    expect(await groupsByExample("prod-pool-retry")).toEqual({ "always-solved": 3 });
    const refused = await postProducer("prod-pool-refused", { ...body, dataset: "prod-pool" });
    expect(refused.status).toBe(400);
    expect((await errorOf(refused)).message).toContain("skip_solved_after");
  });

  it("resumes after its object is evicted mid-run with no group lost or doubled", async () => {
    await upload("prod-evict", questions("pe", 8));
    await postProducer("prod-evict", {
      env: "exact-answer",
      dataset: "prod-evict",
      group_size: 2,
      max_in_flight: 2,
      sampling,
    });
    await until(async () => (await producerOf("prod-evict")).groups_started >= 3, "3 started");
    const stub = env.PRODUCER.get(env.PRODUCER.idFromName("prod-evict"));
    await evictDurableObject(stub);
    const view = await untilDone("prod-evict");
    expect(view).toMatchObject({ state: "done", groups_started: 8 });
    expect(await groupsByExample("prod-evict")).toEqual(
      Object.fromEntries(questions("pe", 8).map((q) => [q.id, 1])),
    );
  });

  it("sends again a start it wrote down but never heard back from, reaching the same group", async () => {
    // A producer killed after sending a start and before recording the answer leaves the group
    // made and its own row `starting`. Planted here as that kill leaves them, while the run is
    // paused (so the producer starts nothing itself), then the run resumes.
    const run = "prod-kill";
    await upload(run, questions("pk", 3));
    await setPolicy(run, { version: 0, paused: true });
    // One in flight at most: the planted start fills it, and must be sent again all the same.
    const body = { env: "exact-answer", dataset: run, group_size: 2, max_in_flight: 1, sampling };
    expect((await postProducer(run, body)).status).toBe(202);
    const stub = env.PRODUCER.get(env.PRODUCER.idFromName(run));
    await runInDurableObject(stub, (_producer, state) => {
      state.storage.sql.exec(
        "INSERT INTO starts (key, epoch, pos, attempt, status) VALUES ('new:0:0', 0, 0, 0, 'starting')",
      );
      state.storage.sql.exec("UPDATE producer SET slot = 1");
    });
    const digest = await runInDurableObject(stub, (_producer, state) =>
      String(state.storage.sql.exec("SELECT plan_digest FROM producer").one().plan_digest),
    );
    const key = await producerKey(run, digest, { epoch: 0, exampleId: "pk-0", attempt: 0 });
    const sent = await postGroup(
      {
        env: "exact-answer",
        example: questions("pk", 3)[0],
        group_size: 2,
        run_id: run,
        env_version: "1",
        sampling,
      },
      { "idempotency-key": key },
    );
    expect(sent.status).toBe(202);
    const made = (await sent.json<{ group_id: string }>()).group_id;
    await setPolicy(run, { version: 0, paused: false });
    const view = await untilDone(run);
    expect(view).toMatchObject({ state: "done", groups_started: 3 });
    expect(await groupsByExample(run)).toEqual({ "pk-0": 1, "pk-1": 1, "pk-2": 1 });
    const [row] = await d1<{ id: string }>(
      "SELECT id FROM groups WHERE run_id = ? AND example_id = 'pk-0'",
      run,
    );
    expect(row?.id).toBe(made);
  });

  it("after a stop, finds a start it never heard back from under its key, or counts it cancelled", async () => {
    // Planted as a stop leaves them while a tick's sends are on the wire: two starts written,
    // one of which reached its group. The run is paused so the producer sends nothing itself.
    const run = "prod-stop-unanswered";
    await upload(run, questions("pu", 3));
    await setPolicy(run, { version: 0, paused: true });
    const body = { env: "exact-answer", dataset: run, group_size: 2, max_in_flight: 2, sampling };
    expect((await postProducer(run, body)).status).toBe(202);
    const stub = env.PRODUCER.get(env.PRODUCER.idFromName(run));
    const digest = await runInDurableObject(stub, (_producer, state) =>
      String(state.storage.sql.exec("SELECT plan_digest FROM producer").one().plan_digest),
    );
    // The start that reached its group: the group first, made under the start's key.
    const key = await producerKey(run, digest, { epoch: 0, exampleId: "pu-0", attempt: 0 });
    const example = questions("pu", 3)[0];
    const group = { env: "exact-answer", example, group_size: 2, run_id: run, sampling };
    expect((await postGroup(group, { "idempotency-key": key })).status).toBe(202);
    // Then both starts written and the stop, in one go inside the object: a tick in between
    // would send the unanswered starts itself (whatever the room).
    const stopped = await runInDurableObject(stub, async (producer, state) => {
      state.storage.sql.exec(
        "INSERT INTO starts (key, epoch, pos, attempt, status) VALUES ('new:0:0', 0, 0, 0, 'starting'), ('new:0:1', 0, 1, 0, 'starting')",
      );
      state.storage.sql.exec("UPDATE producer SET slot = 2");
      return producer.stop("stopped by the test");
    });
    expect(stopped).toMatchObject({ state: "stopped", groups_in_flight: 2 });
    await setPolicy(run, { version: 0, paused: false });
    await until(async () => (await producerOf(run)).groups_in_flight === 0, "both settled");
    expect(await producerOf(run)).toMatchObject({
      state: "stopped",
      groups_started: 1,
      groups_landed: 1,
      cancelled: 1,
    });
    expect(await groupsByExample(run)).toEqual({ "pu-0": 1 });
  });

  it("stops on DELETE: groups in flight land, no new one starts", async () => {
    await upload("prod-stop", questions("ps", 12));
    await postProducer("prod-stop", {
      env: "exact-answer",
      dataset: "prod-stop",
      group_size: 2,
      max_in_flight: 1,
      sampling,
    });
    await until(async () => (await producerOf("prod-stop")).groups_started >= 1, "1 started");
    const stopped = await api("/v1/runs/prod-stop/producer", {
      method: "DELETE",
      headers: { authorization: `Bearer ${TOKENS.producer}` },
    });
    expect(stopped.status).toBe(200);
    const view = await stopped.json<ProducerView>();
    expect(view).toMatchObject({ state: "stopped", reason: "stopped by DELETE" });
    // Stopped, it still follows what it started: its counts end with nothing in flight.
    await until(
      async () => (await producerOf("prod-stop")).groups_in_flight === 0,
      "the stopped producer's groups followed to their landing",
    );
    const final = await producerOf("prod-stop");
    const rows = await d1<{ status: string; n: number }>(
      "SELECT status, COUNT(*) AS n FROM groups WHERE run_id = ? GROUP BY status",
      "prod-stop",
    );
    const groups = rows.reduce((sum, r) => sum + r.n, 0);
    expect(rows.every((r) => r.status !== "running")).toBe(true);
    expect(final.groups_landed + final.groups_failed).toBe(groups);
    expect(final.groups_started).toBe(groups);
    // A start the stop caught unanswered either reached its group or is counted cancelled.
    expect(final.groups_started + final.cancelled).toBe(view.groups_started);
    expect(groups).toBeLessThan(12);
    expect(final).toMatchObject({ state: "stopped", reason: "stopped by DELETE" });
  });

  it("refuses a bad request before it exists: unknown dataset, bad field, version, role", async () => {
    await upload("prod-refuse", questions("pr", 2));
    const base = { env: "exact-answer", dataset: "prod-refuse", group_size: 2, sampling };
    const missing = await postProducer("prod-refused", { ...base, dataset: "no-such" });
    expect(missing.status).toBe(404);
    expect((await errorOf(missing)).message).toContain('no dataset "no-such"');
    const bad = await postProducer("prod-refused", {
      ...base,
      sampling: { ...sampling, temperature: 9 },
    });
    expect(bad.status).toBe(400);
    expect((await errorOf(bad)).message).toContain("sampling.temperature");
    const pinned = await postProducer("prod-refused", { ...base, env_version: "0.9" });
    expect(pinned.status).toBe(409);
    expect((await errorOf(pinned)).code).toBe("env_version_mismatch");
    // The first example is checked whole, as a group's start checks it: exact-answer needs `output`.
    await upload("prod-refuse-first", [{ id: "no-output", input: "2 + 2?" }]);
    const refusedFirst = await postProducer("prod-refused", {
      ...base,
      dataset: "prod-refuse-first",
    });
    expect(refusedFirst.status).toBe(422);
    expect(await errorOf(refusedFirst)).toMatchObject({
      code: "example_rejected",
      message: expect.stringContaining("example.output"),
    });
    const reader = await postProducer("prod-refused", base, TOKENS.reader);
    expect(reader.status).toBe(403);
    expect((await api("/v1/runs/prod-refused/producer")).status).toBe(404);
    expect(await groupsByExample("prod-refused")).toEqual({});
  });
});
