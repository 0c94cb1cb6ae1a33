/**
 * `npm run train:example [-- --quick] [-- --seed N] [-- --control] [-- --steps N] [-- --epochs N]
 * [-- --minibatches N] [-- --eval-every N] [-- --max-batch N] [-- --token-ms MS]
 * [-- --overlap [--sync interrupt|hold]]`:
 * a real policy learns through edgeroll, end to end, on this CPU; `--control` is the same run at
 * learning rate 0; `--overlap` trains while the next step generates and syncs weights
 * mid-generation (docs/training.md); `--max-batch` is how many requests the policy server decodes
 * together, `--token-ms` the least time it takes a decoding step (a larger model's latency).
 *
 * 1. Python: a virtual environment under the project (.venv-train/) with torch, transformers and
 *    edgeroll's own package (python/, editable: edgeroll_client, which train.py imports).
 * 2. Warm-up data: the simulator plays mental-math through a local edgeroll, and
 *    `edgeroll export --kind sft` writes the successful episodes as SFT rows.
 * 3. A tiny GPT-2-style policy (built here, ~0.9 M parameters) is served by an OpenAI-compatible
 *    server in vLLM's wire format, and a second local edgeroll rolls out against it.
 * 4. train.py warms the policy up on the SFT rows, then runs GRPO on edgeroll's token-exact
 *    samples, pushing new weights to the server each step, and plays the held-out drills
 *    (datasets/mental-math-heldout.jsonl) every few steps.
 *
 * A full run keeps its figures as examples/train/runs/{rl,control}-seed-N.json and rewrites
 * docs/training-results.md and docs/training.png from every kept run; `--quick` (CI) is the
 * warm-up and two RL steps, and fails unless the mismatch stays under its bound.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir, totalmem } from "node:os";
import { join, resolve } from "node:path";
import pMap from "p-map";
import { type LocalStack, startLocalStack, stopProcessGroup } from "../../src/cli/local-stack";
import { freePort } from "../../src/cli/ports";
import { runSql } from "../../src/cli/sql";
import { EdgerollClient } from "../../src/client/edgeroll-client";
import { keepRun, type TrainingPlan, writeTraining } from "./report";
import { keepSyncRun, type RunSyncsRow, writeSyncReport } from "./sync-report";

const ROOT = resolve(import.meta.dirname, "../..");
const HERE = resolve(import.meta.dirname);
const VENV = join(ROOT, ".venv-train");
const PYTHON = join(VENV, "bin", "python");
/** Mean absolute difference, recomputed against served logprobs, allowed before an update. */
export const MISMATCH_BOUND = 1e-3;

const argv = process.argv.slice(2);
const flag = (name: string) => argv.includes(`--${name}`);
const option = (name: string, fallback: number) => {
  const at = argv.indexOf(`--${name}`);
  return at === -1 ? fallback : Number(argv[at + 1]);
};
const quick = flag("quick");
const control = flag("control");
/** Overlapped steps, synced by interrupting (`--sync interrupt`) or holding (`--sync hold`). */
const overlap = flag("overlap");
const sync = (() => {
  const at = argv.indexOf("--sync");
  const value = at === -1 ? "interrupt" : argv[at + 1];
  if (value !== "interrupt" && value !== "hold")
    throw new Error(`--sync takes interrupt or hold, not ${value}`);
  return value;
})();
const seed = option("seed", 1);
/**
 * What the RL step trains: the final layer norm alone (docs/training.md says why: on this model
 * every full-parameter plan probed either collapsed or stayed within noise).
 */
const FINAL_NORM = "transformer.ln_f";
const plan: TrainingPlan = quick
  ? {
      steps: 2,
      groups: 4,
      groupSize: 4,
      sftSteps: 40,
      sftGroupSize: 2,
      epochs: 1,
      minibatches: 1,
      lr: control ? 0 : 1e-2,
      trainable: FINAL_NORM,
      evalEvery: 2,
      evalExamples: 8,
      evalGroupSize: 2,
    }
  : {
      steps: option("steps", 16),
      groups: 16,
      groupSize: 8,
      sftSteps: 500,
      sftGroupSize: 4,
      epochs: option("epochs", 3),
      minibatches: option("minibatches", 2),
      lr: control ? 0 : option("lr", 1e-2),
      trainable: FINAL_NORM,
      evalEvery: option("eval-every", 4),
      evalExamples: 64,
      evalGroupSize: 4,
      ...(argv.includes("--max-batch") ? { maxBatch: option("max-batch", 64) } : {}),
      ...(argv.includes("--token-ms") ? { tokenMs: option("token-ms", 0) } : {}),
    };

const started = Date.now();
/**
 * The machine's 1-minute load average as the run starts, and every 15 s after (2 cores: above 2,
 * other work shared the CPU). Its start and end alone can miss a busy middle.
 */
