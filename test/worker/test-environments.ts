/**
 * Environments a test file registers for itself (a slow scorer, a throwing step). The workerd
 * files a worker runs share one registry (isolate: false), so the tests that walk every
 * registered environment leave these out: they are no deployment's, and which of them are
 * registered depends on which files ran before.
 */
import { registerEnvironment } from "../../src/environments/registry";
import type { EnvironmentMultiTurn } from "../../src/sdk";

const registeredByTests = new Set<string>();

export function registerTestEnvironment(name: string, factory: () => EnvironmentMultiTurn): void {
  registerEnvironment(name, factory);
  registeredByTests.add(name);
}

export function isTestEnvironment(name: string): boolean {
  return registeredByTests.has(name);
}
