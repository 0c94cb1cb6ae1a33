/**
 * The floor Worker (bench/floor/) on a stack of its own: a Worker that makes only the platform
 * calls of an edgeroll turn (a streamed fetch, a step on an RpcTarget session, the same
 * statements in shared write turns, a landing's R2 put and D1 batch) and none of edgeroll's own
 * work. Measured point by point as
 * bench/ideal.ts measures the pipeline: the same simulator with 1 s generations, the same
 * steady-state window, the host's view of the time between turns, workerd's memory and CPU.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { applyMigrations, startWorker, stopProcessGroup } from "../src/cli/local-stack";
import { freePort } from "../src/cli/ports";
import { type Simulator, startSimulator } from "../src/sim/server";
import { type IdealPoint, LATENCY_MS, MODEL, SIZE, steadyTurnsPerS, tailByTurn } from "./ideal";
import { processesOf, rssSampler, workerdCpuMs } from "./proc";

const ROOT = resolve(import.meta.dirname, "..");

export interface FloorStack {
  port: number;
  pgid: number;
  simulator: Simulator;
}

/** Starts the floor Worker (and a simulator) in a fresh process, runs `body`, stops both. */
export async function withFloorStack<T>(
  body: (floor: FloorStack) => Promise<T>,
  extra: { inspectorPort?: number } = {},
): Promise<T> {
  const simulator = await startSimulator({
    port: 0,
    latency: { ttftMs: 0, msPerToken: 0, msPerPromptToken: 0 },
  });
  const state = mkdtempSync(join(tmpdir(), "edgeroll-floor-"));
  const port = await freePort();
  try {
    // The floor lands into edgeroll's D1 schema, as the pipeline does.
    applyMigrations(state);
    // Started as edgeroll's local stack starts its Worker, local traces off included.
    const worker = await startWorker({
      persistTo: state,
      port,
      inferenceUrl: simulator.url,
      configPath: join(ROOT, "bench/floor/wrangler.toml"),
      ...(extra.inspectorPort ? { inspectorPort: extra.inspectorPort } : {}),
    });
    try {
      return await body({ port, pgid: worker.pid as number, simulator });
    } finally {
      await stopProcessGroup(worker);
    }
  } finally {
    await simulator.close();
    rmSync(state, { recursive: true, force: true });
  }
}

/** One point: C / 8 groups of 8 episodes of `turns` turns, every generation 1 s at the host. */
export async function measureFloorPoint(
  floor: FloorStack,
  concurrency: number,
  turns: number,
  /** Distinct statements each object runs once more (bench:heap's `--statements`). */
  statements = 0,
): Promise<IdealPoint> {
  await fetch(new URL("/sim/stats/reset", floor.simulator.url), { method: "POST" });
  const requests = () => floor.simulator.stats().byModel[MODEL]?.requests ?? 0;
  const before = requests();
  const rss = rssSampler(floor.pgid);
  const cpuBefore = workerdCpuMs(floor.pgid);
  const samples: [number, number][] = [];
  const sampler = setInterval(() => samples.push([Date.now(), requests() - before]), 250);
  const started = Date.now();
  const response = await fetch(
    `http://127.0.0.1:${floor.port}/?groups=${concurrency / SIZE}&turns=${turns}&model=${encodeURIComponent(MODEL)}&statements=${statements}`,
  );
  if (!response.ok) throw new Error(`the floor run failed: ${await response.text()}`);
  clearInterval(sampler);
  const seconds = (Date.now() - started) / 1000;
  const played = requests() - before;
  const cpuMs = workerdCpuMs(floor.pgid) - cpuBefore;
  const overhead = floor.simulator.stats().turnOverheadMs;
  return {
    concurrency,
    turnsPerEpisode: turns,
    ratio: steadyTurnsPerS(samples) / concurrency,
    endToEndRatio: (turns * LATENCY_MS) / 1000 / seconds,
    overheadMsP50: overhead.p50,
    overheadMsP99: overhead.p99,
    ...tailByTurn(floor.simulator.turnGaps()),
    peakRssMb: rss.stop(),
    workerdCores: cpuMs / 1000 / seconds,
    cpuMsPerTurn: cpuMs / played,
  };
}

/** workerd's resident memory now, the largest of the group's workerd processes. */
export function rssNowMb(pgid: number): number {
  return Math.max(0, ...processesOf(pgid).map((p) => p.rssMb));
}
