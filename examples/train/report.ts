/**
 * Keeps a full training run as examples/train/runs/{rl,control}-seed-N.json and writes
 * docs/training-results.md and its plot (docs/training.png) from every kept run of the same plan:
 * every figure in the document comes from those files.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";

const ROOT = resolve(import.meta.dirname, "../..");
const RUNS = join(ROOT, "examples/train/runs");
/** The final held-out figure of a run: the mean of its last evaluations (see `final`). */
const FINAL_EVALS = 2;
/** Seeds a result needs, each with its RL run and its control, before it counts as one. */
const SEEDS_WANTED = 3;

export interface TrainingPlan {
  steps: number;
  groups: number;
  groupSize: number;
  sftSteps: number;
  sftGroupSize: number;
  epochs: number;
  minibatches: number;
  lr: number;
  /** The parameters the RL step trains (train.py's `--trainable`); runs before it trained all. */
  trainable?: string;
  evalEvery: number;
  evalExamples: number;
  evalGroupSize: number;
  /** Requests the policy server decodes together (`--max-batch`; its default 64 when absent). */
  maxBatch?: number;
  /** The least time a decoding step takes on the policy server (`--token-ms`; 0 when absent). */
  tokenMs?: number;
}

export interface HeldOutEval {
  version: number;
  reward: number;
  se: number;
  success: number;
  episodes: number;
  unscored: number;
  /**
   * pass@k by k, from edgeroll's `eval_results`: present when the evaluation ran as eval groups
   * in the training run and its figures came from the view (train.py since issue 31).
   */
  pass_at_k?: Record<string, number>;
}

export interface TrainingRun {
  kind: "rl" | "control";
  seed: number;
  commit: string;
  date: string;
  machine: string;
  plan: TrainingPlan;
  reward_by_step: number[];
  success_by_step: number[];
  mismatch_by_step: number[];
  seconds_by_step: number[];
  heldout: HeldOutEval[];
  warm_up_loss: number;
  warm_up_seconds: number;
  warm_up_sha256: string;
  final_sha256: string;
  /** How many parameters the RL step trained (runs before `--trainable` did not say). */
  trained_parameters?: number;
  seconds: number;
  /**
   * The machine's 1-minute load average as the run started and ended, and its mean and largest
   * value sampled every 15 s (runs kept before the sampling have only the start and end).
   */
  load_average?: { start: number; end: number; mean?: number; max?: number };
}

export const mean = (xs: readonly number[]) =>
  xs.reduce((a, b) => a + b, 0) / Math.max(xs.length, 1);
const sd = (xs: readonly number[]) => {
  const m = mean(xs);
  return Math.sqrt(xs.reduce((a, x) => a + (x - m) ** 2, 0) / Math.max(xs.length - 1, 1));
};
const f3 = (x: number) => x.toFixed(3);
const signed = (x: number) => (x >= 0 ? "+" : "") + x.toFixed(3);
/** "a to b", or "a" where every value prints alike. */
const range = (xs: readonly number[], f = f3) => {
  const [lo, hi] = [f(Math.min(...xs)), f(Math.max(...xs))];
  return lo === hi ? lo : `${lo} to ${hi}`;
};

/** The mean held-out reward of the last evaluations, with its standard error. */
function final(run: TrainingRun): { reward: number; se: number } {
  const last = run.heldout.slice(-FINAL_EVALS);
  return {
    reward: mean(last.map((e) => e.reward)),
    se: Math.sqrt(last.reduce((a, e) => a + e.se ** 2, 0)) / last.length,
  };
}

/** The plan without its learning rate: a seed's RL run and its control share it. */
const planKey = ({ lr: _lr, ...rest }: TrainingPlan) => JSON.stringify(rest);

export function keepRun(run: TrainingRun): string {
  mkdirSync(RUNS, { recursive: true });
  const path = join(RUNS, `${run.kind}-seed-${run.seed}.json`);
  writeFileSync(path, `${JSON.stringify(run, null, 2)}\n`);
  return relative(ROOT, path);
}

/** Every kept run of `plan`, as the seeds that have both an RL run and a control. */
function pairs(plan: TrainingPlan): { seed: number; rl: TrainingRun; control: TrainingRun }[] {
  const runs = readdirSync(RUNS)
    .filter((f) => /^(rl|control)-seed-\d+\.json$/.test(f))
    .map((f) => JSON.parse(readFileSync(join(RUNS, f), "utf8")) as TrainingRun)
    .filter((run) => planKey(run.plan) === planKey(plan));
  const seeds = [...new Set(runs.map((r) => r.seed))].sort((a, b) => a - b);
  return seeds.flatMap((seed) => {
    const rl = runs.find((r) => r.seed === seed && r.kind === "rl");
    const control = runs.find((r) => r.seed === seed && r.kind === "control");
    return rl && control ? [{ seed, rl, control }] : [];
  });
}

