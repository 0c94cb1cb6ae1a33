/**
 * bench/results.json: every figure of one run. A repeated figure is three keys, its median
 * (`name`), every repeat (`name_runs`) and its spread (`name_spread`, [min, max]); by-C figures
 * are objects keyed by C. `details` keeps each part's own record, repeats and all.
 */
import { execFileSync } from "node:child_process";
import { resolve } from "node:path";
import type { BusyResult } from "./busy-fleet";
import type { FleetResult } from "./fleet";
import type { GrowthResult } from "./growth";
import type { IdealPoint } from "./ideal";
import type { LandingResult } from "./landing";
import { describeMachine, type Machine } from "./machine";
import type { MachineShare } from "./machine-share";
import type { OverheadResult } from "./overhead";
import type { RemoteStepResult } from "./remote-env";
import { keysOf, type Repeated, repeated } from "./repeats";
import type { SignalShareResult } from "./signal-share";
import { pointsAt, rssOverFloor, type Side, type SweepResult } from "./sweep";
import type { SyncResult } from "./sync-stall";
import type { TokenInResult } from "./token-in";
import type { TokenCpuResult } from "./tokens";

/** Nearest-rank p50 and p99 of some measurements. */
function percentiles(values: readonly number[]): { p50: number | null; p99: number | null } {
  const sorted = [...values].sort((a, b) => a - b);
  const rank = (p: number) => sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)] ?? null;
  return { p50: rank(0.5), p99: rank(0.99) };
}

export interface BenchReport {
  quick: boolean;
  seconds: number;
  /** Streamed completions, the default. */
  overhead: OverheadResult;
  /** The same with INFERENCE_STREAM=false. */
  unstreamed: OverheadResult;
  /** Streamed, with wrangler dev's local trace of every call left on (wrangler's default). */
  traced: OverheadResult;
  /** The ideal ratios, the pipeline and the floor Worker alternated in fresh processes. */
  sweep: SweepResult;
  growth: GrowthResult;
  landing: LandingResult;
  tokens: TokenCpuResult;
  /** Built-in guess-number against its Python twin over HTTP, same transcripts. */
  remote: RemoteStepResult;
  /** Token-in generation against chat mode, and teacher scoring's cost per sampled token. */
  tokenIn: TokenInResult;
  /** edgeroll's routing over simulated hosts against round robin and one big host. */
  fleet: FleetResult;
  /** A weight sync's stall, held against interrupted. */
  sync: SyncResult;
  /** The hosts' busy share over an asynchronous training loop, held against interrupted. */
  busy: BusyResult;
  /** Examples with signal, produced server side without and with dynamic sampling. */
  signal: SignalShareResult;
  machine: Machine;
  share: MachineShare;
}

const ROOT = resolve(import.meta.dirname, "..");

/** The commit measured, and whether files other than the bench's outputs differed from it. */
export function commitMeasured(): { commit: string; dirty: boolean } {
  const git = (...args: string[]) =>
    execFileSync("git", args, { cwd: ROOT, encoding: "utf8" }).trim();
  try {
    const changed = git("status", "--porcelain")
      .split("\n")
      .filter((l) => l.trim() !== "")
      .filter((l) => !/docs\/benchmarks\.md|bench\/results\.json/.test(l));
    return { commit: git("rev-parse", "--short=12", "HEAD"), dirty: changed.length > 0 };
  } catch {
    return { commit: "unknown", dirty: true };
  }
}

type ByC<T> = Record<string, T>;

/** A repeated figure by C, as results.json keeps it: medians, runs and spreads, keyed by C. */
function byC(
  sweep: SweepResult,
  side: Side,
  f: (p: IdealPoint) => number | null,
): { median: ByC<number | null>; runs: ByC<number[]>; spread: ByC<[number, number] | null> } {
  const out = {
    median: {} as ByC<number | null>,
    runs: {} as ByC<number[]>,
    spread: {} as ByC<[number, number] | null>,
  };
  for (const c of sweep.concurrencies) {
    const figure = repeated(pointsAt(sweep, side, c).map((p) => f(p) ?? Number.NaN));
    const keys = keysOf("x", figure);
    out.median[c] = keys.x;
    out.runs[c] = keys.x_runs;
    out.spread[c] = keys.x_spread;
  }
  return out;
}

function withByC<N extends string>(name: N, figure: ReturnType<typeof byC>) {
  return {
    [name]: figure.median,
    [`${name}_runs`]: figure.runs,
    [`${name}_spread`]: figure.spread,
  } as Record<N, ByC<number | null>> &
    Record<`${N}_runs`, ByC<number[]>> &
    Record<`${N}_spread`, ByC<[number, number] | null>>;
}

/** A figure of one side at one C over the rounds, or null when that C was not measured. */
function at(sweep: SweepResult, side: Side, c: number, f: (p: IdealPoint) => number | null) {
  if (!sweep.concurrencies.includes(c)) return null;
  return repeated(pointsAt(sweep, side, c).map((p) => f(p) ?? Number.NaN));
}

