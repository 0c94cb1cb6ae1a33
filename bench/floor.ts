/**
 * `npm run bench:floor`: how close the pipeline runs to the platform at C = 1,024. Alternates,
 * each in a fresh process, the pipeline's C = 1,024 ideal-ratio run (bench/ideal.ts) and
 * bench/floor/, a Worker that makes only the platform calls of an edgeroll turn (a streamed
 * fetch, a step on an RpcTarget session, the same statements in shared write turns) and none
 * of edgeroll's own work. Same simulator, 1 s per generation, same steady-state window.
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

const ROUNDS = Number(process.argv[2] ?? "2");
const CONCURRENCY = 1024;
const TURNS = 12;
const MODEL = "sim+latency:1000";
const ROOT = resolve(import.meta.dirname, "..");

interface Point {
  ratio: number;
  endToEndRatio: number;
  cpuMsPerTurn: number;
  peakRssMb: number;
}

async function measureFloor(): Promise<Point> {
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

async function measurePipeline(): Promise<Point> {
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

const rows: Record<string, string | number>[] = [];
const show = (what: string, round: number, p: Point) => {
  rows.push({
    what,
    round,
    "achieved / ideal": +p.ratio.toFixed(2),
    "end to end": +p.endToEndRatio.toFixed(2),
    "CPU ms / turn": +p.cpuMsPerTurn.toFixed(2),
    "peak RSS MB": Math.round(p.peakRssMb),
  });
  console.log(JSON.stringify(rows.at(-1)));
};
for (let round = 1; round <= ROUNDS; round++) {
  show("floor", round, await measureFloor());
  show("pipeline", round, await measurePipeline());
}
console.table(rows);
