// Landing and serving throughput, measured inside workerd with its real (local) D1: scored
// groups of 8 episodes of about 256 tokens each are built in their Durable Objects and landed,
// then leased and acked through the API. Prints one BENCH_RESULT line per repeat for bench/run.ts,
// after a smaller warm-up round that is not reported (the first round runs on cold code).
import { runInDurableObject } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import pMap from "p-map";
import { expect, it } from "vitest";
import { lander as landerStub } from "../../src/rollout/bindings";
import { newGroupSpec } from "../../src/rollout/group-ids";
import { StartGroupRequestSchema } from "../../src/rollout/group-spec";
import { GroupStore } from "../../src/rollout/group-store";
import { landingPayload } from "../../src/rollout/landing";
import { registerGroup } from "../../src/rollout/registration";
import { sampledMessage } from "../../src/sdk";

/** Set by bench/vitest.config.ts from the environment of `npm run bench`. */
const vars = env as unknown as Record<string, string | undefined>;
const GROUPS = Number(vars.BENCH_GROUPS ?? "200");
const REPEATS = Number(vars.BENCH_REPEATS ?? "1");
const SIZE = 8;
const TURNS = 4;
/** About 256 tokens an episode: an opening, then four actions and replies of ~120 characters. */
const REPLY =
  "The road goes on, and the walker follows it, counting the stones beside the path. ".repeat(2);

async function scoredGroup(runId: string, i: number): Promise<string> {
  const request = StartGroupRequestSchema.parse({
    env: "marathon",
    example: { id: `bench-${i}`, input: "Walk.", metadata: { turns: TURNS } },
    group_size: SIZE,
    run_id: runId,
    sampling: { model: "sim" },
  });
  const spec = await newGroupSpec(request, null);
  // As in production, the group's `running` row is in D1 from its start; landing completes it.
  await registerGroup(env.DB, spec);
  const stub = env.ROLLOUT_GROUP.get(env.ROLLOUT_GROUP.idFromName(spec.groupId));
  await runInDurableObject(stub, (_instance, state) => {
    const store = new GroupStore(state.storage);
    store.create(spec);
    for (let idx = 0; idx < SIZE; idx++) {
      store.recordOpening(
        idx,
        [{ role: "user", content: "Walk, and tell me what you see along the road." }],
        TURNS,
      );
      for (let t = 0; t < TURNS; t++) {
        store.markSent(idx, Date.now() + 60_000);
        store.recordAction(
          idx,
          sampledMessage({ content: `Step ${t}: I see the stones and the path ahead of me.` }),
          {
            promptTokens: 40 + 60 * t,
            completionTokens: 14,
            finishReason: "stop",
            latencyMs: 5,
            attempts: 1,
          },
        );
        store.recordStep(
          idx,
          { messages: [{ role: "user", content: REPLY }], metadata: {}, done: false },
          "ok",
        );
      }
      store.recordReward(idx, { score: (idx % 3) / 2, threshold: 1, metadata: {} });
    }
    store.recordCredit(
      Array.from({ length: SIZE }, (_, idx) => ({
        idx,
        advantage: 0,
        perTurnRewards: null,
        perTurnAdvantages: null,
      })),
      "per_episode",
      [],
    );
  });
  return spec.groupId;
}

async function measure(runId: string, count: number): Promise<string> {
  const ids = await pMap(
    Array.from({ length: count }, (_, i) => i),
    (i) => scoredGroup(runId, i),
    { concurrency: 16 },
  );

  // The rows each finished group hands to the lander, read from its object (not timed).
  const rows = await pMap(
    ids,
    (id) =>
      runInDurableObject(
        env.ROLLOUT_GROUP.get(env.ROLLOUT_GROUP.idFromName(id)),
        (_instance, state) => landingPayload(new GroupStore(state.storage), null),
      ),
    { concurrency: 16 },
  );
  // Landing: every group lands at once, as many finishing groups would, through the lander.
  const lander = landerStub(env);
  const landStart = performance.now();
  const outcomes = await Promise.all(rows.map((r) => lander.land(r)));
  expect(outcomes.filter((o) => !o.ok)).toEqual([]);
  const landSeconds = (performance.now() - landStart) / 1000;

  // Serving: trainers lease whole groups with their transcripts and ack them, until none is left.
  const call = (path: string, body: unknown) =>
    exports.default.fetch(`http://bench.test${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer test-token-all-roles" },
      body: JSON.stringify(body),
    });
  const serveStart = performance.now();
  let episodes = 0;
  for (;;) {
    const batch = (await (
      await call("/v1/batches/lease", {
        max_groups: 50,
        run_id: runId,
        skip_uniform_groups: false,
      })
    ).json()) as {
      batch_id: string | null;
      groups: { episodes: { messages: unknown[] }[] }[];
    };
    if (batch.batch_id === null) break;
    episodes += batch.groups.reduce((n, g) => n + g.episodes.length, 0);
    expect(batch.groups[0]?.episodes[0]?.messages.length).toBe(1 + 2 * TURNS);
    await call(`/v1/batches/${batch.batch_id}/ack`, {});
  }
  const serveSeconds = (performance.now() - serveStart) / 1000;
  expect(episodes).toBe(count * SIZE);

  return `BENCH_RESULT ${JSON.stringify({
    groups: count,
    landing_seconds: landSeconds,
    landing_groups_per_s: count / landSeconds,
    serving_seconds: serveSeconds,
    serving_episodes_per_s: episodes / serveSeconds,
  })}`;
}

it("measures landing and serving", async () => {
  await measure("bench-landing-warm-up", Math.min(GROUPS, 50));
  for (let r = 0; r < REPEATS; r++) console.log(await measure(`bench-landing-${r}`, GROUPS));
}, 600_000);