/** Per round, the pipeline's p99 turn overhead at C over the floor's in the same round. */
function p99OverFloor(sweep: SweepResult, c: number): number[] {
  const pipeline = pointsAt(sweep, "pipeline", c);
  const floor = pointsAt(sweep, "floor", c);
  return pipeline.flatMap((p, round) => {
    const f = floor[round]?.overheadMsP99;
    return p.overheadMsP99 === null || f === null || f === undefined ? [] : [p.overheadMsP99 - f];
  });
}

const peaks = (sweep: SweepResult, side: Side): Repeated =>
  repeated(sweep.processes.filter((p) => p.side === side).map((p) => p.peakRssMb));

export function resultsJson(report: BenchReport) {
  const { sweep } = report;
  const p99 = (p: IdealPoint) => p.overheadMsP99;
  const p50 = (p: IdealPoint) => p.overheadMsP50;
  const laterP99 = (p: IdealPoint) => p.overheadMsP99LaterTurns;
  const firstTurnShare = (p: IdealPoint) => p.firstTurnShareOfTail;
  const measured = commitMeasured();
  return {
    ...keysOf("overhead_ratio", report.overhead.overheadRatio),
    ...keysOf("cpu_ms_per_turn", report.overhead.cpuMsPerTurn),
    ...keysOf("overhead_ratio_unstreamed", report.unstreamed.overheadRatio),
    ...keysOf("cpu_ms_per_turn_unstreamed", report.unstreamed.cpuMsPerTurn),
    ...keysOf("overhead_ratio_local_traces", report.traced.overheadRatio),
    ...keysOf("cpu_ms_per_turn_local_traces", report.traced.cpuMsPerTurn),
    ...withByC(
      "ideal_ratio",
      byC(sweep, "pipeline", (p) => p.ratio),
    ),
    ...withByC(
      "ideal_ratio_end_to_end",
      byC(sweep, "pipeline", (p) => p.endToEndRatio),
    ),
    ...withByC(
      "floor_ideal_ratio",
      byC(sweep, "floor", (p) => p.ratio),
    ),
    ...withByC("overhead_ms_p50_by_c", byC(sweep, "pipeline", p50)),
    ...withByC("overhead_ms_p99_by_c", byC(sweep, "pipeline", p99)),
    ...withByC("floor_overhead_ms_p50_by_c", byC(sweep, "floor", p50)),
    ...withByC("floor_overhead_ms_p99_by_c", byC(sweep, "floor", p99)),
    ...withByC(
      "workerd_cpu_ms_per_turn_by_c",
      byC(sweep, "pipeline", (p) => p.cpuMsPerTurn),
    ),
    ...withByC(
      "floor_cpu_ms_per_turn_by_c",
      byC(sweep, "floor", (p) => p.cpuMsPerTurn),
    ),
    ...keysOf(
      "floor_ideal_ratio_1024",
      at(sweep, "floor", 1024, (p) => p.ratio),
    ),
    ...keysOf("overhead_ms_p50_256", at(sweep, "pipeline", 256, p50)),
    ...keysOf("overhead_ms_p99_256", at(sweep, "pipeline", 256, p99)),
    ...keysOf("floor_overhead_ms_p50_256", at(sweep, "floor", 256, p50)),
    ...keysOf("floor_overhead_ms_p99_256", at(sweep, "floor", 256, p99)),
    ...keysOf("overhead_ms_p99_256_over_floor", repeated(p99OverFloor(sweep, 256))),
    ...keysOf("overhead_ms_p99_256_later_turns", at(sweep, "pipeline", 256, laterP99)),
    ...keysOf("floor_overhead_ms_p99_256_later_turns", at(sweep, "floor", 256, laterP99)),
    ...keysOf("tail_first_turn_share_256", at(sweep, "pipeline", 256, firstTurnShare)),
    ...keysOf("floor_tail_first_turn_share_256", at(sweep, "floor", 256, firstTurnShare)),
    ...keysOf("peak_rss_mb", peaks(sweep, "pipeline")),
    ...keysOf("floor_peak_rss_mb", peaks(sweep, "floor")),
    ...keysOf("rss_over_floor_mb", repeated(rssOverFloor(sweep))),
    ...keysOf("landing_groups_per_s", report.landing.landingGroupsPerS),
    ...keysOf("landing_groups_per_s_tokens", report.landing.landingGroupsPerSTokens),
    ...keysOf("landing_groups_per_s_tokens_r2_bound", report.landing.landingGroupsPerSTokensBound),
    ...keysOf("serving_episodes_per_s", report.landing.servingEpisodesPerS),
    ...keysOf("token_serving_ratio", report.landing.tokenServingRatio),
    ...keysOf("r2_local_puts_per_s", report.landing.r2PutsPerS),
    ...keysOf("r2_local_gets_per_s", report.landing.r2GetsPerS),
    ...keysOf("token_cpu_ratio", report.tokens.ratio),
    ...keysOf("token_cpu_ms_per_turn", report.tokens.cpuMsPerTurnWith),
    ...keysOf("remote_step_cpu_ratio", report.remote.cpuRatio),
    ...keysOf("remote_step_cpu_ms_per_turn", report.remote.remoteCpuMsPerTurn),
    ...keysOf("builtin_step_cpu_ms_per_turn", report.remote.builtInCpuMsPerTurn),
    ...keysOf("remote_step_turn_ms", report.remote.remoteTurnMs),
    ...keysOf("builtin_step_turn_ms", report.remote.builtInTurnMs),
    ...keysOf("token_in_cpu_ratio", report.tokenIn.cpuRatio),
    ...keysOf("token_in_cpu_ms_per_turn", report.tokenIn.tokensCpuMsPerTurn),
    ...keysOf("chat_cpu_ms_per_turn", report.tokenIn.chatCpuMsPerTurn),
    ...keysOf("token_in_throughput_ratio", report.tokenIn.throughputRatio),
    ...keysOf("token_in_turns_per_s", report.tokenIn.tokensTurnsPerS),
    ...keysOf("chat_turns_per_s", report.tokenIn.chatTurnsPerS),
    ...keysOf("teacher_cpu_us_per_token", report.tokenIn.teacherCpuUsPerToken),
    ...keysOf("teacher_wall_us_per_token", report.tokenIn.teacherWallUsPerToken),
    ...keysOf("fleet_cache_hit_ratio", report.fleet.fleetCacheHitRatio),
    ...keysOf("round_robin_cache_hit_ratio", report.fleet.roundRobinCacheHitRatio),
    ...keysOf("edgeroll_hit_rate", report.fleet.hitRates.edgeroll),
    ...keysOf("round_robin_hit_rate", report.fleet.hitRates.roundRobin),
    ...keysOf("one_host_hit_rate", report.fleet.hitRates.oneHost),
    ...keysOf("fleet_balance", report.fleet.fleetBalance),
    ...keysOf("fleet_throughput_ratio", report.fleet.fleetThroughputRatio),
    ...keysOf("edgeroll_episodes_per_s", report.fleet.episodesPerS.edgeroll),
    ...keysOf("round_robin_episodes_per_s", report.fleet.episodesPerS.roundRobin),
    // Each sync's stall (pause to nothing in flight): p50 and p99 over the repeats (with a
    // handful of repeats, p99 is the largest).
    sync_stall_ms: {
      hold: percentiles(report.sync.holdStallMs.runs),
      interrupt: percentiles(report.sync.interruptStallMs.runs),
    },
    ...keysOf("sync_stall_ratio", report.sync.stallRatio),
    ...keysOf("interrupt_discarded_tokens", report.sync.discardedTokens),
    ...keysOf("interrupt_kept_tokens", report.sync.keptTokens),
    ...keysOf("interrupt_tokens_lost", report.sync.lostTokens),
    ...keysOf("interrupt_tokens_cut_off", report.sync.cutOffTokens),
    fleet_busy_fraction: { hold: report.busy.hold.median, interrupt: report.busy.interrupt.median },
    ...keysOf("fleet_busy_fraction_hold", report.busy.hold),
    ...keysOf("fleet_busy_fraction_interrupt", report.busy.interrupt),
    ...keysOf("busy_stall_ms_hold", report.busy.holdStallMs),
    ...keysOf("busy_stall_ms_interrupt", report.busy.interruptStallMs),
    signal_share: { plain: report.signal.plain.median, dynamic: report.signal.dynamic.median },
    ...keysOf("signal_share_plain", report.signal.plain),
    ...keysOf("signal_share_dynamic", report.signal.dynamic),
    ...keysOf("signal_plain_uniform_share", report.signal.plainUniformShare),
    ...keysOf("signal_generation_ratio", report.signal.generationRatio),
    // Counts, not timings: a run that loses an episode has lost it.
    failover_lost_episodes: report.fleet.failoverLostEpisodes,
    failover_episodes: report.fleet.failoverEpisodes,
    // Bytes, not timings: the same seeds store the same bytes, so one run measures them.
    token_bytes_per_token: report.growth.tokenBytesPerToken,
    growth: report.growth,
    details: {
      overhead: report.overhead,
      unstreamed: report.unstreamed,
      traced: report.traced,
      sweep: report.sweep,
      landing: report.landing,
      tokens: report.tokens,
      remote: report.remote,
      tokenIn: report.tokenIn,
      fleet: report.fleet,
      sync: report.sync,
      busy: report.busy,
      signal: report.signal,
    },
    machine: describeMachine(report.machine),
    machine_detail: report.machine,
    machine_share: report.share,
    commit: measured.commit,
    commit_dirty: measured.dirty,
    date: new Date().toISOString(),
    seconds: report.seconds,
    quick: report.quick,
  };
}

export type Results = ReturnType<typeof resultsJson>;
