/** The stack every bench part shares: one `wrangler dev` (workerd, local D1) and the simulator. */
import pMap from "p-map";
import { withStack } from "../reliability/harness";
import type { LocalStack } from "../src/cli/local-stack";
import { EdgerollClient, type StartGroupInput } from "../src/client/edgeroll-client";

/**
 * The in-flight cap every pipeline stack of the bench runs with: above the largest C measured
 * (1,024), so that it never binds, as in the floor Worker, which has no limiter. The limiter's
 * calls are still made; only its queue stays empty.
 */
export const BENCH_MAX_INFLIGHT = 4096;

export interface BenchStack {
  stack: LocalStack;
  client: EdgerollClient;
  /** The process group of wrangler and its workerd, for CPU and memory readings. */
  pgid: number;
  simRequests(model: string): number;
  resetSimStats(): Promise<void>;
}

export function withBenchStack<T>(
  body: (bench: BenchStack) => Promise<T>,
  extra: { inspectorPort?: number; vars?: Record<string, string>; localTraces?: boolean } = {},
): Promise<T> {
  // Latency 0 at the host; parts that need latency ask for it per request (`sim+latency:1000`).
  // The in-flight cap is lifted so that C = 1,024 episodes can all be generating at once.
  const options = {
    sim: { latency: { ttftMs: 0, msPerToken: 0, msPerPromptToken: 0 } },
    vars: {
      MAX_INFLIGHT_GENERATIONS: String(BENCH_MAX_INFLIGHT),
      HEARTBEAT_S: "30",
      ...extra.vars,
    },
    ...(extra.inspectorPort ? { inspectorPort: extra.inspectorPort } : {}),
    ...(extra.localTraces !== undefined ? { localTraces: extra.localTraces } : {}),
  };
  return withStack(options, (stack) => {
    const simulator = stack.simulator;
    if (simulator === null) throw new Error("the bench needs the built-in simulator");
    return body({
      stack,
      client: new EdgerollClient({ baseUrl: stack.apiUrl, token: stack.tokens.admin, attempts: 5 }),
      pgid: stack.wrangler.pid as number,
      simRequests: (model) => simulator.stats().byModel[model]?.requests ?? 0,
      resetSimStats: async () => {
        await fetch(new URL("/sim/stats/reset", simulator.url), { method: "POST" });
      },
    });
  });
}

/**
 * Waits until each of the groups has landed (or failed), polling one at a time. Not GET
 * /v1/runs/:id: it asks every running group object for its spend on each call, load on
 * workerd's thread that a measurement should not add.
 */
export async function waitForGroups(
  client: EdgerollClient,
  groupIds: readonly string[],
  timeoutMs = 600_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (const id of groupIds)
    await client.waitForGroup(id, {
      intervalMs: 100,
      timeoutMs: Math.max(0, deadline - Date.now()),
    });
}

/** Starts every group (16 requests at a time), then waits until each has landed (or failed). */
export async function playGroups(
  client: EdgerollClient,
  batch: readonly StartGroupInput[],
): Promise<void> {
  const ids = await pMap(batch, async (request) => (await client.startGroup(request)).group_id, {
    concurrency: 16,
  });
  await waitForGroups(client, ids);
}
