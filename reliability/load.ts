/**
 * `npm run test:load [-- --short]`: a bounded load on loopback. Starts 200 groups of 8 episodes
 * at once against the simulator with realistic latency, waits for all to land, leases and acks
 * everything as trainers would, then counts: started = landed = served, none landed as failed,
 * every episode completed, nothing lost or duplicated (`loadVerdict`), and the turn overhead the
 * pipeline adds. Writes reliability/results/load.json.
 */
import pMap from "p-map";
import { EdgerollClient } from "../src/client/edgeroll-client";
import { flag, guessRequest, serveEverything, withStack, writeResult } from "./harness";
import { renderReport } from "./report";
import { type LoadResult, loadVerdict } from "./verdicts";

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
    const { groups: served, episodeIds } = await serveEverything(client, RUN);
    const turns = groups.reduce((n, g) => n + g.episodes.reduce((m, e) => m + e.turns, 0), 0);
    const stats = stack.simulator?.stats();
    const distinct = new Set(episodeIds).size;
    const ends = groups.flatMap((g) => g.episodes.map((e) => e.state));
    const figures = {
      date: new Date().toISOString(),
      short,
      groups: GROUPS,
      groupSize: SIZE,
      started: ids.length,
      landed: groups.filter((g) => g.status === "landed").length,
      failedGroups: groups.filter((g) => g.status === "failed").length,
      served: served.size,
      episodes: episodeIds.length,
      distinctEpisodes: distinct,
      lost: GROUPS * SIZE - distinct,
      duplicated: episodeIds.length - distinct,
      episodeEnds: {
        completed: ends.filter((s) => s === "completed").length,
        truncated: ends.filter((s) => s === "truncated").length,
        failed: ends.filter((s) => s === "failed").length,
      },
      peakInFlightEpisodes: peak,
      seconds,
      turns,
      turnsPerSecond: turns / seconds,
      overheadMs: stats?.turnOverheadMs ?? { count: 0, p50: null, p99: null, mean: null },
      latency,
    };
    return { ...figures, ...loadVerdict(figures) };
  },
);
writeResult("load", result);
renderReport();
console.log(JSON.stringify(result, null, 2));
for (const problem of result.problems) console.error(`load: ${problem}`);
process.exitCode = result.ok ? 0 : 1;
