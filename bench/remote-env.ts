/**
 * Part 6: what a remote environment costs a turn. The same guess-number groups (same seeds, so
 * the same transcripts) run against the built-in environment and against its Python twin served
 * over HTTP by `python3 -m edgeroll_env serve` (registered by REMOTE_ENVS), in alternating order
 * on one stack. Workerd CPU per turn is what the step call over HTTP costs the platform (the
 * Python process's own CPU is not counted: it is the environment's), and a turn's latency is
 * an episode's wall time over its turns, with the simulator answering at once.
 */
import type { StartGroupInput } from "../src/client/edgeroll-client";
import { servePythonEnvironment } from "../test/setup/python-env-server";
import { workerdCpuMs } from "./proc";
import { median, over, type Repeated } from "./repeats";
import { type BenchStack, playGroups } from "./stack";

export const REMOTE_NAME = "guess-number-py";

export interface RemoteStepResult {
  groups: number;
  repeats: number;
  builtInCpuMsPerTurn: Repeated;
  remoteCpuMsPerTurn: Repeated;
  /** Remote over built-in, workerd CPU per turn. */
  cpuRatio: Repeated;
  builtInTurnMs: Repeated;
  remoteTurnMs: Repeated;
  runs: { builtInCpu: number; remoteCpu: number; builtInTurnMs: number; remoteTurnMs: number }[];
}

/** The Python guess-number on a free port. */
export function startPythonGuessNumber() {
  return servePythonEnvironment("python/edgeroll_env/starters/guess_number.py", REMOTE_NAME);
}

function requests(runId: string, env: string, groups: number): StartGroupInput[] {
  return Array.from({ length: groups }, (_, i) => ({
    env,
    example: {
      id: `remote-${i}`,
      input: "Find the number.",
      metadata: { secret: 1 + ((i * 37) % 100) },
    },
    group_size: 8,
    run_id: runId,
    sampling: { model: "sim", temperature: 1, seed: 9000 + i, max_completion_tokens: 64 },
  }));
}

async function measure(bench: BenchStack, runId: string, env: string, groups: number) {
  const cpuBefore = workerdCpuMs(bench.pgid);
  const turnsBefore = bench.simRequests("sim");
  const batch = requests(runId, env, groups);
  await playGroups(bench.client, batch);
  const turns = bench.simRequests("sim") - turnsBefore;
  const page = await bench.client.listEpisodes({ run_id: runId, limit: 500 });
  const perTurn = page.episodes
    .filter((e) => e.turns > 0)
    .map((e) => (e.latency_ms ?? 0) / e.turns);
  return { cpu: (workerdCpuMs(bench.pgid) - cpuBefore) / turns, turnMs: median(perTurn) };
}

export async function measureRemoteStep(
  bench: BenchStack,
  options: { groups: number; repeats: number },
): Promise<RemoteStepResult> {
  const runs: RemoteStepResult["runs"] = [];
  for (let r = 0; r < options.repeats; r++) {
    const builtIn = () => measure(bench, `bench-step-builtin-${r}`, "guess-number", options.groups);
    const remote = () => measure(bench, `bench-step-remote-${r}`, REMOTE_NAME, options.groups);
    // Alternate which goes first, so warm-up and drift fall on both.
    let b: Awaited<ReturnType<typeof measure>>;
    let rm: Awaited<ReturnType<typeof measure>>;
    if (r % 2 === 0) {
      b = await builtIn();
      rm = await remote();
    } else {
      rm = await remote();
      b = await builtIn();
    }
    runs.push({
      builtInCpu: b.cpu,
      remoteCpu: rm.cpu,
      builtInTurnMs: b.turnMs,
      remoteTurnMs: rm.turnMs,
    });
  }
  return {
    groups: options.groups,
    repeats: options.repeats,
    builtInCpuMsPerTurn: over(runs, (r) => r.builtInCpu),
    remoteCpuMsPerTurn: over(runs, (r) => r.remoteCpu),
    cpuRatio: over(runs, (r) => r.remoteCpu / r.builtInCpu),
    builtInTurnMs: over(runs, (r) => r.builtInTurnMs),
    remoteTurnMs: over(runs, (r) => r.remoteTurnMs),
    runs,
  };
}
