/**
 * Part 2: distance from the latency-bound ideal. Every generation takes 1 s at the host, so C
 * concurrent episodes can at best make C turns per second; the pipeline's own time between
 * turns (stepping, persisting, queueing) is what keeps it below. Also samples workerd's peak
 * resident memory (part 5) while the episodes are in flight.
 */
import pMap from "p-map";
import type { StartGroupInput } from "../src/client/edgeroll-client";
import { percentile, type TurnGap } from "../src/sim/host-ledger";
import { rssSampler, workerdCpuMs } from "./proc";
import { type BenchStack, waitForGroups } from "./stack";

export interface IdealPoint {
  concurrency: number;
  turnsPerEpisode: number;
  /** Steady state: turns per second / C. */
  ratio: number;
  /** Whole run, start to last landing: (turns per episode × 1 s) / wall time. */
  endToEndRatio: number;
  overheadMsP50: number | null;
  overheadMsP99: number | null;
  /** The p99 over every turn but each episode's first (the gap after its first generation). */
  overheadMsP99LaterTurns: number | null;
  /** Of the turns whose overhead is at or over the p99, the share that are first turns. */
  firstTurnShareOfTail: number | null;
  peakRssMb: number;
  /** workerd CPU seconds per wall second over the run: 1.0 is one core, all of the time. */
  workerdCores: number;
  /** workerd CPU over the turns played, whole run (start, scoring and landing included). */
  cpuMsPerTurn: number;
}

export const SIZE = 8;
export const LATENCY_MS = 1000;
export const MODEL = `sim+latency:${LATENCY_MS}`;

/** Least-squares slope of y against x; NaN (reported as no figure) without two points. */
function slope(points: readonly [number, number][]): number {
  const n = points.length;
  if (n < 2) return Number.NaN;
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  const sxy = points.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0);
  const sxx = points.reduce((s, [x]) => s + (x - mx) ** 2, 0);
  return sxx === 0 ? Number.NaN : sxy / sxx;
}

/**
 * Turns per second in steady state, from (time, turns so far) samples taken while the episodes
 * run: from 1 s after every group started until 2 s before the last ended (the first and last
 * turns are start-up and finishing). The rate is the least-squares slope of turns against time
 * there: episodes move in step, so counts rise in stairs, and two endpoints alone would catch
 * one stair more or less.
 */
export function steadyTurnsPerS(samples: readonly [number, number][]): number {
  const from = (samples[0]?.[0] ?? 0) + 1000;
  const to = (samples.at(-1)?.[0] ?? 0) - 2000;
  return slope(samples.filter(([t]) => t >= from && t <= to)) * 1000;
}

/**
 * Where the point's tail lies: C episodes started together end their first generations
 * together, so their first steps queue on workerd's one thread at once; later turns spread out.
 */
export function tailByTurn(
  gaps: readonly TurnGap[],
): Pick<IdealPoint, "overheadMsP99LaterTurns" | "firstTurnShareOfTail"> {
  const sorted = (list: readonly TurnGap[]) => list.map((g) => g.ms).sort((a, b) => a - b);
  const p99 = percentile(sorted(gaps), 99);
  const tail = p99 === null ? [] : gaps.filter((g) => g.ms >= p99);
  return {
    overheadMsP99LaterTurns: percentile(sorted(gaps.filter((g) => g.turn > 1)), 99),
    firstTurnShareOfTail:
      tail.length === 0 ? null : tail.filter((g) => g.turn === 1).length / tail.length,
  };
}

let points = 0;

/** How long the turns may stall (no generation answered) before the wait stops counting. */
const STALLED_MS = 10_000;

/**
 * Resolves once `played()` reaches `turns`, or stops rising for STALLED_MS (an episode that ended
 * early plays fewer turns; the run's own wait then says how it ended).
 */
async function untilPlayed(played: () => number, turns: number): Promise<void> {
  let last = played();
  let lastRiseAt = Date.now();
  while (last < turns && Date.now() - lastRiseAt < STALLED_MS) {
    await new Promise((r) => setTimeout(r, 50));
    const now = played();
    if (now > last) lastRiseAt = Date.now();
    last = now;
  }
}

/** One point of C episodes; `request` adds fields to every group's (an ablation's `tokens`). */
export async function measureIdeal(
  bench: BenchStack,
  concurrency: number,
  turns: number,
  request: Partial<StartGroupInput> = {},
): Promise<IdealPoint> {
  const groups = concurrency / SIZE;
  const runId = `bench-ideal-${concurrency}-${points++}`;
  await bench.resetSimStats();
  const rss = rssSampler(bench.pgid);
  const before = bench.simRequests(MODEL);
  const cpuBefore = workerdCpuMs(bench.pgid);
  const started = Date.now();
  const ids = await pMap(
    Array.from({ length: groups }, (_, i) => i),
    async (i) =>
      (
        await bench.client.startGroup({
          env: "marathon",
          example: {
            id: `c${concurrency}-${i}`,
            input: "Go.",
            metadata: { turns, reply_bytes: 200 },
          },
          group_size: SIZE,
          run_id: runId,
          sampling: { model: MODEL, seed: i, max_completion_tokens: 16 },
          ...request,
        })
      ).group_id,
    { concurrency: 32 },
  );
  // Turns answered, sampled every 250 ms while the episodes run.
  const samples: [number, number][] = [];
  const sampler = setInterval(
    () => samples.push([Date.now(), bench.simRequests(MODEL) - before]),
    250,
  );
  // While the turns are played, the wait reads the simulator's count, in this process; then it
  // polls the groups one at a time until each has landed. GET /v1/runs/:id would ask every
  // running group object for its spend on each poll: work on workerd's one thread that the
  // floor, which waits on one held request, does not do.
  await untilPlayed(() => bench.simRequests(MODEL) - before, groups * SIZE * turns);
  await waitForGroups(bench.client, ids);
  clearInterval(sampler);
  const seconds = (Date.now() - started) / 1000;
  const cpuMs = workerdCpuMs(bench.pgid) - cpuBefore;
  const played = bench.simRequests(MODEL) - before;
  const peakRssMb = rss.stop();

  const steadyRate = steadyTurnsPerS(samples);
  const simulator = bench.stack.simulator;
  if (simulator === null) throw new Error("the bench needs the built-in simulator");
  const stats = simulator.stats();
  return {
    concurrency,
    turnsPerEpisode: turns,
    ratio: steadyRate / concurrency,
    endToEndRatio: (turns * LATENCY_MS) / 1000 / seconds,
    overheadMsP50: stats.turnOverheadMs.p50,
    overheadMsP99: stats.turnOverheadMs.p99,
    ...tailByTurn(simulator.turnGaps()),
    peakRssMb,
    workerdCores: cpuMs / 1000 / seconds,
    cpuMsPerTurn: cpuMs / played,
  };
}