/** Held-out questions (sums) that some training drill also asks: drills are held out, sums
 * of one digit cannot all be. */
function sharedSums(): { shared: number; total: number; drills: number } {
  const read = (file: string) =>
    readFileSync(join(ROOT, "datasets", file), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l).metadata.questions as [number, number][]);
  const train = read("mental-math.jsonl");
  const trained = new Set(train.flat().map((q) => q.join("+")));
  const heldout = read("mental-math-heldout.jsonl").flat();
  return {
    shared: heldout.filter((q) => trained.has(q.join("+"))).length,
    total: heldout.length,
    drills: train.length,
  };
}

export function writeTraining(latest: TrainingRun, python: string): void {
  const seeds = pairs(latest.plan);
  // An RL run kept before its control has nothing to compare yet: the document waits for it.
  if (seeds.length === 0) {
    console.log("no seed has both its RL run and its control yet: the document is left as it is");
    return;
  }
  const runs = seeds.flatMap((s) => [s.rl, s.control]);
  const plot = spawnSync(
    python,
    [
      join(ROOT, "examples/train/plot.py"),
      join(ROOT, "docs/training.png"),
      ...runs.map((r) => join(RUNS, `${r.kind}-seed-${r.seed}.json`)),
    ],
    { encoding: "utf8" },
  );
  if (plot.status !== 0) throw new Error(`plot.py failed:\n${plot.stderr}`);
  writeFileSync(join(ROOT, "docs/training-results.md"), document(latest.plan, seeds));
}

