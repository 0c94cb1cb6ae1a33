/**
 * `npm run test:load [-- --short]`: a bounded load on loopback. Starts 200 groups of 8 episodes
 * at once against the simulator with realistic latency, waits for all to land, leases and acks
 * everything as trainers would, then counts: started = landed = served, nothing lost or
 * duplicated, and the turn overhead the pipeline adds. Writes reliability/results/load.json.
 */
import pMap from "p-map";
import { EdgerollClient } from "../src/client/edgeroll-client";
import { flag, guessRequest, withStack, writeResult } from "./harness";
import { type LoadResult, renderReport } from "./report";

const short = flag("short");
const GROUPS = short ? 40 : 200;
const SIZE = 8;
const RUN = "load";
const latency = { ttftMs: 250, msPerToken: 10, msPerPromptToken: 0.05 };

const result = await withStack(
  { sim: { latency }, vars: { MAX_INFLIGHT_GENERATIONS: "4096", HEARTBEAT_S: "10" } },
  async (stack): Promise<LoadResult> => {
    const client = new EdgerollClient({
      baseUrl: stack.apiUrl,
      token: stack.tokens.admin,
      attempts: 5,
    });
    const started = Date.now();
    const requests = Array.from({ length: GROUPS }, (_, i) =>
      guessRequest(RUN, i, "sim", {
        group_size: SIZE,
        sampling: { model: "sim", temperature: 1, seed: i * 31, max_completion_tokens: 64 },
      }),
    );
    // Start everything first, so all groups are in flight together.
    const ids = await pMap(
      requests,
      async (r, i) => (await client.startGroup(r, { idempotencyKey: `${RUN}:${i}` })).group_id,
      {
        concurrency: 50,
      },
    );
    let peak = 0;
    const sampler = setInterval(async () => {
      const live = await Promise.all(
        ids.slice(0, 50).map((id) => client.getGroup(id).catch(() => null)),
      );
      const open = live
        .filter((g) => g && g.status === "running")
        .reduce(
          (n, g) =>
            n +
            (g?.episodes.filter((e) => !["completed", "truncated", "failed"].includes(e.state))
              .length ?? 0),
          0,
        );
      peak = Math.max(peak, Math.round((open * ids.length) / 50));
    }, 1000);
    const groups = await pMap(
      ids,
      (id) => client.waitForGroup(id, { timeoutMs: 900_000, intervalMs: 1000 }),
      { concurrency: 50 },
    );
    clearInterval(sampler);
    const seconds = (Date.now() - started) / 1000;

    // Trainers take everything: whole groups, every episode, acked.
    const served = new Set<string>();
    const episodeIds: string[] = [];
    for (;;) {
      const batch = await client.lease({
        max_groups: 50,
        run_id: RUN,
        skip_uniform_groups: false,
        include: [],
      });
      if (batch.batch_id === null) break;
      for (const group of batch.groups) {
        served.add(group.group_id);
        episodeIds.push(...group.episodes.map((e) => e.episode_id));
      }
      await client.ack(batch.batch_id);
    }
    const turns = groups.reduce((n, g) => n + g.episodes.reduce((m, e) => m + e.turns, 0), 0);
    const stats = stack.simulator?.stats();
    const landed = groups.filter((g) => g.status === "landed" || g.status === "failed").length;
    const distinct = new Set(episodeIds).size;
    const out: LoadResult = {
      date: new Date().toISOString(),
      short,
      groups: GROUPS,
      groupSize: SIZE,
      started: ids.length,
      landed,
      served: served.size,
      episodes: episodeIds.length,
      distinctEpisodes: distinct,
      lost: GROUPS * SIZE - distinct,
      duplicated: episodeIds.length - distinct,
      failedEpisodes: groups.reduce(
        (n, g) => n + g.episodes.filter((e) => e.failure_reason).length,
        0,
      ),
      peakInFlightEpisodes: peak,
      seconds,
      turns,
      turnsPerSecond: turns / seconds,
      overheadMs: stats?.turnOverheadMs ?? { count: 0, p50: null, p99: null, mean: null },
      latency,
      ok: false,
    };
    out.ok =
      out.started === GROUPS &&
      out.landed === GROUPS &&
      out.served === GROUPS &&
      out.lost === 0 &&
      out.duplicated === 0;
    return out;
  },
);
writeResult("load", result);
renderReport();
console.log(JSON.stringify(result, null, 2));
process.exitCode = result.ok ? 0 : 1;
