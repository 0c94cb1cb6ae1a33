/**
 * The fleet part: edgeroll's routing over four simulated hosts against the same workload through
 * a round-robin load balancer, and against one host holding the fleet's whole KV capacity (what a
 * cache could at best do). The workload is multi-turn: marathon episodes whose context grows each
 * turn, the simulator answering seeded random words (`sim+babble`) so that no two episodes share
 * a conversation, with a latency model in which uncached prompt tokens cost prefill time. Total
 * KV capacity is fixed: the working set fits once, not once per host. Also a failover run: one
 * host killed mid-run, the episodes lost counted (the target is none).
 */
import pMap from "p-map";
import { withStack } from "../reliability/harness";
import type { EdgerollClient } from "../src/client/edgeroll-client";
import { EdgerollClient as Client } from "../src/client/edgeroll-client";
import { type SimFleet, startSimFleet } from "../src/sim/fleet";
import type { LatencyModel } from "../src/sim/server";
import { type Repeated, repeated } from "./repeats";
import { startRoundRobinProxy } from "./round-robin-proxy";
import { BENCH_MAX_INFLIGHT } from "./stack";

export interface FleetPlan {
  hosts: number;
  groups: number;
  groupSize: number;
  turns: number;
  repeats: number;
  /** The fleet's whole KV capacity, in 16-token blocks; each host has its share. */
  kvBlocks: number;
}

export interface FleetResult {
  /** edgeroll's hit rate over the one big host's, per repeat. */
  fleetCacheHitRatio: Repeated;
  /** The round robin's hit rate over the one big host's. */
  roundRobinCacheHitRatio: Repeated;
  /** The hit rates themselves. */
  hitRates: { edgeroll: Repeated; roundRobin: Repeated; oneHost: Repeated };
  /** edgeroll's busiest host's requests over the mean. */
  fleetBalance: Repeated;
  /** Episodes per second, edgeroll over round robin. */
  fleetThroughputRatio: Repeated;
  episodesPerS: { edgeroll: Repeated; roundRobin: Repeated };
  /** Hit rates with twice the KV capacity, one run each: how much the figures owe to it. */
  atDoubleCapacity: { edgeroll: number; roundRobin: number; oneHost: number };
  /** Episodes that did not complete in the failover run (a host killed mid-run). */
  failoverLostEpisodes: number;
  failoverEpisodes: number;
  latency: LatencyModel;
  plan: FleetPlan;
}

/**
 * Each host's GPU: prefill at 10,000 uncached tokens per second, shared by everything it serves
 * (the simulator's `sharedPrefill`), and decode at 4 ms a token per sequence, batched.
 */
export const FLEET_LATENCY: LatencyModel = { ttftMs: 20, msPerPromptToken: 0.1, msPerToken: 4 };
const MODEL = "sim+babble";

interface RunOutcome {
  seconds: number;
  episodes: number;
  completed: number;
  /** Requests each host answered. */
  requests: number[];
  hitRate: number;
}

/**
 * One run of the workload through `client`, on hosts whose caches start empty (of `kvBlocks`
 * each when given, else as the hosts were started).
 */
async function runWorkload(
  client: EdgerollClient,
  sims: SimFleet,
  plan: FleetPlan,
  runId: string,
  options: { during?: () => Promise<void>; kvBlocks?: number } = {},
): Promise<RunOutcome> {
  for (const host of sims.hosts) host.clearCache(options.kvBlocks);
  const before = sims.hosts.map((h) => h.stats().requests);
  const started = Date.now();
  const landing = pMap(
    Array.from({ length: plan.groups }, (_, g) => g),
    async (g) => {
      const { group_id } = await client.startGroup(
        {
          env: "marathon",
          example: {
            id: `${runId}-${g}`,
            input: `Go, ${runId} ${g}.`,
            metadata: { turns: plan.turns, reply_bytes: 400 },
          },
          group_size: plan.groupSize,
          run_id: runId,
          sampling: { model: MODEL, seed: g + 1, max_completion_tokens: 32 },
        },
        { idempotencyKey: `${runId}:${g}` },
      );
      return client.waitForGroup(group_id, { timeoutMs: 600_000, intervalMs: 200 });
    },
    { concurrency: 32 },
  );
  await options.during?.();
  const groups = await landing;
  const seconds = (Date.now() - started) / 1000;
  const episodes = groups.flatMap((g) => g.episodes);
  const counts = sims.hosts.map((h) => h.cacheCounts());
  const queries = counts.reduce((a, c) => a + c.queries, 0);
  const hits = counts.reduce((a, c) => a + c.hits, 0);
  return {
    seconds,
    episodes: episodes.length,
    completed: episodes.filter((e) => e.state === "completed").length,
    requests: sims.hosts.map((h, i) => h.stats().requests - (before[i] ?? 0)),
    hitRate: queries > 0 ? hits / queries : 0,
  };
}

/** A stack of the pipeline's Worker pointed at `inferenceUrl`, with no cap that could bind. */
function withPipeline<T>(inferenceUrl: string, body: (client: EdgerollClient) => Promise<T>) {
  return withStack(
    {
      inferenceUrl,
      vars: { MAX_INFLIGHT_GENERATIONS: String(BENCH_MAX_INFLIGHT), HOST_PROBE_S: "1" },
    },
    (stack) => body(new Client({ baseUrl: stack.apiUrl, token: stack.tokens.admin, attempts: 5 })),
  );
}