function document(p: TrainingPlan, seeds: ReturnType<typeof pairs>): string {
  const rl = seeds.map((s) => s.rl);
  const all = seeds.flatMap((s) => [s.rl, s.control]);
  const margins = seeds.map((s) => final(s.rl).reward - final(s.control).reward);
  const marginSe = seeds.map((s) => Math.hypot(final(s.rl).se, final(s.control).se));
  // The control's weights never move: its evaluations differ by sampling alone.
  const controlSpread = Math.sqrt(
    mean(seeds.map((s) => sd(s.control.heldout.map((e) => e.reward)) ** 2)),
  );
  const bar = 2 * controlSpread;
  const above = seeds.length > 0 && Math.min(...margins) > bar;
  const evalSe = mean(all.flatMap((r) => r.heldout.map((e) => e.se)));
  const versions = seeds[0]?.rl.heldout.map((e) => e.version) ?? [];
  // How the kept runs evaluated: as eval groups read back from eval_results, or (runs from
  // before) as groups on a run of their own, leased back.
  const fromView = all.every((r) => r.heldout.every((e) => e.pass_at_k !== undefined));
  const howPlayed = fromView
    ? `as evaluation groups of ${p.evalGroupSize} (\`kind: "eval"\`, temperature 1, as training samples) in the training run, pinned to
the version and never leased; each figure is edgeroll's \`eval_results\` row, which train.py checks against the groups:`
    : `as groups
of ${p.evalGroupSize} (temperature 1, as training samples), on a run of their own, leased back and
acked without training:`;
  const lastVersions = versions.slice(-FINAL_EVALS).join(" and ");
  const { shared, total, drills } = sharedSums();
  // One pass visits every training drill once, in order: the first pass against the last.
  const pass = Math.min(Math.ceil(drills / p.groups), Math.floor(p.steps / 2));
  const firstPass = (r: TrainingRun) => mean(r.reward_by_step.slice(0, pass));
  const lastPass = (r: TrainingRun) => mean(r.reward_by_step.slice(-pass));
  const yes = (ok: boolean) => (ok ? "yes" : "**no**");
  const seedRows = seeds
    .map(
      ({ seed, rl, control }, i) =>
        `| ${seed} | ${f3(rl.warm_up_loss)} | ${yes(rl.warm_up_sha256 === control.warm_up_sha256)} | ${f3(rl.heldout[0]?.reward ?? Number.NaN)} | ${f3(control.heldout[0]?.reward ?? Number.NaN)} | ${f3(final(rl).reward)} | ${f3(final(control).reward)} | **${signed(margins[i] ?? 0)}** ± ${f3(marginSe[i] ?? 0)} | ${yes(control.final_sha256 === control.warm_up_sha256)} | ${rl.seconds.toFixed(0)} / ${control.seconds.toFixed(0)} |`,
    )
    .join("\n");
  const curveHead = seeds.map((s) => `seed ${s.seed} RL | seed ${s.seed} control`).join(" | ");
  const curveRows = versions
    .map((v, i) => {
      const cells = seeds.flatMap(({ rl, control }) =>
        [rl, control].map(
          (r) =>
            `${f3(r.heldout[i]?.reward ?? Number.NaN)} ± ${f3(r.heldout[i]?.se ?? Number.NaN)}`,
        ),
      );
      return `| ${v} | ${cells.join(" | ")} |`;
    })
    .join("\n");
  const trainRows = seeds
    .map(
      ({ seed, rl, control }) =>
        `| ${seed} | ${f3(firstPass(rl))} → ${f3(lastPass(rl))} (${signed(lastPass(rl) - firstPass(rl))}) | ${f3(firstPass(control))} → ${f3(lastPass(control))} (${signed(lastPass(control) - firstPass(control))}) | ${Math.max(...rl.mismatch_by_step).toExponential(1)} |`,
    )
    .join("\n");
  const stepSeconds = mean(rl.flatMap((r) => r.seconds_by_step));
  const latest = [...all].sort((a, b) => (a.date < b.date ? 1 : -1))[0];
  const overSeeds =
    seeds.length > 1
      ? `on average over ${seeds.length} seeds (standard deviation ${f3(sd(margins))}, smallest ${f3(Math.min(...margins))})`
      : `for ${seeds.length} seed: **no spread over seeds yet**`;
  const few =
    seeds.length < SEEDS_WANTED
      ? ` **Only ${seeds.length} of the ${SEEDS_WANTED} seeds this result needs have both runs kept** (\`npm run train:example -- --seed N\` and \`-- --seed N --control\` add one).`
      : "";
  const verdict = above
    ? `Every seed's margin is above the control's spread: the smallest, ${f3(Math.min(...margins))}, is more than twice the standard deviation of the control's evaluations (2 × ${f3(controlSpread)} = ${f3(bar)}).`
    : `**The margin is not above the control's spread**: the smallest, ${f3(Math.min(...margins))}, is not more than twice the standard deviation of the control's evaluations (2 × ${f3(controlSpread)} = ${f3(bar)}). This plan does not show learning on held-out drills.`;
  return `# Training a real policy through edgeroll

Written by \`npm run train:example\` (report.ts) from the ${all.length} runs kept in
[examples/train/runs/](../examples/train/runs/): ${seeds.length} seed${seeds.length === 1 ? "" : "s"}, each an RL run and its
control, run on ${[...new Set(all.map((r) => r.date))].sort().join(", ")} at commit${new Set(all.map((r) => r.commit)).size > 1 ? "s" : ""} ${[...new Set(all.map((r) => r.commit))].join(", ")}.
Machine: ${latest?.machine}. Everything ran on it: the Worker under \`wrangler dev\`, the
simulator, the policy server and the trainer.

**The plan.** A GPT-2-style policy of about 0.9 M parameters, with a character-level tokenizer,
learns **mental-math** (three single-digit sums a drill, one a turn, their answers all
different). It is warmed up on ${p.sftSteps} steps of SFT rows that edgeroll exported from the
simulator's successful episodes on the ${drills} training drills (\`edgeroll export --kind sft\`, ${p.sftGroupSize} episodes a drill), then
trained by GRPO for ${p.steps} steps on edgeroll's token-exact samples: each step starts ${p.groups}
groups of ${p.groupSize} episodes of the training drills, leases them with \`include: ["tokens"]\`,
checks the logprobs it recomputes against the served ones, takes ${p.epochs} PPO-style passes of
${p.minibatches} clipped policy-gradient steps (Adam, lr ${seeds[0]?.rl.plan.lr ?? p.lr}) on ${trainedWhat(p, seeds[0]?.rl)}, pushes the weights to
the server and acks. **The control** is the same run from the same warm-up at learning rate 0.

**The held-out evaluation.** Every ${p.evalEvery} steps (policy versions ${versions.join(", ")}), the
${p.evalExamples} drills of \`datasets/mental-math-heldout.jsonl\` play through edgeroll ${howPlayed} ${p.evalExamples * p.evalGroupSize} episodes an evaluation. The split is one
fixed-seed pool of distinct drills cut in two (\`scripts/mental-math-datasets.ts\`), so no held-out
drill is a training drill or a warm-up row's, which a test checks and train.py asserts. The drills
are new; the sums mostly are not: ${shared} of the ${total} held-out questions are sums some training drill
also asks. A seed's RL run and control use the same sampling seeds.

![Held-out reward by policy version, RL against the control](training.png)

## Result

**Held-out margin over the control**, the mean held-out reward over the last ${FINAL_EVALS}
evaluations (versions ${lastVersions}) of the RL run minus the control's: **${signed(mean(margins))}**
${overSeeds}.
One evaluation's standard error (over its drills) is ${f3(evalSe)} on average; a margin's is given
beside it below. ${verdict}${few}

| Seed | Warm-up loss | Same warm-up | Held-out v0, RL | v0, control | Held-out final, RL | Final, control | Margin ± SE | Control unmoved | Seconds (RL / control) |
|---:|---:|:---:|---:|---:|---:|---:|---:|:---:|---:|
${seedRows}

"Same warm-up": the RL run's and the control's weights after the warm-up have the same SHA-256;
"control unmoved": the control's final weights are its warm-up's. The warm-up's final loss was
${range(rl.map((r) => r.warm_up_loss))} over these seeds, and the held-out reward at version 0
${range(rl.map((r) => r.heldout[0]?.reward ?? Number.NaN))}: compare the margins, not the levels.

**Held-out reward by policy version** (mean ± standard error over the drills):

| Version | ${curveHead} |
|---:|${seeds.map(() => "---:|---:").join("|")}|
${curveRows}

**Training reward** (on the training drills; the mean over the first ${pass} steps, one pass over
the ${drills} drills in order, against the last ${pass} steps') and the largest mismatch between
recomputed and served logprobs before any update (bound 1e-3):

| Seed | RL | Control | Worst mismatch (RL) |
|---:|---:|---:|---:|
${trainRows}

**Wall time.** \`Seconds\` is the whole \`npm run train:example\`; of an RL run, the warm-up took
${range(
  rl.map((r) => r.warm_up_seconds),
  (x) => x.toFixed(0),
)} s and a step ${stepSeconds.toFixed(1)} s on average (the rollout of the step's
groups, with the held-out groups beside them every ${p.evalEvery} steps, and the update). A control
whose seed's warm-up was kept (\`.cache/train-warm-up/\`) reuses it and spends no time on it. The
machine's 1-minute load average, by run: ${all
    .map((r) => `${r.kind === "rl" ? "RL" : "control"} seed ${r.seed} ${loadLine(r)}`)
    .join("; ")}
(2 cores: above 2, other work shared the CPU and the seconds are longer than this plan's own).
`;
}

