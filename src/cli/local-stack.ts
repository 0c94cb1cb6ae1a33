/**
 * The whole of edgeroll on one machine: D1 migrations applied, the inference simulator, and the
 * Worker under `wrangler dev` (workerd with its Durable Objects and D1), stopped together.
 * Used by `npm run demo`, the end-to-end tests and the crash tests.
 */

import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { JUDGE_MODEL } from "../sim/directives";
import type { Simulator, SimulatorOptions } from "../sim/server";
import { BuildGate } from "./build-gate";
import { apiTokensVar, type LocalTokens, localTokens } from "./local-tokens";
import { freePort } from "./ports";
import { CliError, PROJECT_ROOT } from "./project";
import { watchSources } from "./source-watch";
import { claimStateDir } from "./state-lock";
import { type BuildState, buildFailureMessage, WorkerBuild } from "./worker-build";

export interface LocalStackOptions {
  /** Where D1 and the Durable Objects keep their state (wrangler's --persist-to). */
  persistTo: string;
  apiPort?: number;
  /** Options for the simulator; ignored when `inferenceUrl` points at a real host. */
  sim?: SimulatorOptions;
  inferenceUrl?: string;
  /** Extra Worker vars, e.g. { MAX_INFLIGHT_GENERATIONS: "512" }. */
  vars?: Record<string, string>;
  /** Extra Worker secrets, e.g. { INFERENCE_API_KEY: "..." }; API_TOKENS is the stack's own. */
  secrets?: Record<string, string>;
  inspectorPort?: number;
  /** Receives wrangler's output lines (default: dropped). */
  log?: (line: string) => void;
  /** Keep wrangler's local trace of every call (default: off; see `startWorker`). */
  localTraces?: boolean;
  /** Another entry module for the Worker (the test fixtures' `fixtures/worker.ts`). */
  entry?: string;
  /**
   * Serve through a gate (build-gate.ts) that answers 503 naming the problem while the Worker
   * does not build, and keep running until it does: `npm run dev`. Without one, a Worker that
   * does not build is an error at once.
   */
  gate?: boolean;
  /** Told whenever the Worker stops or starts building (with `gate`). */
  onBuild?: (state: BuildState) => void;
  /** Claimed before the stack was started, by a caller that wants the claim early (dev). */
  release?: () => void;
}

export interface LocalStack {
  apiUrl: string;
  persistTo: string;
  tokens: LocalTokens;
  inferenceUrl: string;
  simulator: Simulator | null;
  /** The workerd process tree's leader, for the crash tests. */
  wrangler: ChildProcess;
  /** Whether the Worker builds now (a gated stack may start with one that does not). */
  build(): BuildState;
  stop(): Promise<void>;
}

/** wrangler needs Node >= 22.12; the project installs it as a dev dependency. */
export function projectNode(): string {
  const installed = join(PROJECT_ROOT, "node_modules", "node", "bin", "node");
  return existsSync(installed) ? installed : process.execPath;
}

export function wranglerCommand(...args: string[]): [string, string[]] {
  return [
    projectNode(),
    [join(PROJECT_ROOT, "node_modules", "wrangler", "bin", "wrangler.js"), ...args],
  ];
}

/** Applies the D1 migrations to the local database under `persistTo`. */
export function applyMigrations(persistTo: string): void {
  const [command, args] = wranglerCommand(
    "d1",
    "migrations",
    "apply",
    "edgeroll",
    "--local",
    "--persist-to",
    persistTo,
  );
  // CI=1: never stop to ask for confirmation.
  const result = spawnSync(command, args, {
    cwd: PROJECT_ROOT,
    encoding: "utf8",
    env: { ...process.env, CI: "1" },
  });
  if (result.status !== 0)
    throw new CliError(`applying D1 migrations failed:\n${result.stdout}\n${result.stderr}`);
}

async function waitForHealth(
  url: string,
  process_: ChildProcess,
  output: string[],
  timeoutMs: number,
  build: WorkerBuild,
  untilBuildFails: boolean,
): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    // wrangler holds every request while the Worker does not build: say why at once.
    if (!build.state.ok) {
      if (untilBuildFails) return;
      throw new CliError(
        `${buildFailureMessage(build.state)}\n  fix it and run again (wrangler dev's report:\n${build.state.report.join("\n")})`,
      );
    }
    if (process_.exitCode !== null) {
      throw new CliError(
        `wrangler dev exited with ${process_.exitCode}:\n${output.slice(-30).join("\n")}`,
      );
    }
    try {
      const answer = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(1000) });
      if (answer.ok) return;
    } catch {
      // not up yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new CliError(
    `wrangler dev did not answer ${url}/healthz within ${timeoutMs / 1000} s:\n${output.slice(-30).join("\n")}`,
  );
}

