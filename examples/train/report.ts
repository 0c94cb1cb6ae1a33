/** Writes a full training run's TRAINING.md and its plot (docs/training.png). */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
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
  plan: { steps: number; groups: number; groupSize: number; sftSteps: number };
}

const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(xs.length, 1);

export function writeTraining(r: TrainingSummary, python: string): void {
  const results = join(ROOT, "examples/train/results.json");
  const plot = spawnSync(
    python,
    [join(ROOT, "examples/train/plot.py"), results, join(ROOT, "docs/training.png")],
    {
      encoding: "utf8",
    },
  );
  if (plot.status !== 0) throw new Error(`plot.py failed:\n${plot.stderr}`);
  const first = mean(r.reward_by_step.slice(0, 3));
  const last = mean(r.reward_by_step.slice(-3));
  const path = join(ROOT, "TRAINING.md");
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
logprobs it recomputes against the served ones, takes one clipped policy-gradient step, pushes
the weights to the server and acks.

![Reward and mismatch by step](docs/training.png)

**Reward**: the mean over the first three steps is ${first.toFixed(3)}, over the last three ${last.toFixed(3)}
(+${(last - first).toFixed(3)}). **Mismatch**: the largest mean absolute difference between recomputed and
served logprobs, before any step's update, was ${Math.max(...r.mismatch_by_step).toExponential(2)} (bound 1e-3).

| Step | Mean reward | Success | Mismatch (mean abs) | KL estimate | Sampled tokens | Seconds |
|---:|---:|---:|---:|---:|---:|---:|
${rows}

Raw figures: [examples/train/results.json](examples/train/results.json).

${NOTES_MARKER}${notes}`,
  );
}
