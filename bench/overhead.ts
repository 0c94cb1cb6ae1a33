/**
 * Part 1: what the pipeline costs on top of inference. The same guess-number groups, seeds and
 * simulator (latency 0) run through the SDK's loop in this process and through the full
 * pipeline; the ratio of their turns per second is the pipeline's efficiency when inference is
 * free, and workerd's CPU time per turn is what each turn costs the platform.
 *
 * Both sides are warmed up first (rounds run and not counted: the reference's JIT in this Node
 * process, the Worker's in workerd), then each repeat runs both, in alternating order, so that
 * what is left of warm-up and drift falls on both alike. The figures are medians over the repeats,
 * each repeat kept.
 */
import { guessRequest } from "../reliability/harness";
import type { StartGroupInput } from "../src/client/edgeroll-client";
import { inProcessLoop } from "./in-process";
import { workerdCpuMs } from "./proc";
import { alternated, over, type Repeated } from "./repeats";
import { type BenchStack, playGroups } from "./stack";

export interface OverheadRun {
  /** Which side ran first in this repeat. */
  first: "in-process" | "pipeline";
  inProcessTurnsPerS: number;
  pipelineTurnsPerS: number;
  ratio: number;
  cpuMsPerTurn: number;
}

export interface OverheadResult {
  /** Whether completions were streamed, in the pipeline (INFERENCE_STREAM) and the reference. */
  stream: boolean;
  groups: number;
  groupSize: number;
  repeats: number;
  /** Rounds of both sides run before the repeats and not counted. */
  warmUps: number;
  inProcessTurnsPerS: Repeated;
  pipelineTurnsPerS: Repeated;
  overheadRatio: Repeated;
  cpuMsPerTurn: Repeated;
  runs: OverheadRun[];
  /** The warm-up rounds, shown to say how far each side warmed; no figure uses them. */
  warmUpRuns: OverheadRun[];
}

const SIZE = 8;

function requests(runId: string, groups: number): StartGroupInput[] {
  return Array.from({ length: groups }, (_, i) =>
    guessRequest(runId, i, "sim", {
      group_size: SIZE,
      sampling: { model: "sim", temperature: 1, seed: 7000 + i, max_completion_tokens: 64 },
    }),
  );
}

async function pipeline(bench: BenchStack, batch: StartGroupInput[]) {
  const cpuBefore = workerdCpuMs(bench.pgid);
  const requestsBefore = bench.simRequests("sim");
  const started = performance.now();
  await playGroups(bench.client, batch);
  const seconds = (performance.now() - started) / 1000;
  const turns = bench.simRequests("sim") - requestsBefore;
  return { turns, seconds, cpuMs: workerdCpuMs(bench.pgid) - cpuBefore };
}

/** One round of both sides on the same groups, in the order repeat `r` says. */
async function round(
  bench: BenchStack,
  runId: string,
  r: number,
  options: { groups: number; stream: boolean },
): Promise<OverheadRun> {
  const batch = requests(runId, options.groups);
  const both = await alternated(
    r,
    () => inProcessLoop(bench.stack.inferenceUrl, batch, options.stream),
    () => pipeline(bench, batch),
  );
  const reference = both.a;
  const measured = both.b;
  if (measured.turns !== reference.turns) {
    // Same seeds, same environment: the two must play the same games.
    throw new Error(
      `pipeline played ${measured.turns} turns, the in-process loop ${reference.turns}`,
    );
  }
  const inProcessTurnsPerS = reference.turns / reference.seconds;
  const pipelineTurnsPerS = measured.turns / measured.seconds;
  return {
    first: both.first === "a" ? "in-process" : "pipeline",
    inProcessTurnsPerS,
    pipelineTurnsPerS,
    ratio: pipelineTurnsPerS / inProcessTurnsPerS,
    cpuMsPerTurn: measured.cpuMs / measured.turns,
  };
}

export async function measureOverhead(
  bench: BenchStack,
  options: { groups: number; repeats: number; warmUps: number; stream: boolean },
): Promise<OverheadResult> {
  const tag = options.stream ? "s" : "u";
  const warmUpRuns: OverheadRun[] = [];
  for (let w = 0; w < options.warmUps; w++)
    warmUpRuns.push(await round(bench, `bench-overhead-${tag}-warm-${w}`, w, options));
  const runs: OverheadRun[] = [];
  for (let r = 0; r < options.repeats; r++)
    runs.push(await round(bench, `bench-overhead-${tag}-${r}`, r, options));
  return {
    stream: options.stream,
    groups: options.groups,
    groupSize: SIZE,
    repeats: options.repeats,
    warmUps: options.warmUps,
    inProcessTurnsPerS: over(runs, (r) => r.inProcessTurnsPerS),
    pipelineTurnsPerS: over(runs, (r) => r.pipelineTurnsPerS),
    overheadRatio: over(runs, (r) => r.ratio),
    cpuMsPerTurn: over(runs, (r) => r.cpuMsPerTurn),
    runs,
    warmUpRuns,
  };
}
