/** Where things live in an edgeroll checkout, found from this file rather than the cwd. */
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const PROJECT_ROOT = fileURLToPath(new URL("../..", import.meta.url));

export const paths = {
  registry: "src/environments/registry.ts",
  environment: (name: string) => `src/environments/${name}.ts`,
  dataset: (name: string) => `datasets/${name}.jsonl`,
  test: (name: string) => `test/environments/${name}.test.ts`,
};

/** A state directory given on the command line: relative to the checkout, or absolute. */
export function resolveStateDir(dir: string): string {
  return resolve(PROJECT_ROOT, dir);
}

/** Thrown for a problem the user can fix; the CLI prints the message and exits 1. */
export class CliError extends Error {
  override name = "CliError";
}
