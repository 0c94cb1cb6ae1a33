/** Writes a full training run's docs/training-results.md and its plot (docs/training.png). */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dirname, "../..");
const NOTES_MARKER = "<!-- Notes below this line are kept when the example rewrites the file. -->";

export interface TrainingSummary {
  reward_by_step: number[];
  success_by_step: number[];
  mismatch_by_step: number[];
  kl_by_step: number[];
  tokens_by_step: number[];
  seconds_by_step: number[];
  warm_up_loss: number;
  seconds: number;
  machine: string;
  seed: number;
  plan: {
    steps: number;
    groups: number;
    groupSize: number;
    sftSteps: number;
    epochs?: number;
    minibatches?: number;
    lr?: number;
  };
}

const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(xs.length, 1);
const std = (xs: readonly number[]) => {
  const m = mean(xs);
  return Math.sqrt(xs.reduce((a, x) => a + (x - m) ** 2, 0) / Math.max(xs.length - 1, 1));
};
/** First three steps against the last three: with 16 groups a step over 48 examples, both are
 * the whole dataset once, so the margin compares the same examples before and after. */
const margin = (r: TrainingSummary) => ({
  first: mean(r.reward_by_step.slice(0, 3)),
  last: mean(r.reward_by_step.slice(-3)),
});
const RUNS = join(ROOT, "examples/train/runs");

/** Every full run is kept by seed, so docs/training-results.md can state the margin's spread over seeds. */
function seedRuns(r: TrainingSummary): TrainingSummary[] {
  mkdirSync(RUNS, { recursive: true });
  writeFileSync(join(RUNS, `seed-${r.seed}.json`), `${JSON.stringify(r, null, 2)}\n`);
  return readdirSync(RUNS)
    .filter((f) => /^seed-\d+\.json$/.test(f))
    .map((f) => JSON.parse(readFileSync(join(RUNS, f), "utf8")) as TrainingSummary)
    .filter((run) => run.plan.steps === r.plan.steps && run.plan.groups === r.plan.groups)
    .sort((a, b) => a.seed - b.seed);
}

export function writeTraining(r: TrainingSummary, python: string): void {
  const results = join(ROOT, "examples/train/results.json");
  const plot = spawnSync(
    python,
    [join(ROOT, "examples/train/plot.py"), results, join(ROOT, "docs/training.png"), RUNS],
    {
      encoding: "utf8",
    },
  );
  if (plot.status !== 0) throw new Error(`plot.py failed:\n${plot.stderr}`);
  const { first, last } = margin(r);
  const runs = seedRuns(r);
  const margins = runs.map((run) => margin(run).last - margin(run).first);
  const seedRows = runs
    .map((run) => {
      const m = margin(run);
      return `| ${run.seed} | ${m.first.toFixed(3)} | ${m.last.toFixed(3)} | ${(m.last - m.first >= 0 ? "+" : "") + (m.last - m.first).toFixed(3)} | ${Math.max(...run.mismatch_by_step).toExponential(1)} | ${run.seconds.toFixed(0)} |`;
    })
    .join("\n");
  const path = join(ROOT, "docs/training-results.md");
  const old = existsSync(path) ? readFileSync(path, "utf8") : "";
  const notes = old.includes(NOTES_MARKER)
    ? old.slice(old.indexOf(NOTES_MARKER) + NOTES_MARKER.length)
    : "\n";
  const rows = r.reward_by_step
    .map(
      (reward, step) =>
        `| ${step} | ${reward.toFixed(3)} | ${(r.success_by_step[step] ?? 0).toFixed(2)} | ${(r.mismatch_by_step[step] ?? 0).toExponential(2)} | ${(r.kl_by_step[step] ?? 0).toExponential(2)} | ${r.tokens_by_step[step]} | ${(r.seconds_by_step[step] ?? 0).toFixed(1)} |`,
    )
    .join("\n");
  writeFileSync(
    path,
    `# Training a real policy through edgeroll

Written by \`npm run train:example\` on ${new Date().toISOString().slice(0, 10)} in ${r.seconds.toFixed(0)} s (seed ${r.seed}).
Machine: ${r.machine}. Everything ran on it: the Worker under \`wrangler dev\`, the simulator, the
policy server and the trainer.

A GPT-2-style policy of about 0.9 M parameters, built from a config and initialised here, with
a character-level tokenizer, learns **mental-math** (three sums an episode, one a turn). It is
warmed up on ${r.plan.sftSteps} steps of SFT rows that edgeroll exported from episodes the
simulator played (\`edgeroll export --kind sft\`), then trained by GRPO for ${r.plan.steps} steps on
edgeroll's token-exact samples only: each step starts ${r.plan.groups} groups of ${r.plan.groupSize}
episodes against the policy server, leases them with \`include: ["tokens"]\`, checks the
logprobs it recomputes against the served ones, takes ${r.plan.epochs ?? 3} PPO-style passes of
${r.plan.minibatches ?? 2} clipped policy-gradient steps over the batch (Adam, lr ${r.plan.lr ?? 1e-4}), pushes
the weights to the server and acks.

![Reward and mismatch by step](training.png)

**Reward**: the mean over the first three steps is ${first.toFixed(3)}, over the last three ${last.toFixed(3)}
(+${(last - first).toFixed(3)}). **Mismatch**: the largest mean absolute difference between recomputed and
served logprobs, before any step's update, was ${Math.max(...r.mismatch_by_step).toExponential(2)} (bound 1e-3).

**Over seeds** (every full run of this plan kept in \`examples/train/runs/\`): the margin, last
three steps' mean reward minus the first three's, is ${mean(margins).toFixed(3)} on average over
${runs.length} seed${runs.length === 1 ? "" : "s"}${runs.length > 1 ? ` (standard deviation ${std(margins).toFixed(3)}, smallest ${Math.min(...margins).toFixed(3)})` : ""}. \`npm run train:example -- --seed N\` adds a seed.

| Seed | First three steps | Last three steps | Margin | Worst mismatch | Seconds |
|---:|---:|---:|---:|---:|---:|
${seedRows}

This run, step by step:

| Step | Mean reward | Success | Mismatch (mean abs) | KL estimate | Sampled tokens | Seconds |
|---:|---:|---:|---:|---:|---:|---:|
${rows}

Raw figures: [examples/train/results.json](../examples/train/results.json).

${NOTES_MARKER}${notes}`,
  );
}