/**
 * Writes the Worker's secrets where wrangler reads them (`--env-file`), readable by their owner
 * only: on the command line (`--var`) every local user would see them in `ps`.
 */
function writeSecretsFile(persistTo: string, secrets: Record<string, string>): string {
  const lines = Object.entries(secrets).map(([name, value]) => {
    // Single quotes keep a dotenv value literal, JSON's double quotes included.
    if (/['\n\r]/.test(value)) throw new CliError(`secret ${name} holds a quote or a line break`);
    return `${name}='${value}'`;
  });
  mkdirSync(persistTo, { recursive: true });
  const file = join(persistTo, "edgeroll-secrets.env");
  writeFileSync(file, `${lines.join("\n")}\n`, { mode: 0o600 });
  chmodSync(file, 0o600); // a file written before keeps its mode otherwise
  return file;
}

/** Starts `wrangler dev` on existing state; the crash tests restart it this way. */
export async function startWorker(options: {
  persistTo: string;
  port: number;
  inferenceUrl: string;
  vars?: Record<string, string>;
  /** Secrets such as API_TOKENS, handed over in a file rather than on the command line. */
  secrets?: Record<string, string>;
  log?: (line: string) => void;
  /** Where V8's inspector listens, for profiling; a free port by default. */
  inspectorPort?: number;
  /** Another Worker's wrangler.toml (the bench's floor Worker); edgeroll's own by default. */
  configPath?: string;
  /** Another entry module than wrangler.toml's `main`, with the same bindings. */
  entry?: string;
  /**
   * wrangler dev's local observability: every storage statement, fetch and RPC of the Worker
   * becomes a span, sent to a collector in the same workerd and written to a trace database.
   * That costs several times what the calls themselves do (docs/benchmarks.md), so edgeroll's
   * local stack leaves it off unless asked, or unless X_LOCAL_OBSERVABILITY says otherwise.
   */
  localTraces?: boolean;
  /** Told whenever the Worker stops or starts building. */
  onBuild?: (state: BuildState) => void;
  /**
   * Return (rather than throw) when the first build fails; wrangler keeps watching the sources
   * and serves once a build succeeds.
   */
  untilBuildFails?: boolean;
}): Promise<ChildProcess> {
  const vars = Object.entries({
    INFERENCE_BASE_URL: options.inferenceUrl,
    ...options.vars,
  }).flatMap(([k, v]) => ["--var", `${k}:${v}`]);
  const [command, args] = wranglerCommand(
    "dev",
    ...(options.entry ? [options.entry] : []),
    ...(options.configPath ? ["--config", options.configPath] : []),
    "--ip",
    "127.0.0.1",
    "--port",
    String(options.port),
    "--inspector-port",
    String(options.inspectorPort ?? (await freePort())),
    "--persist-to",
    options.persistTo,
    "--show-interactive-dev-session=false",
    ...(options.secrets
      ? ["--env-file", writeSecretsFile(options.persistTo, options.secrets)]
      : []),
    ...vars,
  );
  const localTraces =
    options.localTraces === undefined
      ? (process.env.X_LOCAL_OBSERVABILITY ?? "false")
      : String(options.localTraces);
  const child = spawn(command, args, {
    cwd: PROJECT_ROOT,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, X_LOCAL_OBSERVABILITY: localTraces },
  });
  const output: string[] = [];
  const build = new WorkerBuild(options.onBuild);
  child.once("exit", () => build.dispose());
  for (const stream of [child.stdout, child.stderr]) {
    stream?.setEncoding("utf8");
    stream?.on("data", (chunk: string) => {
      for (const line of chunk.split("\n")) {
        if (line.trim() === "") continue;
        output.push(line);
        if (output.length > 200) output.shift();
        build.feed(line);
        options.log?.(line);
      }
    });
  }
  try {
    await waitForHealth(
      `http://127.0.0.1:${options.port}`,
      child,
      output,
      90_000,
      build,
      options.untilBuildFails === true,
    );
  } catch (error) {
    await stopProcessGroup(child);
    throw error;
  }
  return child;
}

/** Ends a process and everything it started (wrangler runs workerd as a child). */
export async function stopProcessGroup(
  child: ChildProcess,
  signal: NodeJS.Signals = "SIGTERM",
): Promise<void> {
  if (child.exitCode !== null || child.pid === undefined) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  try {
    process.kill(-child.pid, signal);
  } catch {
    return;
  }
  const timer = setTimeout(() => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
    } catch {
      // already gone
    }
  }, 5000);
  await exited;
  clearTimeout(timer);
}

