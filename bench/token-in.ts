/**
 * Part 7: what token-in generation and teacher scoring cost.
 *
 * - Tokens vs chat mode: the same marathon groups (8 turns, 256-token completions, same seeds)
 *   with `generation: "chat"` and `"tokens"`, alternating order on one stack. Workerd CPU per
 *   turn, and end-to-end turns per second (a run's turns over its wall time, the simulator
 *   answering at once). A token-in turn makes two calls to the host (`/tokenize` for the
 *   bridge, then `/v1/completions`) where chat makes one.
 * - Teacher scoring: the same token-in groups with `algorithm: "opd"` (the simulator's teacher
 *   scoring every sample by prompt logprobs) against the token-in run without; the extra workerd
 *   CPU and wall time over the sampled tokens the teacher scored is its cost per sampled token.
 */
import type { StartGroupInput } from "../src/client/edgeroll-client";
import { workerdCpuMs } from "./proc";
import { over, type Repeated } from "./repeats";
import { type BenchStack, playGroups } from "./stack";

const MODEL = "sim+pad:256";
const TEACHER = "sim+teacher+pad:256";
const TURNS = 8;

type Variant = "chat" | "tokens" | "opd";

export interface TokenInResult {
  groups: number;
  repeats: number;
  completionTokens: number;
  chatCpuMsPerTurn: Repeated;
  tokensCpuMsPerTurn: Repeated;
  /** Tokens mode over chat mode, workerd CPU per turn (median of the runs' ratios). */
  cpuRatio: Repeated;
  chatTurnsPerS: Repeated;
  tokensTurnsPerS: Repeated;
  /** Tokens mode over chat mode, turns per second end to end. */
  throughputRatio: Repeated;
  /** Workerd CPU (µs) OPD adds per sampled token the teacher scored. */
  teacherCpuUsPerToken: Repeated;
  /** Wall time (µs) OPD adds per sampled token, over the whole run. */
  teacherWallUsPerToken: Repeated;
  runs: Record<
    Variant,
    {
      cpuMsPerTurn: number;
      turnsPerS: number;
      cpuMs: number;
      wallMs: number;
      sampledTokens: number;
    }
  >[];
}

function requests(runId: string, groups: number, variant: Variant): StartGroupInput[] {
  return Array.from({ length: groups }, (_, i) => ({
    env: "marathon",
    example: { id: `token-in-${i}`, input: "Walk.", metadata: { turns: TURNS, reply_bytes: 200 } },
    group_size: 8,
    run_id: runId,
    tokens: "required",
    generation: variant === "chat" ? "chat" : "tokens",
    ...(variant === "opd" ? { algorithm: "opd", teacher: { model: TEACHER } } : {}),
    sampling: { model: MODEL, temperature: 1, seed: 7000 + i, max_completion_tokens: 512 },
  }));
}

async function measure(bench: BenchStack, runId: string, groups: number, variant: Variant) {
  const cpuBefore = workerdCpuMs(bench.pgid);
  const turnsBefore = bench.simRequests(MODEL);
  const started = Date.now();
  const batch = requests(runId, groups, variant);
  await playGroups(bench.client, batch);
  const wallMs = Date.now() - started;
  const cpuMs = workerdCpuMs(bench.pgid) - cpuBefore;
  const turns = bench.simRequests(MODEL) - turnsBefore;
  const page = await bench.client.listEpisodes({ run_id: runId, limit: 500 });
  const sampledTokens = page.episodes.reduce((n, e) => n + (e.completion_tokens ?? 0), 0);
  return {
    cpuMsPerTurn: cpuMs / turns,
    turnsPerS: turns / (wallMs / 1000),
    cpuMs,
    wallMs,
    sampledTokens,
  };
}

export async function measureTokenIn(
  bench: BenchStack,
  options: { groups: number; repeats: number },
): Promise<TokenInResult> {
  const runs: TokenInResult["runs"] = [];
  for (let r = 0; r < options.repeats; r++) {
    // Rotate the order, so warm-up and drift fall on every variant.
    const order: Variant[] = (["chat", "tokens", "opd"] as const).map(
      (_, i, all) => all[(i + r) % all.length] as Variant,
    );
    const run = {} as TokenInResult["runs"][number];
    for (const variant of order)
      run[variant] = await measure(
        bench,
        `bench-token-in-${variant}-${r}`,
        options.groups,
        variant,
      );
    runs.push(run);
  }
  const per = (f: (run: TokenInResult["runs"][number]) => number) => over(runs, f);
  return {
    groups: options.groups,
    repeats: options.repeats,
    completionTokens: 256,
    chatCpuMsPerTurn: per((r) => r.chat.cpuMsPerTurn),
    tokensCpuMsPerTurn: per((r) => r.tokens.cpuMsPerTurn),
    cpuRatio: per((r) => r.tokens.cpuMsPerTurn / r.chat.cpuMsPerTurn),
    chatTurnsPerS: per((r) => r.chat.turnsPerS),
    tokensTurnsPerS: per((r) => r.tokens.turnsPerS),
    throughputRatio: per((r) => r.tokens.turnsPerS / r.chat.turnsPerS),
    teacherCpuUsPerToken: per((r) => ((r.opd.cpuMs - r.tokens.cpuMs) * 1000) / r.opd.sampledTokens),
    teacherWallUsPerToken: per(
      (r) => ((r.opd.wallMs - r.tokens.wallMs) * 1000) / r.opd.sampledTokens,
    ),
    runs,
  };
}
