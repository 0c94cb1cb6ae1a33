/**
 * Every environment the rollout engine and the CLI can run, by name: the one place both import.
 * `edgeroll env new` adds its import and entry at the marker lines; keep them.
 */
import { type EnvironmentMultiTurn, UnknownEnvironmentError } from "../sdk";
import { ExactAnswer } from "./exact-answer";
import { GuessNumber } from "./guess-number";
import { JudgedAnswer } from "./judged-answer";
import { MentalMath } from "./mental-math";
import type { RemoteTarget } from "./remote/client";
import { remoteTargets } from "./remote/config";
import { type RemoteCallLimits, RemoteEnvironment } from "./remote/remote-environment";
import { ToolAgent } from "./tool-agent";
import { ToolAgentNative } from "./tool-agent-native";

// edgeroll:env-imports

/** A fresh instance per use: environments keep no state between calls. */
const BUILT_IN: Readonly<Record<string, () => EnvironmentMultiTurn>> = {
  "exact-answer": () => new ExactAnswer(),
  "judged-answer": () => new JudgedAnswer(),
  "guess-number": () => new GuessNumber(),
  "mental-math": () => new MentalMath(),
  "tool-agent": () => new ToolAgent(),
  "tool-agent-native": () => new ToolAgentNative(),
  // edgeroll:env-entries
};

const registered = new Map(Object.entries(BUILT_IN));

/**
 * Adds an environment at run time, for code that embeds edgeroll and for the test fixtures
 * (fixtures/register.ts). Environments that ship with a deployment belong in the table above,
 * where `env new` puts them.
 */
export function registerEnvironment(name: string, factory: () => EnvironmentMultiTurn): void {
  if (registered.has(name)) throw new Error(`an environment named "${name}" is already registered`);
  registered.set(name, factory);
}

/**
 * The remote environments a deployment configured (REMOTE_ENVS, `remote/config.ts`) and the
 * limits their calls run under. Where there are none (the CLI, tests of built-ins) it is omitted.
 */
export interface RemoteEnvironments {
  targets: ReadonlyMap<string, RemoteTarget>;
  limits: RemoteCallLimits;
}

/** The deployment's remote environments; a name that is a built-in's is a deploy error. */
export function remoteEnvironments(env: object, limits: RemoteCallLimits): RemoteEnvironments {
  const targets = remoteTargets(env);
  for (const name of targets.keys()) {
    if (registered.has(name))
      throw new Error(`REMOTE_ENVS: "${name}" is a built-in environment's name`);
  }
  return { targets, limits };
}

export function environmentNames(remote?: RemoteEnvironments): string[] {
  return [...registered.keys(), ...(remote?.targets.keys() ?? [])].sort();
}

export function isRegisteredEnvironment(name: string, remote?: RemoteEnvironments): boolean {
  return registered.has(name) || (remote?.targets.has(name) ?? false);
}

export function isRemoteEnvironment(name: string, remote?: RemoteEnvironments): boolean {
  return !registered.has(name) && (remote?.targets.has(name) ?? false);
}

/**
 * A fresh instance of the named environment. `episodeId` names a remote environment's calls
 * for idempotency.
 */
export function loadEnvironment(
  name: string,
  remote?: RemoteEnvironments,
  episodeId?: string,
): EnvironmentMultiTurn {
  const factory = registered.get(name);
  if (factory !== undefined) return factory();
  const target = remote?.targets.get(name);
  if (target !== undefined && remote !== undefined)
    return new RemoteEnvironment(target, remote.limits, episodeId);
  throw new UnknownEnvironmentError(name, environmentNames(remote));
}