export async function measureFleet(
  plan: FleetPlan,
  say: (line: string) => void = () => {},
): Promise<FleetResult> {
  const perHost = Math.floor(plan.kvBlocks / plan.hosts);
  const fleet = await startSimFleet(plan.hosts, {
    kvBlocks: perHost,
    latency: FLEET_LATENCY,
    sharedPrefill: true,
  });
  // The one host stands for the whole fleet: all its KV capacity and all its prefill compute.
  const big = await startSimFleet(1, {
    kvBlocks: perHost * plan.hosts,
    latency: { ...FLEET_LATENCY, msPerPromptToken: FLEET_LATENCY.msPerPromptToken / plan.hosts },
    sharedPrefill: true,
  });
  const proxy = await startRoundRobinProxy(fleet.hosts.map((h) => h.url));
  try {
    return await withPipeline(fleet.baseUrl, (routed) =>
      withPipeline(proxy.url, (roundRobin) =>
        withPipeline(big.baseUrl, async (oneHost) => {
          const variants = [
            { name: "edgeroll", client: routed, sims: fleet },
            { name: "round robin", client: roundRobin, sims: fleet },
            { name: "one host", client: oneHost, sims: big },
          ] as const;
          // Warm-up: every stack once, a third of the workload, not counted.
          for (const v of variants)
            await runWorkload(
              v.client,
              v.sims,
              { ...plan, groups: Math.max(1, Math.floor(plan.groups / 3)) },
              `fleet-warm-${v.name.replace(" ", "-")}`,
            );
          const runs: Record<(typeof variants)[number]["name"], RunOutcome[]> = {
            edgeroll: [],
            "round robin": [],
            "one host": [],
          };
          for (let r = 0; r < plan.repeats; r++) {
            // Three variants rotate which goes first.
            const order = [0, 1, 2].map((i) => variants[(i + r) % 3] as (typeof variants)[number]);
            for (const v of order) {
              const outcome = await runWorkload(
                v.client,
                v.sims,
                plan,
                `fleet-${r}-${v.name.replace(" ", "-")}`,
              );
              runs[v.name].push(outcome);
              say(
                `fleet ${v.name}, repeat ${r + 1}: hit rate ${outcome.hitRate.toFixed(3)}, ${(outcome.episodes / outcome.seconds).toFixed(1)} episodes/s, requests by host ${outcome.requests.join("/")}`,
              );
            }
          }
          // The same once more with twice the KV capacity: round robin's copies fit better.
          const doubled = async (v: (typeof variants)[number], blocks: number) =>
            (
              await runWorkload(v.client, v.sims, plan, `fleet-2x-${v.name.replace(" ", "-")}`, {
                kvBlocks: 2 * blocks,
              })
            ).hitRate;
          const [routedVariant, roundRobinVariant, oneHostVariant] = variants;
          const atDoubleCapacity = {
            edgeroll: await doubled(routedVariant, perHost),
            roundRobin: await doubled(roundRobinVariant, perHost),
            oneHost: await doubled(oneHostVariant, perHost * plan.hosts),
          };
          say(
            `fleet at twice the KV capacity: hit rates edgeroll ${atDoubleCapacity.edgeroll.toFixed(3)}, round robin ${atDoubleCapacity.roundRobin.toFixed(3)}, one host ${atDoubleCapacity.oneHost.toFixed(3)}`,
          );
          // Failover: host 1 of the fleet killed a third of the way in, back two thirds in.
          const expected = (runs.edgeroll[0]?.seconds ?? 10) * 1000;
          const victim = fleet.hosts[1];
          const failover = await runWorkload(routed, fleet, plan, "fleet-failover", {
            during: async () => {
              await new Promise((resolve) => setTimeout(resolve, expected / 3));
              await victim?.kill();
              say(`fleet failover: host 1 killed at ${(expected / 3000).toFixed(1)} s`);
              await new Promise((resolve) => setTimeout(resolve, expected / 3));
              await victim?.revive();
            },
          });
          say(`fleet failover: ${failover.completed} of ${failover.episodes} episodes completed`);
          const each = (name: keyof typeof runs, f: (o: RunOutcome, i: number) => number) =>
            repeated(runs[name].map(f));
          const oneHostRate = (i: number) => runs["one host"][i]?.hitRate ?? Number.NaN;
          const rate = (o: RunOutcome) => o.episodes / o.seconds;
          return {
            fleetCacheHitRatio: each("edgeroll", (o, i) => o.hitRate / oneHostRate(i)),
            roundRobinCacheHitRatio: each("round robin", (o, i) => o.hitRate / oneHostRate(i)),
            hitRates: {
              edgeroll: each("edgeroll", (o) => o.hitRate),
              roundRobin: each("round robin", (o) => o.hitRate),
              oneHost: each("one host", (o) => o.hitRate),
            },
            fleetBalance: each("edgeroll", (o) => {
              const mean = o.requests.reduce((a, b) => a + b, 0) / o.requests.length;
              return Math.max(...o.requests) / mean;
            }),
            fleetThroughputRatio: each(
              "edgeroll",
              (o, i) => rate(o) / rate(runs["round robin"][i] as RunOutcome),
            ),
            episodesPerS: {
              edgeroll: each("edgeroll", rate),
              roundRobin: each("round robin", rate),
            },
            atDoubleCapacity,
            failoverLostEpisodes: failover.episodes - failover.completed,
            failoverEpisodes: failover.episodes,
            latency: FLEET_LATENCY,
            plan,
          };
        }),
      ),
    );
  } finally {
    await proxy.close();
    await fleet.close();
    await big.close();
  }
}