const loadAtStart = loadavg()[0] ?? 0;
const loadSamples = [loadAtStart];
setInterval(() => loadSamples.push(loadavg()[0] ?? 0), 15_000).unref();
/** The code the run ran, read before it starts (a run takes minutes; the tree may move on). */
const commit = spawnSync("git", ["describe", "--always", "--dirty"], {
  cwd: ROOT,
  encoding: "utf8",
}).stdout.trim();
const say = (line: string) =>
  console.log(`[train ${((Date.now() - started) / 1000).toFixed(0)}s] ${line}`);

function run(command: string, args: string[], options: { env?: NodeJS.ProcessEnv } = {}) {
  const result = spawnSync(command, args, { cwd: ROOT, encoding: "utf8", ...options });
  if (result.status !== 0)
    throw new Error(`${command} ${args.join(" ")} failed:\n${result.stdout}\n${result.stderr}`);
  return result.stdout;
}

/**
 * The virtual environment, made once and refreshed when the requirements or the Python
 * package's metadata change. The package is installed editable, so its code is always the
 * checkout's.
 */
function ensurePython(): void {
  const inputs = [join(HERE, "requirements.txt"), join(ROOT, "python/pyproject.toml")];
  const stamp = join(VENV, ".requirements-sha256");
  const hash = createHash("sha256");
  for (const file of inputs) hash.update(readFileSync(file));
  const digest = hash.digest("hex");
  if (existsSync(stamp) && readFileSync(stamp, "utf8") === digest) return;
  say("installing torch, transformers and edgeroll's Python package into .venv-train/ (once)");
  if (!existsSync(PYTHON)) run("python3", ["-m", "venv", VENV]);
  const install = (...args: string[]) =>
    run(PYTHON, ["-m", "pip", "install", "--retries", "0", "-q", ...args]);
  install("-r", join(HERE, "requirements.txt"));
  install("-e", join(ROOT, "python"));
  writeFileSync(stamp, digest);
}

