/**
 * Every environment the rollout engine and the CLI can run, by name: the one place both import.
 * `edgeroll env new` adds its import and entry at the marker lines; keep them.
 */
import { type EnvironmentMultiTurn, UnknownEnvironmentError } from "../sdk";
import { ExactAnswer } from "./exact-answer";
import { GuessNumber } from "./guess-number";
import { MentalMath } from "./mental-math";
import { ToolAgent } from "./tool-agent";

// edgeroll:env-imports

/** A fresh instance per use: environments keep no state between calls. */
const BUILT_IN: Readonly<Record<string, () => EnvironmentMultiTurn>> = {
  "exact-answer": () => new ExactAnswer(),
  "guess-number": () => new GuessNumber(),
  "mental-math": () => new MentalMath(),
  "tool-agent": () => new ToolAgent(),
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

export function environmentNames(): string[] {
  return [...registered.keys()].sort();
}

export function isRegisteredEnvironment(name: string): boolean {
  return registered.has(name);
}

export function loadEnvironment(name: string): EnvironmentMultiTurn {
  const factory = registered.get(name);
  if (factory === undefined) throw new UnknownEnvironmentError(name, environmentNames());
  return factory();
}
