/**
 * Part 2 and its floor, like for like: the latency-bound ideal (bench/ideal.ts) at each C, for
 * the pipeline and for the floor Worker (bench/floor-point.ts), each in a fresh process of its
 * own that plays the same points in the same order, round after round, the two alternating
 * which goes first. The pipeline runs with MAX_INFLIGHT_GENERATIONS above the largest C, so its
 * limiter never queues, as the floor, which has none, never does. A round pairs the two: the
 * pipeline's peak resident memory over the floor's, and its p99 turn overhead beside the floor's.
 */
import { type FloorStack, measureFloorPoint, rssNowMb, withFloorStack } from "./floor-point";
import { type IdealPoint, measureIdeal } from "./ideal";
import { BENCH_MAX_INFLIGHT, withBenchStack } from "./stack";

export type Side = "pipeline" | "floor";

export interface ProcessRun {
  side: Side;
  round: number;
  /** workerd's resident memory once started, before the first point. */
  idleRssMb: number;
  /** The largest resident set over the process's points. */
  peakRssMb: number;
  points: IdealPoint[];
}

export interface SweepResult {
  concurrencies: number[];
  turns: number;
  rounds: number;
  maxInflightGenerations: number;
  /** Every process, in the order run. */
  processes: ProcessRun[];
}

async function pipelineProcess(concurrencies: readonly number[], turns: number) {
  return withBenchStack(async (bench) => {
    const idleRssMb = rssNowMb(bench.pgid);
    const points: IdealPoint[] = [];
    for (const c of concurrencies) points.push(await measureIdeal(bench, c, turns));
    return { idleRssMb, points };
  });
}

async function floorProcess(concurrencies: readonly number[], turns: number) {
  return withFloorStack(async (floor: FloorStack) => {
    const idleRssMb = rssNowMb(floor.pgid);
    const points: IdealPoint[] = [];
    for (const c of concurrencies) points.push(await measureFloorPoint(floor, c, turns));
    return { idleRssMb, points };
  });
}

export async function measureSweep(
  options: { concurrencies: number[]; turns: number; rounds: number },
  say: (line: string) => void = () => {},
): Promise<SweepResult> {
  if (Math.max(...options.concurrencies) > BENCH_MAX_INFLIGHT)
    throw new Error("the in-flight cap would bind: the floor has none to compare with");
  const processes: ProcessRun[] = [];
  for (let round = 0; round < options.rounds; round++) {
    const order: Side[] = round % 2 === 0 ? ["floor", "pipeline"] : ["pipeline", "floor"];
    for (const side of order) {
      const run =
        side === "pipeline"
          ? await pipelineProcess(options.concurrencies, options.turns)
          : await floorProcess(options.concurrencies, options.turns);
      const peakRssMb = Math.max(...run.points.map((p) => p.peakRssMb));
      processes.push({ side, round, peakRssMb, ...run });
      for (const p of run.points)
        say(
          `${side} round ${round + 1}, C=${p.concurrency}: achieved/ideal ${p.ratio.toFixed(2)}, overhead p50 ${p.overheadMsP50} ms, p99 ${p.overheadMsP99} ms, RSS ${p.peakRssMb.toFixed(0)} MB, ${p.cpuMsPerTurn.toFixed(2)} ms CPU/turn`,
        );
    }
  }
  return {
    concurrencies: options.concurrencies,
    turns: options.turns,
    rounds: options.rounds,
    maxInflightGenerations: BENCH_MAX_INFLIGHT,
    processes,
  };
}

/** Each round's point at C for one side, in round order. */
export function pointsAt(sweep: SweepResult, side: Side, c: number): IdealPoint[] {
  return sweep.processes
    .filter((p) => p.side === side)
    .map((p) => p.points.find((q) => q.concurrency === c))
    .filter((p): p is IdealPoint => p !== undefined);
}

/** Per round, the pipeline's process-peak RSS over the floor's. */
export function rssOverFloor(sweep: SweepResult): number[] {
  const out: number[] = [];
  for (let round = 0; round < sweep.rounds; round++) {
    const of = (side: Side) =>
      sweep.processes.find((p) => p.side === side && p.round === round)?.peakRssMb;
    const pipeline = of("pipeline");
    const floor = of("floor");
    if (pipeline !== undefined && floor !== undefined) out.push(pipeline - floor);
  }
  return out;
}