/** The simulator plays mental-math; edgeroll's SFT export keeps the successful episodes. */
async function warmUpRows(state: string, out: string): Promise<number> {
  const stack = await startLocalStack({ persistTo: state });
  try {
    const client = new EdgerollClient({ baseUrl: stack.apiUrl, token: stack.tokens.admin });
    const dataset = readFileSync(join(ROOT, "datasets/mental-math.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    await pMap(
      dataset,
      async (example) => {
        const { group_id } = await client.startGroup({
          env: "mental-math",
          example,
          group_size: plan.sftGroupSize,
          run_id: "train-warm-up",
          sampling: { model: "sim", temperature: 1, seed: seed * 1000 + dataset.indexOf(example) },
        });
        await client.waitForGroup(group_id, { intervalMs: 200 });
      },
      { concurrency: 16 },
    );
    run(
      process.execPath,
      [
        join(ROOT, "bin/edgeroll.mjs"),
        "export",
        "--url",
        stack.apiUrl,
        "--run",
        "train-warm-up",
      ].concat(["--kind", "sft", "--out", out]),
      { env: { ...process.env, EDGEROLL_TOKEN: stack.tokens.admin } },
    );
    return readFileSync(out, "utf8").trim().split("\n").length;
  } finally {
    await stack.stop();
  }
}

async function startPolicyServer(
  checkpoint: string,
): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const child = spawn(
    PYTHON,
    [join(HERE, "policy_server.py"), "--checkpoint", checkpoint, "--port", String(port)].concat(
      plan.maxBatch === undefined ? [] : ["--max-batch", String(plan.maxBatch)],
      plan.tokenMs === undefined ? [] : ["--token-ms", String(plan.tokenMs)],
    ),
    {
      cwd: HERE,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let output = "";
  for (const stream of [child.stdout, child.stderr]) stream?.on("data", (c) => (output += c));
  const url = `http://127.0.0.1:${port}`;
  for (const until = Date.now() + 60_000; Date.now() < until; ) {
    if (child.exitCode !== null) throw new Error(`the policy server exited:\n${output}`);
    try {
      if ((await fetch(`${url}/health`)).ok) return { url, child };
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`the policy server did not come up:\n${output}`);
}

/** The machine as detected: the CPUs and memory Node sees, the accelerators torch sees. */
function machine(accelerators: readonly string[]): string {
  const cpu = cpus();
  const gpus = accelerators.length === 0 ? "no GPU seen by torch" : accelerators.join(", ");
  return `${cpu.length} × ${cpu[0]?.model ?? "unknown CPU"}, ${Math.round(totalmem() / 2 ** 30)} GB RAM, ${gpus}`;
}

const work = mkdtempSync(join(tmpdir(), "edgeroll-train-"));
let policy: { url: string; child: ChildProcess } | null = null;
let stack: LocalStack | null = null;
let trainer: ChildProcess | null = null;
async function stopAll(): Promise<void> {
  if (trainer && trainer.exitCode === null) trainer.kill("SIGTERM");
  if (stack) await stack.stop();
  if (policy) await stopProcessGroup(policy.child);
  stack = null;
  policy = null;
  rmSync(work, { recursive: true, force: true });
}
// Ctrl-C stops the trainer, the policy server and the Worker too.
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    say(`${signal}: stopping the trainer, the policy server and the Worker`);
    void stopAll().then(() => process.exit(130));
  });
}
try {
  ensurePython();
  const sft = join(work, "sft.jsonl");
  say(`warm-up data: the simulator plays mental-math (${plan.sftGroupSize} episodes an example)`);
  say(`edgeroll export --kind sft: ${await warmUpRows(join(work, "state-sim"), sft)} SFT rows`);
  const checkpoint = join(work, "checkpoint");
  run(PYTHON, [join(HERE, "train.py"), "init", "--checkpoint", checkpoint, "--seed", String(seed)]);
  policy = await startPolicyServer(checkpoint);
  stack = await startLocalStack({
    persistTo: join(work, "state-policy"),
    inferenceUrl: `${policy.url}/v1`,
  });
  say(`policy server ${policy.url}, edgeroll ${stack.apiUrl}`);
  const results = join(work, "results.json");
  const args = [join(HERE, "train.py"), "train", "--checkpoint", checkpoint, "--url", stack.apiUrl]
    .concat(["--policy-admin", policy.url, "--sft", sft, "--out", results, "--seed", String(seed)])
    .concat(["--steps", String(plan.steps), "--groups", String(plan.groups)])
    .concat(["--group-size", String(plan.groupSize), "--sft-steps", String(plan.sftSteps)])
    .concat(["--epochs", String(plan.epochs), "--minibatches", String(plan.minibatches)])
    .concat(["--lr", String(plan.lr), "--trainable", plan.trainable ?? "all"])
    .concat(["--mismatch-bound", String(MISMATCH_BOUND)])
    .concat(["--eval-every", String(plan.evalEvery), "--eval-examples", String(plan.evalExamples)])
    .concat(["--eval-group-size", String(plan.evalGroupSize)])
    .concat(overlap ? ["--overlap", "--sync", sync] : [])
    // A full run keeps its warm-up, so the seed's control (or RL run) starts from the same weights.
    .concat(quick ? [] : ["--warm-up-cache", join(ROOT, ".cache/train-warm-up")]);
  trainer = spawn(PYTHON, args, {
    cwd: HERE,
    env: { ...process.env, EDGEROLL_TOKEN: stack.tokens.admin, PYTHONUNBUFFERED: "1" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let errors = "";
  trainer.stdout?.on("data", (chunk: Buffer) => {
    for (const line of chunk.toString().split("\n")) if (line.trim()) say(line);
  });
  trainer.stderr?.on("data", (chunk: Buffer) => {
    const text = chunk.toString();
    // transformers' notes about the config are not errors; anything else is shown.
    const shown = text.split("\n").filter((l) => l.trim() && !l.startsWith("[transformers]"));
    if (shown.length > 0) {
      errors += `${shown.join("\n")}\n`;
      process.stderr.write(`${shown.join("\n")}\n`);
    }
  });
  const code = await new Promise<number>((done) => trainer?.on("exit", (c) => done(c ?? 1)));
  if (code !== 0) throw new Error(`train.py exited with ${code}:\n${errors}`);
  const output = JSON.parse(readFileSync(results, "utf8"));
  const worst = Math.max(...output.mismatch_by_step);
  say(`mismatch before each update: at most ${worst.toExponential(2)} (bound ${MISMATCH_BOUND})`);
  if (!(worst < MISMATCH_BOUND))
    throw new Error(
      `the mismatch reached ${worst}, over ${MISMATCH_BOUND}: a token is not the host's`,
    );
  const summary = {
    ...output,
    kind: control ? "control" : "rl",
    commit,
    date: new Date().toISOString().slice(0, 10),
    machine: machine(output.accelerators ?? []),
    seed,
    plan,
    seconds: (Date.now() - started) / 1000,
    load_average: {
      start: loadAtStart,
      end: loadavg()[0] ?? 0,
      mean: loadSamples.reduce((a, b) => a + b, 0) / loadSamples.length,
      max: Math.max(...loadSamples),
    },
  };
  if (overlap) {
    // What SQL recorded of the run's syncs, read from the Worker's own D1 before it stops.
    const [row] = runSql(
      "SELECT syncs, interrupted, stall_ms_mean, stall_ms_max, kept_tokens, discarded_tokens FROM run_syncs WHERE run_id = 'train-example'",
      { persistTo: stack.persistTo },
    );
    say(`run_syncs: ${JSON.stringify(row ?? null)}`);
    const syncRun = { ...summary, sync, run_syncs: (row ?? null) as RunSyncsRow | null };
    if (quick) say("quick run: figures printed only");
    else {
      say(`kept ${keepSyncRun(syncRun)}`);
      if (writeSyncReport(syncRun)) say("rewrote docs/training-sync.md from the kept sync runs");
    }
  } else if (quick)
    say("quick run: figures printed only; `npm run train:example` writes docs/training-results.md");
  else {
    const kept = keepRun(summary);
    writeTraining(summary, PYTHON);
    say(`kept ${kept}; rewrote docs/training-results.md and docs/training.png from every kept run`);
  }
} finally {
  await stopAll();
}
