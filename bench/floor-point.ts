/**
 * The C = 1,024 floor: the pipeline's ideal-ratio run (bench/ideal.ts) and bench/floor/, a
 * Worker that makes only the platform calls of an edgeroll turn (a streamed fetch, a step on an
 * RpcTarget session, the same statements in shared write turns) and none of edgeroll's own work.
 * Same simulator, 1 s per generation, same steady-state window, each in a fresh process.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { startWorker, stopProcessGroup } from "../src/cli/local-stack";
import { freePort } from "../src/cli/ports";
import { startSimulator } from "../src/sim/server";
import { measureIdeal, steadyTurnsPerS } from "./ideal";
import { rssSampler, workerdCpuMs } from "./proc";
import { withBenchStack } from "./stack";

export const FLOOR_CONCURRENCY = 1024;
const CONCURRENCY = FLOOR_CONCURRENCY;
const TURNS = 12;
const MODEL = "sim+latency:1000";
const ROOT = resolve(import.meta.dirname, "..");

export interface FloorPoint {
  ratio: number;
  endToEndRatio: number;
  cpuMsPerTurn: number;
  peakRssMb: number;
}

export async function measureFloor(): Promise<FloorPoint> {
  const simulator = await startSimulator({
    port: 0,
    latency: { ttftMs: 0, msPerToken: 0, msPerPromptToken: 0 },
  });
  const state = mkdtempSync(join(tmpdir(), "edgeroll-floor-"));
  const port = await freePort();
  // Started as edgeroll's local stack starts its Worker, local traces off included.
  const worker = await startWorker({
    persistTo: state,
    port,
    inferenceUrl: simulator.url,
    configPath: join(ROOT, "bench/floor/wrangler.toml"),
  });
  const pgid = worker.pid as number;
  try {
    const rss = rssSampler(pgid);
    const cpuBefore = workerdCpuMs(pgid);
    const requests = () => simulator.stats().byModel[MODEL]?.requests ?? 0;
    const samples: [number, number][] = [];
    const sampler = setInterval(() => samples.push([Date.now(), requests()]), 250);
    const started = Date.now();
    const response = await fetch(
      `http://127.0.0.1:${port}/?groups=${CONCURRENCY / 8}&turns=${TURNS}&model=${encodeURIComponent(MODEL)}`,
    );
    if (!response.ok) throw new Error(`the floor run failed: ${await response.text()}`);
    clearInterval(sampler);
    const seconds = (Date.now() - started) / 1000;
    const turns = requests();
    return {
      ratio: steadyTurnsPerS(samples) / CONCURRENCY,
      endToEndRatio: TURNS / seconds,
      cpuMsPerTurn: (workerdCpuMs(pgid) - cpuBefore) / turns,
      peakRssMb: rss.stop(),
    };
  } finally {
    await stopProcessGroup(worker);
    await simulator.close();
    rmSync(state, { recursive: true, force: true });
  }
}

export async function measurePipeline(): Promise<FloorPoint> {
  return withBenchStack(async (bench) => {
    const cpuBefore = workerdCpuMs(bench.pgid);
    const point = await measureIdeal(bench, CONCURRENCY, TURNS);
    return {
      ratio: point.ratio,
      endToEndRatio: point.endToEndRatio,
      cpuMsPerTurn: (workerdCpuMs(bench.pgid) - cpuBefore) / (CONCURRENCY * TURNS),
      peakRssMb: point.peakRssMb,
    };
  });
}