export async function startLocalStack(options: LocalStackOptions): Promise<LocalStack> {
  const port = options.apiPort ?? (await freePort());
  const apiUrl = `http://127.0.0.1:${port}`;
  const release = options.release ?? claimStateDir(options.persistTo, apiUrl);
  let simulator: Simulator | null = null;
  let wrangler: ChildProcess;
  const tokens = localTokens(options.persistTo);
  let build: BuildState = { ok: true };
  // With a gate, wrangler listens on a port of its own and the gate on the stack's.
  const gate = options.gate ? new BuildGate(await freePort()) : null;
  const onBuild = (state: BuildState) => {
    build = state;
    gate?.setState(state);
    options.onBuild?.(state);
  };
  let worker: Parameters<typeof startWorker>[0];
  try {
    applyMigrations(options.persistTo);
    if (!options.inferenceUrl) {
      // The simulator (and its tokenizer) loads only when it is wanted.
      const { startSimulator } = await import("../sim/server");
      // A port from freePort, not 0: the system could give port 0's listener the API's port,
      // released a moment ago and not yet bound by wrangler.
      simulator = await startSimulator({
        ...options.sim,
        port: options.sim?.port || (await freePort()),
      });
    }
    worker = {
      persistTo: options.persistTo,
      port: gate?.workerPort ?? port,
      inferenceUrl: options.inferenceUrl ?? (simulator as Simulator).url,
      secrets: { API_TOKENS: apiTokensVar(tokens), ...options.secrets },
      // The simulator judges too (its model `judge`): judged environments grade locally.
      ...(simulator !== null || options.vars
        ? { vars: { ...(simulator !== null ? { JUDGE_MODEL } : {}), ...options.vars } }
        : {}),
      ...(options.inspectorPort ? { inspectorPort: options.inspectorPort } : {}),
      ...(options.log ? { log: options.log } : {}),
      ...(options.localTraces !== undefined ? { localTraces: options.localTraces } : {}),
      ...(options.entry ? { entry: options.entry } : {}),
      ...(gate ? { untilBuildFails: true, onBuild } : {}),
    };
    wrangler = await startWorker(worker);
    await gate?.listen(port);
  } catch (error) {
    await simulator?.close();
    release();
    throw error;
  }
  // wrangler never builds again after a failed first build: start it anew on the next save.
  let restarting: Promise<void> = Promise.resolve();
  const restart = () => {
    restarting = restarting.then(async () => {
      if (stopWatching === null) return; // a restart before this one built it
      await stopProcessGroup(wrangler);
      build = { ok: true };
      try {
        wrangler = await startWorker(worker);
      } catch (error) {
        onBuild({ ok: false, problems: [], report: [(error as Error).message] });
        return;
      }
      if (!build.ok) return;
      stopWatching?.();
      stopWatching = null;
      onBuild(build);
    });
  };
  const sources = [
    join(PROJECT_ROOT, "src"),
    ...(options.entry ? [dirname(resolve(PROJECT_ROOT, options.entry))] : []),
  ];
  let stopWatching: (() => void) | null = gate && !build.ok ? watchSources(sources, restart) : null;
  const inferenceUrl = options.inferenceUrl ?? (simulator as Simulator).url;
  return {
    apiUrl,
    persistTo: options.persistTo,
    tokens,
    inferenceUrl,
    simulator,
    get wrangler() {
      return wrangler;
    },
    build: () => build,
    async stop() {
      stopWatching?.();
      await restarting;
      await gate?.close();
      await stopProcessGroup(wrangler);
      await simulator?.close();
      release();
    },
  };
}
