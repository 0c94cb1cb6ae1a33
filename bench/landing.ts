/**
 * Part 4: landing and serving. Runs bench/workerd/ in workerd through the vitest plugin (real
 * local D1 and Durable Objects) and reads the figures it prints.
 */
import { spawn } from "node:child_process";
import { join, resolve } from "node:path";
import { median } from "./stack";

export interface LandingResult {
  groups: number;
  repeats: number;
  landingGroupsPerS: number;
  servingEpisodesPerS: number;
  runs: { landing_groups_per_s: number; serving_episodes_per_s: number }[];
}

const ROOT = resolve(import.meta.dirname, "..");

export async function measureLanding(groups: number, repeats: number): Promise<LandingResult> {
  const output = await new Promise<string>((done, fail) => {
    const child = spawn(
      process.execPath,
      [
        join(ROOT, "node_modules", "vitest", "vitest.mjs"),
        "run",
        "--config",
        "bench/vitest.config.ts",
      ],
      {
        cwd: ROOT,
        env: { ...process.env, BENCH_GROUPS: String(groups), BENCH_REPEATS: String(repeats) },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let text = "";
    child.stdout.on("data", (chunk) => {
      text += chunk;
    });
    child.stderr.on("data", (chunk) => {
      text += chunk;
    });
    child.on("error", fail);
    child.on("exit", (code) =>
      code === 0 ? done(text) : fail(new Error(`landing bench failed (exit ${code}):\n${text}`)),
    );
  });
  const runs = [...output.matchAll(/BENCH_RESULT (\{.*\})/g)].map(
    (m) => JSON.parse(m[1] as string) as LandingResult["runs"][number],
  );
  if (runs.length !== repeats) throw new Error(`expected ${repeats} results:\n${output}`);
  return {
    groups,
    repeats,
    landingGroupsPerS: median(runs.map((r) => r.landing_groups_per_s)),
    servingEpisodesPerS: median(runs.map((r) => r.serving_episodes_per_s)),
    runs,
  };
}
