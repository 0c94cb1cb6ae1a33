/**
 * `signal_share`: the share of example-epochs that yield a group with reward variance (what GRPO
 * learns from), produced server side by a run's producer without and with dynamic sampling, on
 * the simulator's exact-answer at a temperature where about half the groups land uniform. The
 * two runs alternate within each repeat; the extra generation dynamic sampling costs is the ratio
 * of episodes it generated to the plain run's, measured in the same repeat.
 */
import type { ProducerView } from "../src/producer/producer-view";
import { alternated, over, type Repeated } from "./repeats";
import { type BenchStack, withBenchStack } from "./stack";

export interface SignalSharePlan {
  examples: number;
  groupSize: number;
  /** exact-answer slips with probability 0.15 × temperature (src/sim/policies.ts). */
  temperature: number;
  maxResamples: number;
  repeats: number;
}

export interface SignalShareResult {
  plan: SignalSharePlan;
  /** Share of examples with signal, without and with dynamic sampling. */
  plain: Repeated;
  dynamic: Repeated;
  /** Share of the plain run's groups that landed uniform (the temperature's aim: about half). */
  plainUniformShare: Repeated;
  /** Episodes generated with dynamic sampling over those generated without. */
  generationRatio: Repeated;
}

const DATASET = "bench-signal-share";

/** Sums and products of two small numbers: exact-answer scores the reply against `output`. */
function questions(n: number): string {
  return Array.from({ length: n }, (_, i) => {
    const a = 3 + ((i * 7) % 40);
    const b = 2 + ((i * 11) % 30);
    const row =
      i % 2 === 0
        ? { id: `s-${i}`, input: `What is ${a} + ${b}?`, output: String(a + b) }
        : { id: `s-${i}`, input: `What is ${a} * ${b}?`, output: String(a * b) };
    return JSON.stringify(row);
  }).join("\n");
}

async function call<T>(
  bench: BenchStack,
  method: string,
  path: string,
  body?: string,
  type?: string,
) {
  const response = await fetch(new URL(path, bench.stack.apiUrl), {
    method,
    headers: {
      authorization: `Bearer ${bench.stack.tokens.admin}`,
      ...(type === undefined ? {} : { "content-type": type }),
    },
    ...(body === undefined ? {} : { body }),
  });
  if (!response.ok)
    throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

interface Produced {
  share: number;
  uniformShare: number;
  episodes: number;
}

/** One run produced to the end; its share of examples with signal and what it generated. */
async function produce(
  bench: BenchStack,
  run: string,
  plan: SignalSharePlan,
  dynamic: boolean,
): Promise<Produced> {
  const request = {
    env: "exact-answer",
    dataset: DATASET,
    group_size: plan.groupSize,
    max_in_flight: 32,
    // No seed: each group samples on its own (one seed would give every example the same luck).
    sampling: { model: "sim", temperature: plan.temperature, max_completion_tokens: 32 },
    ...(dynamic ? { dynamic_sampling: { max_resamples: plan.maxResamples } } : {}),
  };
  await call(
    bench,
    "POST",
    `/v1/runs/${run}/producer`,
    JSON.stringify(request),
    "application/json",
  );
  const deadline = Date.now() + 600_000;
  for (;;) {
    const view = await call<ProducerView>(bench, "GET", `/v1/runs/${run}/producer`);
    if (view.state !== "running") {
      if (view.state !== "done") throw new Error(`${run}: ${view.state}, ${view.reason}`);
      const landed = view.groups_landed;
      return {
        share: (view.epochs[0]?.examples_with_signal ?? 0) / view.examples,
        uniformShare: landed === 0 ? Number.NaN : view.groups_uniform / landed,
        episodes: view.groups_started * plan.groupSize,
      };
    }
    if (Date.now() > deadline) throw new Error(`${run} did not finish in 10 minutes`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

export function measureSignalShare(
  plan: SignalSharePlan,
  say: (line: string) => void,
): Promise<SignalShareResult> {
  return withBenchStack(async (bench) => {
    await call(
      bench,
      "POST",
      `/v1/datasets/${DATASET}`,
      questions(plan.examples),
      "application/x-ndjson",
    );
    const runs: { plain: Produced; dynamic: Produced }[] = [];
    for (let r = 0; r < plan.repeats; r++) {
      const { a: plain, b: dynamic } = await alternated(
        r,
        () => produce(bench, `signal-plain-${r}`, plan, false),
        () => produce(bench, `signal-dynamic-${r}`, plan, true),
      );
      say(
        `signal share, repeat ${r + 1}: ${plain.share.toFixed(3)} plain (${(plain.uniformShare * 100).toFixed(0)} % of groups uniform), ${dynamic.share.toFixed(3)} dynamic, ${(dynamic.episodes / plain.episodes).toFixed(2)}x the episodes`,
      );
      runs.push({ plain, dynamic });
    }
    return {
      plan,
      plain: over(runs, (r) => r.plain.share),
      dynamic: over(runs, (r) => r.dynamic.share),
      plainUniformShare: over(runs, (r) => r.plain.uniformShare),
      generationRatio: over(runs, (r) => r.dynamic.episodes / r.plain.episodes),
    };
  });
}
