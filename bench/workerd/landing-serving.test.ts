// Landing and serving throughput, measured inside workerd with its real (local) D1 and R2:
// scored groups of 8 episodes of about 256 tokens each are built in their Durable Objects and
// landed — text only, and with each turn's token ids and logprobs (one R2 object per group,
// then the D1 rows) — then leased and acked through the API, without tokens and with base64
// tokens. Prints one BENCH_RESULT line per repeat for bench/run.ts, after a smaller warm-up
// round that is not reported (the first round runs on cold code).
import { runInDurableObject } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import pMap from "p-map";
import { expect, it } from "vitest";
import { configFrom, priceBook } from "../../src/config";
import { lander as landerStub } from "../../src/rollout/bindings";
import { tokenPolicyOf } from "../../src/rollout/generation/token-policy";
import { newGroupSpec } from "../../src/rollout/group-ids";
import { StartGroupRequestSchema, withPolicyVersion } from "../../src/rollout/group-spec";
import { type LandingPayload, landingPayload } from "../../src/rollout/landing";
import { registerGroup } from "../../src/rollout/registration";
import { GroupStorage } from "../../src/rollout/storage/group-storage";
import { storeTokenObject, tokenLanding } from "../../src/rollout/token-landing";
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
/** In tokens: a 40-token opening, then per turn a 50-token action and a 14-token reply. */
const OPENING_TOKENS = 40;
const ACTION_TOKENS = 50;
const REPLY_TOKENS = 14;

const ids = (n: number, from: number) => Int32Array.from({ length: n }, (_, i) => from + i);

