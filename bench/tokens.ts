/**
 * Part 5: what token-exact episodes cost. The same marathon groups (8 turns, 256-token
 * completions, 200-character replies, same seeds) run with `tokens: "off"` and with tokens, in
 * alternating order on one stack; the ratio of workerd CPU per turn is what asking for, reading,
 * storing and landing every turn's token ids and logprobs adds.
 */
import type { StartGroupInput } from "../src/client/edgeroll-client";
import { workerdCpuMs } from "./proc";
import { over, type Repeated } from "./repeats";
import { type BenchStack, playGroups } from "./stack";

export interface TokenCpuResult {
  groups: number;
  repeats: number;
  completionTokens: number;
  cpuMsPerTurnWithout: Repeated;
  cpuMsPerTurnWith: Repeated;
  /** CPU per turn with tokens over without: the target is at most 1.25. */
  ratio: Repeated;
  runs: { without: number; with: number }[];
}

const MODEL = "sim+pad:256";
const TURNS = 8;

function requests(runId: string, groups: number, tokens: "off" | "auto"): StartGroupInput[] {
  return Array.from({ length: groups }, (_, i) => ({
    env: "marathon",
    example: { id: `tokens-${i}`, input: "Walk.", metadata: { turns: TURNS, reply_bytes: 200 } },
    group_size: 8,
    run_id: runId,
    tokens,
    sampling: { model: MODEL, temperature: 1, seed: 4000 + i, max_completion_tokens: 512 },
  }));
}

async function cpuPerTurn(bench: BenchStack, batch: StartGroupInput[]) {
  const cpuBefore = workerdCpuMs(bench.pgid);
  const requestsBefore = bench.simRequests(MODEL);
  await playGroups(bench.client, batch);
  const turns = bench.simRequests(MODEL) - requestsBefore;
  return (workerdCpuMs(bench.pgid) - cpuBefore) / turns;
}

export async function measureTokenCpu(
  bench: BenchStack,
  options: { groups: number; repeats: number },
): Promise<TokenCpuResult> {
  const runs: TokenCpuResult["runs"] = [];
  for (let r = 0; r < options.repeats; r++) {
    const off = () => cpuPerTurn(bench, requests(`bench-tokens-off-${r}`, options.groups, "off"));
    const on = () => cpuPerTurn(bench, requests(`bench-tokens-on-${r}`, options.groups, "auto"));
    // Alternate which goes first, so warm-up and drift fall on both.
    if (r % 2 === 0) {
      const without = await off();
      runs.push({ without, with: await on() });
    } else {
      const withTokens = await on();
      runs.push({ without: await off(), with: withTokens });
    }
  }
  return {
    groups: options.groups,
    repeats: options.repeats,
    completionTokens: 256,
    cpuMsPerTurnWithout: over(runs, (r) => r.without),
    cpuMsPerTurnWith: over(runs, (r) => r.with),
    ratio: over(runs, (r) => r.with / r.without),
    runs,
  };
}
