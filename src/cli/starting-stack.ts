/**
 * A command pointed at a local URL may run while the stack there is still starting: `npm run
 * dev &` returns at once, and the Worker answers some seconds later. When nothing answers yet
 * but a stack of this checkout has claimed that port (its note in the stacks directory, its
 * process alive), the command says so and waits for it, bounded; with no such stack it fails
 * at once as before, after a short grace for a stack launched in the same breath.
 */
import { isLoopbackUrl, type LocalStackNote, localStackServing } from "../client/local-token";
import { CliError } from "./project";
import { stacksDir } from "./state-lock";

export interface WaitOptions {
  /** How long to look for a stack's note when nothing answers (a stack launched just now). */
  graceMs?: number;
  /** How long a starting stack may take to answer. */
  timeoutMs?: number;
  log?: (line: string) => void;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** True when something answered HTTP at `baseUrl` (any status: a 503 is an answer). */
async function answers(baseUrl: string): Promise<boolean> {
  try {
    await fetch(`${baseUrl.replace(/\/+$/, "")}/healthz`, { signal: AbortSignal.timeout(5000) });
    return true;
  } catch (error) {
    // A timeout is a listener that holds requests: an answer of sorts, not a stack to wait for.
    return (error as Error).name === "TimeoutError";
  }
}

async function noteWithin(baseUrl: string, ms: number): Promise<LocalStackNote | null> {
  const until = Date.now() + ms;
  for (;;) {
    const note = localStackServing(baseUrl, stacksDir());
    if (note !== null || Date.now() >= until) return note;
    await sleep(250);
  }
}

/** Returns once `baseUrl` answers, or when there is nothing to wait for. */
export async function waitForStartingStack(
  baseUrl: string,
  options: WaitOptions = {},
): Promise<void> {
  if (!isLoopbackUrl(baseUrl) || (await answers(baseUrl))) return;
  const note = await noteWithin(baseUrl, options.graceMs ?? 3000);
  if (note === null) return; // nothing is starting there: the command's own call says so
  const log = options.log ?? ((line: string) => console.error(line));
  const timeoutMs = options.timeoutMs ?? 180_000;
  const started = Date.now();
  log(
    `edgeroll: the local stack at ${note.api_url} is starting (process ${note.pid}); waiting for it (up to ${timeoutMs / 1000} s)`,
  );
  while (Date.now() - started < timeoutMs) {
    if (await answers(baseUrl)) {
      log(`edgeroll: ${note.api_url} is up after ${Math.round((Date.now() - started) / 1000)} s`);
      return;
    }
    if (localStackServing(baseUrl, stacksDir()) === null)
      throw new CliError(
        `the local stack at ${note.api_url} (process ${note.pid}) stopped before it answered: its output says why`,
      );
    await sleep(500);
  }
  throw new CliError(
    `the local stack at ${note.api_url} (process ${note.pid}) did not answer within ${timeoutMs / 1000} s: its output says why`,
  );
}
