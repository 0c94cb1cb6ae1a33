/**
 * Which bearer token a client on this machine sends, found the same way by the CLI, this
 * package and the Python client: `EDGEROLL_TOKEN`, then — only for a Worker on this machine —
 * the token file of the local stack serving that URL (`npm run dev`, `npm run demo`: each
 * stack notes its port and state directory in `.wrangler/edgeroll-stacks/<port>.json`), then
 * the default state directory's, then none. Node only (it reads files); `EdgerollClient`
 * itself reads `EDGEROLL_TOKEN` alone.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** The file, inside a state directory, that holds a local stack's tokens by role. */
export const LOCAL_TOKENS_FILE = "edgeroll-tokens.json";

/** Where, under a checkout, each running local stack notes its port and state directory. */
export const LOCAL_STACKS_DIR = join(".wrangler", "edgeroll-stacks");

export interface FoundToken {
  token: string;
  /** Where it came from, for messages: `EDGEROLL_TOKEN` or the token file's path. */
  source: string;
}

/** A running local stack, as it notes itself in the stacks directory. */
export interface LocalStackNote {
  pid: number;
  api_url: string;
  state_dir: string;
  started_at: string;
}

const LOOPBACK = new Set(["localhost", "127.0.0.1", "[::1]", "::1"]);

/** A local stack's tokens are sent only to a Worker on this machine, never to a deployment. */
export function isLoopbackUrl(url: string): boolean {
  try {
    return LOOPBACK.has(new URL(url).hostname);
  } catch {
    return false;
  }
}

/** The port a URL names, or its scheme's. */
export function urlPort(url: string): number {
  const parsed = new URL(url);
  return Number(parsed.port || (parsed.protocol === "https:" ? 443 : 80));
}

export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but is not ours.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** The note of the live local stack serving `baseUrl`'s port, or null. */
export function localStackServing(baseUrl: string, stacksDir: string): LocalStackNote | null {
  if (!isLoopbackUrl(baseUrl)) return null;
  const file = join(stacksDir, `${urlPort(baseUrl)}.json`);
  if (!existsSync(file)) return null;
  try {
    const note = JSON.parse(readFileSync(file, "utf8")) as LocalStackNote;
    return Number.isInteger(note.pid) && processAlive(note.pid) ? note : null;
  } catch {
    return null; // half-written by a process that died
  }
}

/** The token with every role from a state directory's token file, if it has one. */
function adminToken(stateDir: string): FoundToken | null {
  const file = join(stateDir, LOCAL_TOKENS_FILE);
  if (!existsSync(file)) return null;
  // The token with every role: on one's own machine a client may do anything.
  const admin = (JSON.parse(readFileSync(file, "utf8")) as { admin?: unknown }).admin;
  return typeof admin === "string" && admin !== "" ? { token: admin, source: file } : null;
}

export function discoverToken(
  baseUrl: string,
  options: {
    /** Where to look when no stack notes the URL's port (default `./.wrangler/state`). */
    stateDirs?: readonly string[];
    /** The stacks directory (default `./.wrangler/edgeroll-stacks`). */
    stacksDir?: string;
    env?: Record<string, string | undefined>;
  } = {},
): FoundToken | null {
  const env = options.env ?? process.env;
  if (env.EDGEROLL_TOKEN) return { token: env.EDGEROLL_TOKEN, source: "EDGEROLL_TOKEN" };
  if (!isLoopbackUrl(baseUrl)) return null;
  const serving = localStackServing(
    baseUrl,
    options.stacksDir ?? join(process.cwd(), LOCAL_STACKS_DIR),
  );
  if (serving !== null) return adminToken(serving.state_dir);
  for (const dir of options.stateDirs ?? [join(process.cwd(), ".wrangler", "state")]) {
    const found = adminToken(dir);
    if (found) return found;
  }
  return null;
}
