/**
 * The HTTP client behind every CLI command that talks to a Worker: `--url` (or EDGEROLL_URL),
 * and the token `--token` gives, else EDGEROLL_TOKEN, else the token of the local stack serving
 * that URL, else this checkout's default stack's. A local stack that is still starting is
 * waited for first (starting-stack.ts), so its token file exists by the time it is read.
 */
import { EdgerollClient } from "../client/edgeroll-client";
import { discoverToken, type LocalStackNote, localStackServing } from "../client/local-token";
import { defaultStateDir } from "./local-tokens";
import { waitForStartingStack } from "./starting-stack";
import { stacksDir } from "./state-lock";

export const DEFAULT_URL = "http://127.0.0.1:8787";

export interface ApiFlags {
  url: string;
  token?: string;
}

/** Which token the last client sends and from where, so a refusal can say what to do. */
export interface TokenChoice {
  url: string;
  /** `--token`, `EDGEROLL_TOKEN`, or the token file's path; null when none was found. */
  source: string | null;
  /** The local stack serving the URL, when one is noted. */
  stack: LocalStackNote | null;
}

let choice: TokenChoice | null = null;

export function lastTokenChoice(): TokenChoice | null {
  return choice;
}

export async function apiClient(flags: ApiFlags): Promise<EdgerollClient> {
  await waitForStartingStack(flags.url);
  const found = flags.token
    ? { token: flags.token, source: "--token" }
    : discoverToken(flags.url, { stateDirs: [defaultStateDir()], stacksDir: stacksDir() });
  choice = {
    url: flags.url,
    source: found?.source ?? null,
    stack: localStackServing(flags.url, stacksDir()),
  };
  return new EdgerollClient({ baseUrl: flags.url, token: found?.token ?? null });
}
