/**
 * Which bearer token a client on this machine sends, found the same way by the CLI, this
 * package and the Python client: `EDGEROLL_TOKEN`, then — only for a Worker on this machine —
 * the token file a local stack (`npm run dev`, `npm run demo`) keeps in its state directory,
 * then none. Node only (it reads a file); `EdgerollClient` itself reads `EDGEROLL_TOKEN` alone.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** The file, inside a state directory, that holds a local stack's tokens by role. */
export const LOCAL_TOKENS_FILE = "edgeroll-tokens.json";

export interface FoundToken {
  token: string;
  /** Where it came from, for messages: `EDGEROLL_TOKEN` or the token file's path. */
  source: string;
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

export function discoverToken(
  baseUrl: string,
  options: { stateDirs?: readonly string[]; env?: Record<string, string | undefined> } = {},
): FoundToken | null {
  const env = options.env ?? process.env;
  if (env.EDGEROLL_TOKEN) return { token: env.EDGEROLL_TOKEN, source: "EDGEROLL_TOKEN" };
  if (!isLoopbackUrl(baseUrl)) return null;
  for (const dir of options.stateDirs ?? [join(process.cwd(), ".wrangler", "state")]) {
    const file = join(dir, LOCAL_TOKENS_FILE);
    if (!existsSync(file)) continue;
    // The token with every role: on one's own machine a client may do anything.
    const admin = (JSON.parse(readFileSync(file, "utf8")) as { admin?: unknown }).admin;
    if (typeof admin === "string" && admin !== "") return { token: admin, source: file };
  }
  return null;
}
