/**
 * The HTTP client behind every CLI command that talks to a Worker: `--url` (or EDGEROLL_URL),
 * and the token `--token` gives, else EDGEROLL_TOKEN, else this checkout's local stack's.
 */
import { EdgerollClient } from "../client/edgeroll-client";
import { discoverToken } from "../client/local-token";
import { defaultStateDir } from "./local-tokens";

export const DEFAULT_URL = "http://127.0.0.1:8787";

export interface ApiFlags {
  url: string;
  token?: string;
}

/** Where the token of the last client came from, so a 401 can say which token was refused. */
let tokenSource: string | null = null;

export function lastTokenSource(): string | null {
  return tokenSource;
}

export function apiClient(flags: ApiFlags): EdgerollClient {
  const found = flags.token
    ? { token: flags.token, source: "--token" }
    : discoverToken(flags.url, { stateDirs: [defaultStateDir()] });
  tokenSource = found?.source ?? null;
  return new EdgerollClient({ baseUrl: flags.url, token: found?.token ?? null });
}
