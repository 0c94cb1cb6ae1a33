/**
 * Which remote environments a deployment runs: configuration only, never callers (the API takes
 * no URLs). `REMOTE_ENVS` maps a name to a base URL — a JSON object, as a wrangler var (a TOML
 * table) or as a JSON string (`.dev.vars`, `--var`) — and the secret `REMOTE_ENV_TOKEN`, when
 * set, is sent to each as a bearer token.
 */
import { z } from "zod";
import type { RemoteTarget } from "./client";

const NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;

const RemoteEnvsSchema = z.record(
  z.string().regex(NAME, "an environment name: lowercase letters, digits and dashes"),
  z.url({ protocol: /^https?$/ }),
);

export interface RemoteEnvVars {
  REMOTE_ENVS?: unknown;
  REMOTE_ENV_TOKEN?: string;
}

const cache = new WeakMap<object, ReadonlyMap<string, RemoteTarget>>();

/** Parsed once per env object; a bad value is a deploy error, so it throws, naming the entry. */
export function remoteTargets(env: object): ReadonlyMap<string, RemoteTarget> {
  let targets = cache.get(env);
  if (targets !== undefined) return targets;
  // Both are optional, so neither is in wrangler's generated Env type: read them as data.
  const vars = env as RemoteEnvVars;
  const raw = vars.REMOTE_ENVS;
  const value = typeof raw === "string" ? parseJson(raw) : (raw ?? {});
  const parsed = RemoteEnvsSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`REMOTE_ENVS: ${issue?.path.join(".") ?? ""} ${issue?.message ?? "invalid"}`);
  }
  const token = vars.REMOTE_ENV_TOKEN || undefined;
  targets = new Map(
    Object.entries(parsed.data).map(([name, baseUrl]) => [name, { name, baseUrl, token }]),
  );
  cache.set(env, targets);
  return targets;
}

function parseJson(raw: string): unknown {
  if (raw.trim() === "") return {};
  try {
    return JSON.parse(raw);
  } catch (error) {
    throw new Error(`REMOTE_ENVS is not a JSON object: ${(error as Error).message}`);
  }
}
