/**
 * Part 4: landing and serving. Runs bench/workerd/ in workerd through the vitest plugin (real
 * local D1 and Durable Objects) and reads the figures it prints.
 */
import { spawn } from "node:child_process";
import { join, resolve } from "node:path";
import { over, type Repeated } from "./repeats";

interface LandingRun {
  /** Whether the text landing and serving ran before the token ones in this repeat. */
  text_first: boolean;
  landing_groups_per_s: number;
  landing_groups_per_s_tokens: number;
  landing_groups_per_s_tokens_bound: number;
  serving_episodes_per_s: number;
  serving_episodes_per_s_plain: number;
  serving_episodes_per_s_tokens: number;
  token_serving_ratio: number;
  token_object_bytes: number;
  r2_puts_per_s: number;
  r2_gets_per_s: number;
}

export interface LandingResult {
  groups: number;
  repeats: number;
  landingGroupsPerS: Repeated;
  servingEpisodesPerS: Repeated;
  /** The same groups with each turn's token ids and logprobs: one R2 object each, then D1. */
  landingGroupsPerSTokens: Repeated;
  /** What that could reach at the local R2's own pace: one put per group plus the D1 landing. */
  landingGroupsPerSTokensBound: Repeated;
  /** Lease and ack with base64 token samples over the same episodes without tokens. */
  tokenServingRatio: Repeated;
  r2PutsPerS: Repeated;
  r2GetsPerS: Repeated;
  runs: LandingRun[];
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
    (m) => JSON.parse(m[1] as string) as LandingRun,
  );
  if (runs.length !== repeats) throw new Error(`expected ${repeats} results:\n${output}`);
  return {
    groups,
    repeats,
    landingGroupsPerS: over(runs, (r) => r.landing_groups_per_s),
    servingEpisodesPerS: over(runs, (r) => r.serving_episodes_per_s),
    landingGroupsPerSTokens: over(runs, (r) => r.landing_groups_per_s_tokens),
    landingGroupsPerSTokensBound: over(runs, (r) => r.landing_groups_per_s_tokens_bound),
    tokenServingRatio: over(runs, (r) => r.token_serving_ratio),
    r2PutsPerS: over(runs, (r) => r.r2_puts_per_s),
    r2GetsPerS: over(runs, (r) => r.r2_gets_per_s),
    runs,
  };
}
