/**
 * Every environment the rollout engine and the CLI can run, by name: the one place both import.
 * `edgeroll env new` adds its import and entry at the marker lines; keep them.
 */
import { type EnvironmentMultiTurn, UnknownEnvironmentError } from "../sdk";
import { ExactAnswer } from "./exact-answer";
import { GuessNumber } from "./guess-number";
import { ToolAgent } from "./tool-agent";
// edgeroll:env-imports

/** A fresh instance per use: environments keep no state between calls. */
export const ENVIRONMENTS: Readonly<Record<string, () => EnvironmentMultiTurn>> = {
  "exact-answer": () => new ExactAnswer(),
  "guess-number": () => new GuessNumber(),
  "tool-agent": () => new ToolAgent(),
  // edgeroll:env-entries
};

export const ENVIRONMENT_NAMES = Object.keys(ENVIRONMENTS).sort();

export function isRegisteredEnvironment(name: string): boolean {
  return Object.hasOwn(ENVIRONMENTS, name);
}

export function loadEnvironment(name: string): EnvironmentMultiTurn {
  const factory = Object.hasOwn(ENVIRONMENTS, name) ? ENVIRONMENTS[name] : undefined;
  if (factory === undefined) throw new UnknownEnvironmentError(name, ENVIRONMENT_NAMES);
  return factory();
}