/** What the plan's RL step trains, in words, with the count of parameters the run reported. */
function trainedWhat(plan: TrainingPlan, run: TrainingRun | undefined): string {
  const count = run?.trained_parameters;
  const of = count === undefined ? "" : ` (${count.toLocaleString("en-US")} parameters)`;
  if (plan.trainable === undefined || plan.trainable === "all") return `every weight${of}`;
  if (plan.trainable === "transformer.ln_f")
    return `the final layer norm alone${of}, every other weight frozen after the warm-up`;
  return `the parameters named \`${plan.trainable}\`${of}`;
}

/** A run's load average: sampled through the run, or only at its start and end. */
function loadLine(run: TrainingRun): string {
  const load = run.load_average;
  if (load === undefined) return "not recorded";
  if (load.mean === undefined || load.max === undefined)
    return `${load.start.toFixed(1)} at the start and ${load.end.toFixed(1)} at the end (not sampled between)`;
  return `mean ${load.mean.toFixed(1)}, at most ${load.max.toFixed(1)}`;
}

// `npx tsx examples/train/report.ts`: rewrites the document and the plot from the kept runs
// alone (the plan of the newest kept run), without training.
if (import.meta.filename === process.argv[1]) {
  const kept = readdirSync(RUNS)
    .filter((f) => /^(rl|control)-seed-\d+\.json$/.test(f))
    .map((f) => join(RUNS, f))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
  if (kept[0] === undefined) throw new Error("no run kept in examples/train/runs/");
  const newest = JSON.parse(readFileSync(kept[0], "utf8")) as TrainingRun;
  writeTraining(newest, join(ROOT, ".venv-train/bin/python"));
  console.log("rewrote docs/training-results.md and docs/training.png from examples/train/runs/");
}
