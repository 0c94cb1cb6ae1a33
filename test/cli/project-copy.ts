/**
 * A scratch copy of this checkout (sharing node_modules), for CLI tests that write files and
 * for runs that need a state directory of their own, as a fresh clone has.
 */
import { spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dirname, "../..");
const COPIED = [
  "src",
  "datasets",
  "bin",
  "migrations",
  "fixtures",
  "examples",
  // examples/train/sync-report.ts summarises runs with the benchmarks' median.
  "bench/repeats.ts",
  "python",
  "test/raw-imports.d.ts",
  "test/setup/runtime-log-filter.ts",
  "test/setup/remote-env-host.ts",
  "test/setup/remote-env-token.ts",
  "test/setup/remote-env-version.ts",
  "test/setup/remote-env-server.ts",
  "test/setup/python-env-server.ts",
  "package.json",
  "tsconfig.json",
  "tsconfig.node.json",
  "biome.json",
  "vitest.config.ts",
  "wrangler.toml",
  "worker-configuration.d.ts",
];

export interface RunResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

export class ProjectCopy {
  readonly dir = mkdtempSync(join(tmpdir(), "edgeroll-cli-"));

  constructor() {
    for (const entry of COPIED)
      cpSync(join(ROOT, entry), join(this.dir, entry), { recursive: true });
    symlinkSync(join(ROOT, "node_modules"), join(this.dir, "node_modules"), "dir");
  }

  /** Runs `edgeroll <args>` in the copy, as `npx edgeroll` would. */
  edgeroll(...args: string[]): RunResult {
    return this.run(process.execPath, [join(this.dir, "bin/edgeroll.mjs"), ...args]);
  }

  /** The same, with these variables added to the environment (EDGEROLL_URL, say). */
  edgerollWith(env: Record<string, string>, ...args: string[]): RunResult {
    return this.run(process.execPath, [join(this.dir, "bin/edgeroll.mjs"), ...args], env);
  }

  /** Runs a binary from node_modules/.bin in the copy. */
  bin(name: string, ...args: string[]): RunResult {
    return this.run(process.execPath, [join(ROOT, "node_modules/.bin", name), ...args]);
  }

  private run(command: string, args: string[], env: Record<string, string> = {}): RunResult {
    const result = spawnSync(command, args, {
      cwd: this.dir,
      encoding: "utf8",
      timeout: 120_000,
      env: { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0", ...env },
    });
    return { status: result.status, stdout: result.stdout, stderr: result.stderr };
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}