async function scoredGroup(runId: string, i: number, withTokens: boolean): Promise<string> {
  const request = withPolicyVersion(
    StartGroupRequestSchema.parse({
      env: "marathon",
      example: { id: `bench-${i}`, input: "Walk.", metadata: { turns: TURNS } },
      group_size: SIZE,
      run_id: runId,
      tokens: withTokens ? "auto" : "off",
      sampling: { model: "sim" },
    }),
  );
  const spec = await newGroupSpec(request, null);
  // As in production, the group's `running` row is in D1 from its start; landing completes it.
  await registerGroup(env.DB, spec);
  const stub = env.ROLLOUT_GROUP.get(env.ROLLOUT_GROUP.idFromName(spec.groupId));
  await runInDurableObject(stub, (_instance, state) => {
    const store = new GroupStorage(state.storage);
    store.create(spec);
    for (let idx = 0; idx < SIZE; idx++) {
      store.recordOpening(
        idx,
        [{ role: "user", content: "Walk, and tell me what you see along the road." }],
        TURNS,
        null,
      );
      let prompt = ids(OPENING_TOKENS, 1000);
      for (let t = 0; t < TURNS; t++) {
        store.generations.markSent(idx, Date.now() + 60_000);
        const completion = ids(ACTION_TOKENS, 5000 + 100 * t);
        store.recordAction(
          idx,
          sampledMessage({ content: `Step ${t}: I see the stones and the path ahead of me.` }),
          {
            promptTokens: prompt.length,
            completionTokens: ACTION_TOKENS,
            finishReason: "stop",
            latencyMs: 5,
            attempts: 1,
          },
          withTokens
            ? {
                kind: "exact",
                host: {
                  promptIds: prompt,
                  completionIds: completion,
                  logprobs: Float32Array.from({ length: ACTION_TOKENS }, (_, k) => -0.01 * k),
                  model: "sim",
                },
                sampling: { temperature: 1, topP: 1 },
              }
            : { kind: "off" },
        );
        store.recordStep(
          idx,
          { messages: [{ role: "user", content: REPLY }], metadata: {}, done: false },
          "ok",
        );
        const next = new Int32Array(prompt.length + ACTION_TOKENS + REPLY_TOKENS);
        next.set(prompt);
        next.set(completion, prompt.length);
        next.set(ids(REPLY_TOKENS, 9000 + 100 * t), prompt.length + ACTION_TOKENS);
        prompt = next;
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

interface Finished {
  payload: LandingPayload;
  tokens: ReturnType<typeof tokenLanding>;
}

/** Builds `count` scored groups and reads what each hands over when it lands (not timed). */
async function finishedGroups(runId: string, count: number, withTokens: boolean) {
  const ids = await pMap(
    Array.from({ length: count }, (_, i) => i),
    (i) => scoredGroup(runId, i, withTokens),
    { concurrency: 16 },
  );
  return pMap(
    ids,
    (id) =>
      runInDurableObject(
        env.ROLLOUT_GROUP.get(env.ROLLOUT_GROUP.idFromName(id)),
        (_instance, state): Finished => {
          const store = new GroupStorage(state.storage);
          const { spec } = store.group.get();
          const tokens = tokenLanding(spec, store.tokens, tokenPolicyOf(spec.request));
          return {
            payload: landingPayload(store, tokens, priceBook(configFrom(env)), null),
            tokens,
          };
        },
      ),
    { concurrency: 16 },
  );
}

/** Every group lands at once, as many finishing groups would: its token object, then its rows. */
async function land(groups: readonly Finished[]): Promise<number> {
  const lander = landerStub(env);
  const started = performance.now();
  const outcomes = await Promise.all(
    groups.map(async (g) => {
      if (g.tokens) {
        const stored = await storeTokenObject(env.TOKENS, g.tokens);
        if (!stored.ok) return stored;
      }
      return lander.land(g.payload);
    }),
  );
  expect(outcomes.filter((o) => !o.ok)).toEqual([]);
  return (performance.now() - started) / 1000;
}

const call = (path: string, body: unknown) =>
  exports.default.fetch(`http://bench.test${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer test-token-all-roles" },
    body: JSON.stringify(body),
  });

/** Trainers lease whole groups and ack them until none is left; episodes per second. */
async function serve(runId: string, lease: object): Promise<{ episodes: number; seconds: number }> {
  const started = performance.now();
  let episodes = 0;
  for (;;) {
    const batch = (await (
      await call("/v1/batches/lease", {
        max_groups: 50,
        run_id: runId,
        skip_uniform_groups: false,
        ...lease,
      })
    ).json()) as {
      batch_id: string | null;
      groups: { episodes: { messages?: unknown[]; samples?: unknown[] }[] }[];
    };
    if (batch.batch_id === null) break;
    episodes += batch.groups.reduce((n, g) => n + g.episodes.length, 0);
    const first = batch.groups[0]?.episodes[0];
    if (first?.samples) expect(first.samples).toHaveLength(1);
    else expect(first?.messages?.length).toBe(1 + 2 * TURNS);
    await call(`/v1/batches/${batch.batch_id}/ack`, {});
  }
  return { episodes, seconds: (performance.now() - started) / 1000 };
}

/** Hands a run's acked groups back, so the same episodes are served again. */
async function makeAvailable(runId: string) {
  await env.DB.prepare(
    "UPDATE groups SET delivery_state = 'available', deliveries = 0, lease_id = NULL, lease_expires_at = NULL, acked_at = NULL WHERE run_id = ?",
  )
    .bind(runId)
    .run();
}

let round = 0;

/**
 * The local R2's own pace, in the same run: `count` objects of the token object's size put at
 * once, then read back at once. Locally R2 is miniflare's emulation, which handles one operation
 * at a time; deployed, each group's object writes from its own Durable Object.
 */
async function r2Floor(bytes: Uint8Array, count: number) {
  const keys = Array.from({ length: count }, (_, i) => `floor/${round}/${i}`);
  const putStart = performance.now();
  await Promise.all(keys.map((key) => env.TOKENS.put(key, bytes)));
  const putSeconds = (performance.now() - putStart) / 1000;
  const getStart = performance.now();
  await Promise.all(keys.map(async (key) => (await env.TOKENS.get(key))?.arrayBuffer()));
  const getSeconds = (performance.now() - getStart) / 1000;
  return { putsPerS: count / putSeconds, getsPerS: count / getSeconds };
}

async function measure(runId: string, count: number): Promise<string> {
  const text = await finishedGroups(`${runId}-text`, count, false);
  const tokens = await finishedGroups(`${runId}-tokens`, count, true);
  // Landing, text only and with tokens; the order alternates so neither always runs warmer.
  let landText: number;
  let landTokens: number;
  const textFirst = round++ % 2 === 0;
  if (textFirst) {
    landText = await land(text);
    landTokens = await land(tokens);
  } else {
    landTokens = await land(tokens);
    landText = await land(text);
  }
  const served = await serve(`${runId}-text`, {});
  expect(served.episodes).toBe(count * SIZE);
  // The same token-exact episodes served twice, as text and as base64 token samples, in the
  // order the landings above ran: alternated from round to round, as they are.
  const asText = () => serve(`${runId}-tokens`, {});
  const asTokens = () =>
    serve(`${runId}-tokens`, { include: ["tokens"], token_encoding: "base64" });
  let plain: Awaited<ReturnType<typeof serve>>;
  let withTokens: Awaited<ReturnType<typeof serve>>;
  if (textFirst) {
    plain = await asText();
    await makeAvailable(`${runId}-tokens`);
    withTokens = await asTokens();
  } else {
    withTokens = await asTokens();
    await makeAvailable(`${runId}-tokens`);
    plain = await asText();
  }
  expect(withTokens.episodes).toBe(count * SIZE);
  expect(plain.episodes).toBe(count * SIZE);
  const object = await env.TOKENS.get(tokens[0]?.tokens?.object?.key ?? "");
  const tokenObject = new Uint8Array((await object?.arrayBuffer()) ?? new ArrayBuffer(0));
  const floor = await r2Floor(tokenObject, count);
  const landingText = count / landText;
  const plainPerS = plain.episodes / plain.seconds;
  return `BENCH_RESULT ${JSON.stringify({
    groups: count,
    text_first: textFirst,
    landing_seconds: landText,
    landing_groups_per_s: count / landText,
    landing_groups_per_s_tokens: count / landTokens,
    serving_seconds: served.seconds,
    serving_episodes_per_s: served.episodes / served.seconds,
    serving_episodes_per_s_plain: plain.episodes / plain.seconds,
    serving_episodes_per_s_tokens: withTokens.episodes / withTokens.seconds,
    token_serving_ratio:
      withTokens.episodes / withTokens.seconds / (plain.episodes / plain.seconds),
    token_object_bytes: tokenObject.byteLength,
    r2_puts_per_s: floor.putsPerS,
    r2_gets_per_s: floor.getsPerS,
    // What landing with tokens could reach if it cost only one R2 put and the text landing.
    landing_groups_per_s_tokens_bound: 1 / (1 / floor.putsPerS + 1 / landingText),
    // What serving with tokens could reach if it cost only one R2 get per group on top.
    token_serving_ratio_bound: 1 / (1 + plainPerS / (floor.getsPerS * SIZE)),
  })}`;
}

it("measures landing and serving", async () => {
  await measure("bench-landing-warm-up", Math.min(GROUPS, 50));
  for (let r = 0; r < REPEATS; r++) console.log(await measure(`bench-landing-${r}`, GROUPS));
}, 600_000);
