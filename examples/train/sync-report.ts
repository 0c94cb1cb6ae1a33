/**
 * Keeps an overlapped training run (`npm run train:example -- --overlap --sync hold|interrupt`)
 * as examples/train/runs/sync-{hold,interrupt}-seed-N.json and writes docs/training-sync.md from
 * the kept pair of the same seed and plan: each weight sync's stall with and without interrupt.
 * Every figure in the document comes from those files.
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { median } from "../../bench/repeats";
import { mean, type TrainingPlan } from "./report";

const ROOT = resolve(import.meta.dirname, "../..");
const RUNS = join(ROOT, "examples/train/runs");
const DOC = join(ROOT, "docs/training-sync.md");

export type SyncMode = "hold" | "interrupt";

export interface SyncRecord {
  step: number;
  /** The pause request to nothing of the run in flight, as the trainer timed it. */
  stall_ms: number;
  /** The policy server's weight load, after the stall. */
  load_ms: number;
  in_flight_in_answer: number;
  groups_running: number;
}

/** `run_syncs`, the run's row: what SQL recorded of its syncs. */
export interface RunSyncsRow {
  syncs: number;
  interrupted: number;
  stall_ms_mean: number | null;
  stall_ms_max: number | null;
  kept_tokens: number;
  discarded_tokens: number;
}

export interface SyncRun {
  sync: SyncMode;
  seed: number;
  commit: string;
  date: string;
  machine: string;
  plan: TrainingPlan;
  syncs: SyncRecord[];
  seconds_by_step: number[];
  rollout_seconds_by_step: number[];
  reward_by_step: number[];
  mismatch_by_step: number[];
  tokens_by_step: number[];
  previous_version_tokens_by_step: number[];
  previous_mismatch_by_step: number[];
  run_syncs: RunSyncsRow | null;
  seconds: number;
  load_average: { start: number; end: number; mean: number; max: number };
}

export function keepSyncRun(run: SyncRun): string {
  const name = `sync-${run.sync}-seed-${run.seed}.json`;
  writeFileSync(join(RUNS, name), `${JSON.stringify(run, null, 2)}\n`);
  return `examples/train/runs/${name}`;
}

function kept(): SyncRun[] {
  return readdirSync(RUNS)
    .filter((f) => /^sync-(hold|interrupt)-seed-\d+\.json$/.test(f))
    .map((f) => JSON.parse(readFileSync(join(RUNS, f), "utf8")) as SyncRun);
}

const ms = (x: number) => Math.round(x).toLocaleString("en");
const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);

/** Writes the document when a seed has both modes kept under one plan; says why not otherwise. */
export function writeSyncReport(latest: SyncRun): boolean {
  const runs = kept().filter(
    (r) => r.seed === latest.seed && JSON.stringify(r.plan) === JSON.stringify(latest.plan),
  );
  const hold = runs.find((r) => r.sync === "hold");
  const interrupt = runs.find((r) => r.sync === "interrupt");
  if (!hold || !interrupt) {
    console.log(
      "the seed has one sync mode kept, not both: docs/training-sync.md is left as it is",
    );
    return false;
  }
  writeFileSync(DOC, document(hold, interrupt));
  return true;
}

