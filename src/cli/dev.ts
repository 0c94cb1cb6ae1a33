/**
 * `npm run dev`: the simulator (or a real host) and the Worker on the local state, until
 * Ctrl-C. Prints what a user needs next: the dashboard link with its reader token, and where
 * the clients on this machine find their tokens. When an edit leaves the Worker unable to
 * build, it says so at once (file, line, message), requests get a 503 naming it, and it serves
 * again once the file is fixed (build-gate.ts).
 */
import { relative } from "node:path";
import { type SimFleet, startSimFleet } from "../sim/fleet";
import { type LocalStack, startLocalStack } from "./local-stack";
import { tokensFile } from "./local-tokens";
import { ensureCanStart } from "./preflight";
import { CliError, resolveStateDir } from "./project";
import { claimStateDir } from "./state-lock";
import { type BuildFailure, type BuildState, buildFailureMessage } from "./worker-build";

export interface DevFlags {
  port: string;
  simPort: string;
  /** The simulator as a fleet of this many hosts (default 1: one host, no prefix cache). */
  simHosts?: string;
  persistTo: string;
  inferenceUrl?: string;
  /** The on-policy distillation teacher's host (TEACHER_BASE_URL); default the inference host. */
  teacherUrl?: string;
}

/** The hosts' keys, when the shell has them: handed to the Worker as secrets, never as flags. */
function hostSecrets(): Record<string, string> {
  const secrets: Record<string, string> = {};
  for (const name of ["INFERENCE_API_KEY", "TEACHER_API_KEY"]) {
    const key = process.env[name];
    if (key) secrets[name] = key;
  }
  return secrets;
}

/** The simulator's latency here: a small model's, so that runs feel like runs. */
const DEV_LATENCY = { ttftMs: 40, msPerToken: 3, msPerPromptToken: 0.01 };

function simHostCount(flags: DevFlags): number {
  const n = Number(flags.simHosts ?? "1");
  if (!Number.isInteger(n) || n < 1 || n > 64)
    throw new CliError(`--sim-hosts must be a whole number from 1 to 64, got "${flags.simHosts}"`);
  if (n > 1 && flags.inferenceUrl)
    throw new CliError("--sim-hosts plays a fleet of simulators: leave out --inference-url");
  return n;
}

function printReady(stack: LocalStack, flags: DevFlags, fleet: SimFleet | null): void {
  const tokens =
    relative(process.cwd(), tokensFile(stack.persistTo)) || tokensFile(stack.persistTo);
  const defaultState = resolveStateDir(".wrangler/state") === stack.persistTo;
  const token = `npx edgeroll token${defaultState ? "" : ` --persist-to ${flags.persistTo}`}`;
  console.log(`edgeroll is up (Ctrl-C stops it):
  API          ${stack.apiUrl}
  dashboard    ${stack.apiUrl}/?token=${stack.tokens.reader}
  inference    ${stack.inferenceUrl}${
    fleet
      ? ` (a fleet of ${fleet.hosts.length} simulators: they play the model \`sim\`, the CLI's default --model; GET /v1/hosts and the dashboard's Hosts table show them)`
      : stack.simulator
        ? " (the simulator: it plays the model `sim`, the CLI's default --model)"
        : ""
  }${flags.teacherUrl ? `\n  teacher      ${flags.teacherUrl}` : ""}
  tokens       ${tokens}: the CLI and the Python client find them there by themselves for ${stack.apiUrl}; curl: -H "authorization: Bearer $(${token})"`);
}

function printBuildFailure(failure: BuildFailure): void {
  console.error(`edgeroll: ${buildFailureMessage(failure)}
  every request is answered 503 build_failed, naming it, until the Worker builds: fix the file and save, and edgeroll serves again`);
}

export async function dev(flags: DevFlags): Promise<void> {
  const port = Number(flags.port);
  const simHosts = simHostCount(flags);
  await ensureCanStart(
    "npm run dev",
    [
      { port, what: "the Worker", flag: "--port" },
      ...(flags.inferenceUrl
        ? []
        : Array.from({ length: simHosts }, (_, i) => ({
            port: Number(flags.simPort) + i,
            what: simHosts > 1 ? `simulated host ${i}` : "the simulator",
            flag: "--sim-port",
          }))),
    ],
    flags.persistTo,
  );
  const persistTo = resolveStateDir(flags.persistTo);
  // Claimed before anything slow, so that a client started in the same breath (`npm run dev &`,
  // then the next line) finds a stack that is starting, and waits for it.
  const release = claimStateDir(persistTo, `http://127.0.0.1:${port}`);
  // A fleet of simulators is started here and handed to the stack as its hosts' URLs.
  const fleet =
    simHosts > 1
      ? await startSimFleet(simHosts, {
          port: Number(flags.simPort),
          latency: DEV_LATENCY,
          kvBlocks: 8192,
        })
      : null;
  const inferenceUrl = fleet?.baseUrl ?? flags.inferenceUrl;
  let stack: LocalStack | null = null;
  let ready = false;
  const onBuild = (state: BuildState) => {
    if (stack === null) return; // the start reports the first build itself
    if (!state.ok) return printBuildFailure(state);
    console.log("edgeroll: the Worker builds again; serving requests");
    if (!ready) {
      ready = true;
      printReady(stack, flags, fleet);
    }
  };
  stack = await startLocalStack({
    persistTo,
    release,
    gate: true,
    onBuild,
    apiPort: port,
    secrets: hostSecrets(),
    ...(flags.teacherUrl ? { vars: { TEACHER_BASE_URL: flags.teacherUrl } } : {}),
    ...(inferenceUrl
      ? { inferenceUrl }
      : { sim: { port: Number(flags.simPort), latency: DEV_LATENCY } }),
  }).catch(async (error: unknown) => {
    await fleet?.close();
    throw error;
  });
  const first = stack.build();
  if (first.ok) {
    ready = true;
    printReady(stack, flags, fleet);
  } else printBuildFailure(first);
  await new Promise<void>((resolve) => {
    process.once("SIGINT", () => resolve());
    process.once("SIGTERM", () => resolve());
  });
  try {
    await stack.stop();
  } finally {
    await fleet?.close();
  }
}
