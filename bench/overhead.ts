/**
 * Part 1: what the pipeline costs on top of inference. The same guess-number groups, seeds and
 * simulator (latency 0) run through the SDK's loop in this process and through the full
 * pipeline; the ratio of their turns per second is the pipeline's efficiency when inference is
 * free, and workerd's CPU time per turn is what each turn costs the platform.
 */
import pMap from "p-map";
import { guessRequest } from "../reliability/harness";
import type { StartGroupInput } from "../src/client/edgeroll-client";
import { inProcessLoop } from "./in-process";
import { workerdCpuMs } from "./proc";
import { type BenchStack, median, waitForRun } from "./stack";

export interface OverheadResult {
  /** Whether completions were streamed, in the pipeline (INFERENCE_STREAM) and the reference. */
  stream: boolean;
  groups: number;
  groupSize: number;
  repeats: number;
  inProcessTurnsPerS: number;
  pipelineTurnsPerS: number;
  overheadRatio: number;
  cpuMsPerTurn: number;
  runs: { inProcessTurnsPerS: number; pipelineTurnsPerS: number; cpuMsPerTurn: number }[];
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

export async function measureOverhead(
  bench: BenchStack,
  options: { groups: number; repeats: number; stream: boolean },
): Promise<OverheadResult> {
  const runs: OverheadResult["runs"] = [];
  for (let r = 0; r < options.repeats; r++) {
    const runId = `bench-overhead-${r}`;
    const batch = requests(runId, options.groups);

    const reference = await inProcessLoop(bench.stack.inferenceUrl, batch, options.stream);

    const cpuBefore = workerdCpuMs(bench.pgid);
    const requestsBefore = bench.simRequests("sim");
    const started = Date.now();
    await pMap(batch, (request) => bench.client.startGroup(request), { concurrency: 16 });
    await waitForRun(bench.client, runId, options.groups);
    const seconds = (Date.now() - started) / 1000;
    const turns = bench.simRequests("sim") - requestsBefore;
    if (turns !== reference.turns) {
      // Same seeds, same environment: the two must play the same games.
      throw new Error(`pipeline played ${turns} turns, the in-process loop ${reference.turns}`);
    }
    runs.push({
      inProcessTurnsPerS: reference.turns / reference.seconds,
      pipelineTurnsPerS: turns / seconds,
      cpuMsPerTurn: (workerdCpuMs(bench.pgid) - cpuBefore) / turns,
    });
  }
  const inProcess = median(runs.map((r) => r.inProcessTurnsPerS));
  const pipeline = median(runs.map((r) => r.pipelineTurnsPerS));
  return {
    stream: options.stream,
    groups: options.groups,
    groupSize: SIZE,
    repeats: options.repeats,
    inProcessTurnsPerS: inProcess,
    pipelineTurnsPerS: pipeline,
    overheadRatio: median(runs.map((r) => r.pipelineTurnsPerS / r.inProcessTurnsPerS)),
    cpuMsPerTurn: median(runs.map((r) => r.cpuMsPerTurn)),
    runs,
  };
}