function document(hold: SyncRun, interrupt: SyncRun): string {
  const p = hold.plan;
  // The last step's sync has no next step generating beside it: it is listed, not summarised.
  const overlapped = (r: SyncRun) => r.syncs.filter((s) => s.step + 1 < p.steps);
  const stall = (r: SyncRun) => overlapped(r).map((s) => s.stall_ms);
  const rows = hold.syncs.map((h, i) => {
    const n = interrupt.syncs[i];
    return `| ${h.step} → ${h.step + 1} | ${ms(h.stall_ms)} | ${h.in_flight_in_answer} | ${n ? ms(n.stall_ms) : "–"} | ${n ? ms(n.load_ms) : "–"} | ${interrupt.previous_version_tokens_by_step[i] ?? "–"} |`;
  });
  const sql = (r: SyncRun) =>
    r.run_syncs
      ? `${r.run_syncs.syncs} syncs (${r.run_syncs.interrupted} interrupted), stall mean ${ms(r.run_syncs.stall_ms_mean ?? Number.NaN)} ms, max ${ms(r.run_syncs.stall_ms_max ?? Number.NaN)} ms, ${r.run_syncs.kept_tokens} tokens kept across interrupts, ${r.run_syncs.discarded_tokens} discarded`
      : "not recorded";
  const stepSeconds = (r: SyncRun) => mean(r.seconds_by_step.slice(1));
  const longestWait = (r: SyncRun) => Math.max(...r.rollout_seconds_by_step.slice(1));
  // Where the stall's time went: with one host, nothing it saves shows in the step time.
  const whereTheTimeWent = `\n\n**Where the time went.** Steps after the first took ${stepSeconds(hold).toFixed(1)} s held and ${stepSeconds(interrupt).toFixed(1)} s interrupted at the mean (whole runs ${hold.seconds.toFixed(0)} s and ${interrupt.seconds.toFixed(0)} s). Here the one policy server sets the pace, and a held stall does not idle it: it decodes on through the pause, and what it finishes is the next step's batch. So the time interrupt takes out of the stall, the trainer spends waiting for its next groups instead (the longest such wait ${longestWait(hold).toFixed(1)} s held, ${longestWait(interrupt).toFixed(1)} s interrupted). What interrupt saves is hosts' idle time, which one host decoding a deep queue does not have; on a fleet, a held sync leaves every host waiting on the longest generation of another: the benchmark's \`fleet_busy_fraction\` ([benchmarks.md](benchmarks.md)) measures that.`;
  const worst = (r: SyncRun) =>
    Math.max(...r.mismatch_by_step, ...r.previous_mismatch_by_step.filter((x) => !Number.isNaN(x)));
  return `# Weight sync in the training example: interrupt against hold

Written by \`npm run train:example -- --overlap --sync hold|interrupt\` (sync-report.ts) from
[examples/train/runs/sync-hold-seed-${hold.seed}.json](../examples/train/runs/sync-hold-seed-${hold.seed}.json) and
[sync-interrupt-seed-${interrupt.seed}.json](../examples/train/runs/sync-interrupt-seed-${interrupt.seed}.json), run on
${hold.date} and ${interrupt.date} at commits ${hold.commit} and ${interrupt.commit}.
Machine: ${interrupt.machine}. The Worker (\`wrangler dev\`), the policy server and the trainer
all ran on it.

**The runs.** The training example of [training-results.md](training-results.md), overlapped:
${p.steps} GRPO steps of ${p.groups} groups of ${p.groupSize} episodes, token-in
(\`generation: "tokens"\`), ${p.epochs} pass${p.epochs === 1 ? "" : "es"} of ${p.minibatches} minibatch${p.minibatches === 1 ? "" : "es"} an update, same seed, same warm-up; the policy server decodes ${p.maxBatch ?? 64} requests together (the learning runs' 64), each
decoding step taking at least ${p.tokenMs ?? 0} ms (a larger model's per-token latency; the learning runs' as fast as this CPU goes).
(Fewer passes, a smaller batch and slower tokens than the learning runs': an update that outlasts the next
step's rollout leaves nothing in flight at its sync, and then neither mode stalls. With the update
shorter than the rollout, as on a GPU fleet with long generations, each sync lands mid-generation.) While the trainer updates on step _k_, the
groups of step _k + 1_ already generate with version _k_; then the trainer syncs its weights to
the policy server in the middle of their generations. **Hold** pauses the run and waits until
nothing is in flight (the generations finish first); **interrupt** pauses with
\`interrupt: true\`: edgeroll aborts the run's generations in flight, keeps every token they
had streamed, and continues each cut turn from its prompt ids plus those tokens once the run
resumes at version _k + 1_. The stall is the time from the pause request to nothing of the run
in flight, timed by the trainer (\`set_policy\` … \`wait_idle\`); the weight load follows it.
The held-out groups land before each sync (they are a run of their own, played with one version).

## Stall per sync

| | hold | interrupt |
|---|---:|---:|
| syncs with the next step generating | ${overlapped(hold).length} | ${overlapped(interrupt).length} |
| stall p50 (ms) | ${ms(median(stall(hold)))} | ${ms(median(stall(interrupt)))} |
| stall max (ms) | ${ms(Math.max(...stall(hold)))} | ${ms(Math.max(...stall(interrupt)))} |
| stall total (s) | ${(sum(stall(hold)) / 1000).toFixed(1)} | ${(sum(stall(interrupt)) / 1000).toFixed(1)} |
| weight load p50 (ms) | ${ms(median(overlapped(hold).map((s) => s.load_ms)))} | ${ms(
    median(overlapped(interrupt).map((s) => s.load_ms)),
  )} |
| seconds a step (after the first) | ${stepSeconds(hold).toFixed(1)} | ${stepSeconds(interrupt).toFixed(1)} |
| longest wait for a step's groups to land, after the first (s) | ${longestWait(hold).toFixed(1)} | ${longestWait(interrupt).toFixed(1)} |
| largest mismatch, every token against the weights that sampled it | ${worst(hold).toExponential(1)} | ${worst(interrupt).toExponential(1)} |
| SQL (\`run_syncs\`) | ${sql(hold)} | ${sql(interrupt)} |

By sync (the last, after the last step, has nothing generating beside it; hold's stall, the
generations its pause answer still had in flight and waited for;
interrupt's stall, its weight load, and the tokens of the next step's batch that version _k_
had sampled before the sync, kept across it):

| Sync | Hold stall (ms) | Hold: in flight at the pause | Interrupt stall (ms) | Interrupt load (ms) | Interrupt: tokens from before the sync |
|---|---:|---:|---:|---:|---:|
${rows.join("\n")}

**Reading it.** The hold stall lasts until every generation in flight at the pause has
finished, those still queued at the host included: here, with ${p.groups * p.groupSize} episodes a
step on a host that decodes ${p.maxBatch ?? 64} at a time, ${ms(median(stall(hold)))} ms at the median; it
grows with the turns' length (with a real model's long reasoning turns, tens of seconds). The
interrupt stall is the abort and its bookkeeping, which do not. The machine's
1-minute load average: hold mean ${hold.load_average.mean.toFixed(1)} (at most ${hold.load_average.max.toFixed(1)}), interrupt mean ${interrupt.load_average.mean.toFixed(1)} (at most ${interrupt.load_average.max.toFixed(1)}); 2 cores.
The learning curves of these runs are not the result: see [training-results.md](training-results.md).${whereTheTimeWent}
`;
}

// `npx tsx examples/train/sync-report.ts`: rewrites the document from the kept runs alone.
if (import.meta.filename === process.argv[1]) {
  const newest = kept().at(-1);
  if (!newest) throw new Error("no sync run kept in examples/train/runs/");
  if (writeSyncReport(newest)) console.log("rewrote docs/training-sync.md");
}
