/**
 * `npm run dev`: the simulator (or a real host) and the Worker on the local state, until
 * Ctrl-C. Prints what a user needs next: the dashboard link with its reader token, and where
 * the clients on this machine find their tokens.
 */
import { relative } from "node:path";
import { type LocalStack, startLocalStack } from "./local-stack";
import { tokensFile } from "./local-tokens";
import { ensureCanStart } from "./preflight";
import { resolveStateDir } from "./project";

export interface DevFlags {
  port: string;
  simPort: string;
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

function printReady(stack: LocalStack, flags: DevFlags): void {
  const tokens =
    relative(process.cwd(), tokensFile(stack.persistTo)) || tokensFile(stack.persistTo);
  const defaultState = resolveStateDir(".wrangler/state") === stack.persistTo;
  console.log(`edgeroll is up (Ctrl-C stops it):
  API          ${stack.apiUrl}
  dashboard    ${stack.apiUrl}/?token=${stack.tokens.reader}
  inference    ${stack.inferenceUrl}${stack.simulator ? " (the simulator)" : ""}${
    flags.teacherUrl ? `\n  teacher      ${flags.teacherUrl}` : ""
  }
  tokens       ${tokens}: ${
    defaultState
      ? "the CLI and the Python client find them there by themselves"
      : `for clients, export EDGEROLL_TOKEN=$(npx edgeroll token --persist-to ${flags.persistTo})`
  }; curl: -H "authorization: Bearer $(npx edgeroll token)"`);
}

export async function dev(flags: DevFlags): Promise<void> {
  const port = Number(flags.port);
  await ensureCanStart(
    "npm run dev",
    [
      { port, what: "the Worker", flag: "--port" },
      ...(flags.inferenceUrl
        ? []
        : [{ port: Number(flags.simPort), what: "the simulator", flag: "--sim-port" }]),
    ],
    flags.persistTo,
  );
  const stack = await startLocalStack({
    persistTo: resolveStateDir(flags.persistTo),
    apiPort: port,
    secrets: hostSecrets(),
    ...(flags.teacherUrl ? { vars: { TEACHER_BASE_URL: flags.teacherUrl } } : {}),
    ...(flags.inferenceUrl
      ? { inferenceUrl: flags.inferenceUrl }
      : {
          sim: {
            port: Number(flags.simPort),
            latency: { ttftMs: 40, msPerToken: 3, msPerPromptToken: 0.01 },
          },
        }),
  });
  printReady(stack, flags);
  await new Promise<void>((resolve) => {
    process.once("SIGINT", () => resolve());
    process.once("SIGTERM", () => resolve());
  });
  await stack.stop();
}
