/** The bench's outputs: the printed table, bench/results.json and docs/benchmarks.md. */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, totalmem } from "node:os";
import { resolve } from "node:path";
import type { FloorPoint } from "./floor-point";
import type { GrowthResult } from "./growth";
import type { IdealPoint } from "./ideal";
import type { LandingResult } from "./landing";
import type { OverheadResult } from "./overhead";
import type { RemoteStepResult } from "./remote-env";
import type { TokenInResult } from "./token-in";
import type { TokenCpuResult } from "./tokens";

export interface BenchReport {
  quick: boolean;
  seconds: number;
  /** Streamed completions, the default. */
  overhead: OverheadResult;
  /** The same with INFERENCE_STREAM=false. */
  unstreamed: OverheadResult;
  /** Streamed, with wrangler dev's local trace of every call left on (wrangler's default). */
  traced: OverheadResult;
  ideal: IdealPoint[];
  growth: GrowthResult;
  landing: LandingResult;
  tokens: TokenCpuResult;
  /** Built-in guess-number against its Python twin over HTTP, same transcripts. */
  remote: RemoteStepResult;
  /** Token-in generation against chat mode, and teacher scoring's cost per sampled token. */
  tokenIn: TokenInResult;
  /** The C = 1,024 floor Worker, measured in the same run (full runs only). */
  floor: FloorPoint | null;
}

const ROOT = resolve(import.meta.dirname, "..");
const NOTES_MARKER = "<!-- Notes below this line are kept when the bench rewrites the file. -->";

export function machine(): string {
  const cpu = cpus();
  return `${cpu.length} × ${cpu[0]?.model ?? "unknown CPU"}, ${Math.round(totalmem() / 2 ** 30)} GB RAM, Node ${process.version}, ${process.platform}`;
}

/** The keys trainers' dashboards and the issue tracker read. */
export function resultsJson(report: BenchReport) {
  const at = (c: number) => report.ideal.find((p) => p.concurrency === c);
  const headline = at(256) ?? report.ideal.at(-1);
  return {
    overhead_ratio: report.overhead.overheadRatio,
    cpu_ms_per_turn: report.overhead.cpuMsPerTurn,
    overhead_ratio_unstreamed: report.unstreamed.overheadRatio,
    cpu_ms_per_turn_unstreamed: report.unstreamed.cpuMsPerTurn,
    overhead_ratio_local_traces: report.traced.overheadRatio,
    cpu_ms_per_turn_local_traces: report.traced.cpuMsPerTurn,
    ideal_ratio: Object.fromEntries(report.ideal.map((p) => [String(p.concurrency), p.ratio])),
    ideal_ratio_end_to_end: Object.fromEntries(
      report.ideal.map((p) => [String(p.concurrency), p.endToEndRatio]),
    ),
    overhead_ms_p50: headline?.overheadMsP50 ?? null,
    overhead_ms_p99: headline?.overheadMsP99 ?? null,
    overhead_ms_by_c: Object.fromEntries(
      report.ideal.map((p) => [
        String(p.concurrency),
        { p50: p.overheadMsP50, p99: p.overheadMsP99 },
      ]),
    ),
    landing_groups_per_s: report.landing.landingGroupsPerS,
    landing_groups_per_s_tokens: report.landing.landingGroupsPerSTokens,
    landing_groups_per_s_tokens_r2_bound: report.landing.landingGroupsPerSTokensBound,
    serving_episodes_per_s: report.landing.servingEpisodesPerS,
    token_serving_ratio: report.landing.tokenServingRatio,
    token_cpu_ratio: report.tokens.ratio,
    token_cpu_ms_per_turn: report.tokens.cpuMsPerTurnWith,
    token_bytes_per_token: report.growth.tokenBytesPerToken,
    remote_step_cpu_ratio: report.remote.cpuRatio,
    remote_step_cpu_ms_per_turn: report.remote.remoteCpuMsPerTurn,
    builtin_step_cpu_ms_per_turn: report.remote.builtInCpuMsPerTurn,
    remote_step_turn_ms: report.remote.remoteTurnMs,
    builtin_step_turn_ms: report.remote.builtInTurnMs,
    token_in_cpu_ratio: report.tokenIn.cpuRatio,
    token_in_cpu_ms_per_turn: report.tokenIn.tokensCpuMsPerTurn,
    chat_cpu_ms_per_turn: report.tokenIn.chatCpuMsPerTurn,
    token_in_throughput_ratio: report.tokenIn.throughputRatio,
    token_in_turns_per_s: report.tokenIn.tokensTurnsPerS,
    chat_turns_per_s: report.tokenIn.chatTurnsPerS,
    teacher_cpu_us_per_token: report.tokenIn.teacherCpuUsPerToken,
    teacher_wall_us_per_token: report.tokenIn.teacherWallUsPerToken,
    r2_local_puts_per_s: report.landing.r2PutsPerS,
    r2_local_gets_per_s: report.landing.r2GetsPerS,
    peak_rss_mb: Math.max(...report.ideal.map((p) => p.peakRssMb)),
    floor_ideal_ratio_1024: report.floor?.ratio ?? null,
    floor_peak_rss_mb: report.floor?.peakRssMb ?? null,
    growth: report.growth,
    details: {
      overhead: report.overhead,
      unstreamed: report.unstreamed,
      traced: report.traced,
      ideal: report.ideal,
      landing: report.landing,
      tokens: report.tokens,
      remote: report.remote,
      tokenIn: report.tokenIn,
      floor: report.floor,
    },
    machine: machine(),
    date: new Date().toISOString(),
    seconds: report.seconds,
    quick: report.quick,
  };
}

type Results = ReturnType<typeof resultsJson>;

const fmt = (n: number | null | undefined, digits = 2) =>
  n === null || n === undefined || !Number.isFinite(n) ? "—" : n.toFixed(digits);

function rows(r: Results): [string, string, string, boolean | null][] {
  const ideal = (c: string, target: number | null): [string, string, string, boolean | null] => {
    const v = r.ideal_ratio[c];
    return [
      `Achieved / ideal, C = ${c}`,
      fmt(v),
      target === null ? "—" : `≥ ${target}`,
      v === undefined || target === null ? null : v >= target,
    ];
  };
  return [
    [
      "Overhead ratio, pipeline / in-process",
      fmt(r.overhead_ratio),
      "≥ 0.5",
      r.overhead_ratio >= 0.5,
    ],
    ["workerd CPU per turn (ms)", fmt(r.cpu_ms_per_turn), "< 2", r.cpu_ms_per_turn < 2],
    [
      "… with INFERENCE_STREAM=false: overhead ratio",
      fmt(r.overhead_ratio_unstreamed),
      "≥ 0.5",
      r.overhead_ratio_unstreamed >= 0.5,
    ],
    [
      "… with INFERENCE_STREAM=false: CPU per turn (ms)",
      fmt(r.cpu_ms_per_turn_unstreamed),
      "< 2",
      r.cpu_ms_per_turn_unstreamed < 2,
    ],
    [
      "… with wrangler's local traces on: overhead ratio",
      fmt(r.overhead_ratio_local_traces),
      "—",
      null,
    ],
    [
      "… with wrangler's local traces on: CPU per turn (ms)",
      fmt(r.cpu_ms_per_turn_local_traces),
      "—",
      null,
    ],
    ideal("8", null),
    ideal("64", null),
    ideal("256", 0.9),
    ideal("1024", 0.75),
    ["… the platform floor at C = 1024 (same run)", fmt(r.floor_ideal_ratio_1024), "—", null],
    ["Pipeline overhead per turn, p50 (ms)", fmt(r.overhead_ms_p50, 0), "—", null],
    ["Pipeline overhead per turn, p99 (ms)", fmt(r.overhead_ms_p99, 0), "—", null],
    [
      "Landing (groups of 8 per s, durable)",
      fmt(r.landing_groups_per_s, 0),
      "≥ 600",
      r.landing_groups_per_s >= 600,
    ],
    [
      "Serving (episodes per s, lease + ack)",
      fmt(r.serving_episodes_per_s, 0),
      "≥ 5000",
      r.serving_episodes_per_s >= 5000,
    ],
    [
      "Landing with tokens (groups of 8 per s: R2 object, then D1)",
      fmt(r.landing_groups_per_s_tokens, 0),
      "≥ 600",
      r.landing_groups_per_s_tokens >= 600,
    ],
    [
      "… at the local R2's own pace (one put per group + D1)",
      fmt(r.landing_groups_per_s_tokens_r2_bound, 0),
      "—",
      null,
    ],
    [
      "Token CPU ratio, per turn with tokens / without (256-token completions)",
      fmt(r.token_cpu_ratio),
      "≤ 1.25",
      r.token_cpu_ratio <= 1.25,
    ],
    [
      "Token bytes per token (R2 object / tokens held)",
      fmt(r.token_bytes_per_token),
      "≤ 10",
      r.token_bytes_per_token <= 10,
    ],
    [
      "Token serving ratio, base64 tokens / without",
      fmt(r.token_serving_ratio),
      "≥ 0.5",
      r.token_serving_ratio >= 0.5,
    ],
    [
      "Remote step: workerd CPU per turn, Python guess-number over HTTP / built-in",
      fmt(r.remote_step_cpu_ratio),
      "—",
      null,
    ],
    [
      "… a turn's latency, remote / built-in (ms, simulator answering at once)",
      `${fmt(r.remote_step_turn_ms, 1)} / ${fmt(r.builtin_step_turn_ms, 1)}`,
      "—",
      null,
    ],
    [
      "Token-in: workerd CPU per turn, generation tokens / chat (256-token completions)",
      fmt(r.token_in_cpu_ratio),
      "—",
      null,
    ],
    [
      "… turns per second end to end, tokens / chat",
      `${fmt(r.token_in_throughput_ratio)} (${fmt(r.token_in_turns_per_s, 0)} / ${fmt(r.chat_turns_per_s, 0)})`,
      "—",
      null,
    ],
    [
      "Teacher scoring (OPD): workerd CPU / wall time added per sampled token (µs)",
      `${fmt(r.teacher_cpu_us_per_token, 1)} / ${fmt(r.teacher_wall_us_per_token, 1)}`,
      "—",
      null,
    ],
    ["Peak workerd RSS (MB)", fmt(r.peak_rss_mb, 0), "< 512", r.peak_rss_mb < 512],
    [
      "… the platform floor's peak RSS at C = 1024 (same run)",
      fmt(r.floor_peak_rss_mb, 0),
      "—",
      null,
    ],
  ];
}

export function printTable(r: Results): void {
  const table = rows(r).map(([name, value, target, met]) => ({
    figure: name,
    measured: value,
    target,
    met: met === null ? "" : met ? "yes" : "NO",
  }));
  console.table(table);
  console.table(
    r.growth.rows
      .filter((g) => [1, 10, 25, 50].includes(g.turn) || g.turn === r.growth.turns)
      .map((g) => ({
        turn: g.turn,
        "stored B": g.storedBytes,
        "to step worker B": g.stepCallBytes,
        "to inference B": g.inferenceBytes,
        "token B": g.tokenBytes,
      })),
  );
}

export function writeOutputs(r: Results, command: string): void {
  writeFileSync(resolve(ROOT, "bench/results.json"), `${JSON.stringify(r, null, 2)}\n`);
  const path = resolve(ROOT, "docs/benchmarks.md");
  const old = existsSync(path) ? readFileSync(path, "utf8") : "";
  const notes = old.includes(NOTES_MARKER)
    ? old.slice(old.indexOf(NOTES_MARKER) + NOTES_MARKER.length)
    : "\n";
  const p = (c: string) => r.overhead_ms_by_c[c];
  const growthRows = r.growth.rows.filter((g) => [1, 10, 25, 50].includes(g.turn));
  const text = `# Benchmarks

Written by \`${command}\` on ${r.date.slice(0, 10)} in ${fmt(r.seconds, 0)} s.
Machine: ${r.machine}. One local workerd (\`wrangler dev\`, local D1) and the simulator share it.
Figures are medians of repeated runs (one steady-state window per C for the ideal ratios) and ratios
measured in the same run, because the machine is shared and noisy. Raw figures:
[bench/results.json](../bench/results.json).

| Figure | Measured | Target | Met |
|---|---:|---:|:-:|
${rows(r)
  .map(
    ([name, value, target, met]) =>
      `| ${name} | ${value} | ${target} | ${met === null ? "" : met ? "yes" : "**no**"} |`,
  )
  .join("\n")}

What each figure is:
- **Overhead ratio**: turns per second of the full pipeline (HTTP trigger, group Durable Object, step and score workers, D1 landing) divided by the SDK's own episode loop in one Node process, same guess-number groups, seeds and simulator at latency 0, completions streamed as by default (${fmt(r.details.overhead.pipelineTurnsPerS, 0)} vs ${fmt(r.details.overhead.inProcessTurnsPerS, 0)} turns/s, ${r.details.overhead.groups} groups of 8).
- **workerd CPU per turn**: CPU time of the workerd process (every worker, object and local D1) over the pipeline run, divided by the turns played.
- **… with INFERENCE_STREAM=false**: the same two figures with one body per completion instead of a stream (the reference loop also unstreamed), in a second stack (${fmt(r.details.unstreamed.pipelineTurnsPerS, 0)} vs ${fmt(r.details.unstreamed.inProcessTurnsPerS, 0)} turns/s). Streaming is the default because it keeps long generations alive through proxies that cut silent connections.
- **… with wrangler's local traces on**: the streamed figures again, in a third stack where wrangler dev records its local trace of every call, as it does by default (${fmt(r.details.traced.pipelineTurnsPerS, 0)} vs ${fmt(r.details.traced.inProcessTurnsPerS, 0)} turns/s). edgeroll's local stack turns that off ([development.md](development.md#local-traces)); every other figure is measured without it.
- **Achieved / ideal**: with every generation taking 1 s at the host, C episodes can make at most C turns per second; this is the rate in steady state (from 1 s after the last group started to 2 s before the last landed) over C (end to end, including start and the landing tail: ${Object.entries(
    r.ideal_ratio_end_to_end,
  )
    .map(([c, v]) => `C=${c} ${fmt(v)}`)
    .join(", ")}).
- **Pipeline overhead per turn**: the host's view of the time between finishing an episode's generation and receiving its next request, at C = 256 (by C: ${Object.keys(
    r.overhead_ms_by_c,
  )
    .map((c) => `C=${c} p50 ${fmt(p(c)?.p50, 0)} / p99 ${fmt(p(c)?.p99, 0)} ms`)
    .join("; ")}).
- **Landing**: scored groups of 8 episodes of about 256 tokens, landed durably in D1 through the lander per second (${r.details.landing.groups} groups at once, ${r.details.landing.repeats} repeats). The reference is an in-memory, non-durable trajectory server of a popular peer, measured at about 311 such groups per second on this machine kind.
- **Serving**: episodes per second leased (whole groups with transcripts, 50 groups per lease) and acked through the API.
- **Peak workerd RSS**: the largest resident set of the workerd process, sampled every 250 ms while up to 1,024 episodes are in flight.
- **The platform floor at C = 1024**: \`bench/floor/\`, a Worker that makes only the platform calls of an edgeroll turn (a streamed fetch, a step on an RpcTarget session, the same statements in shared write turns) and none of edgeroll's own work, run at C = 1,024 in the same run, in a fresh process (its peak RSS: ${fmt(r.floor_peak_rss_mb, 0)} MB). The distance between the pipeline's figure and this one is edgeroll's share; the rest is the platform's, locally.
- **Landing with tokens**: the same groups as *Landing*, each turn also carrying its token ids and logprobs (about 256 tokens an episode): each group's token object is put in R2, then its rows go through the lander (${fmt(r.details.landing.landingGroupsPerSTokens, 0)} groups/s). Locally R2 is miniflare's emulation, which serves one operation at a time: in the same run it took ${fmt(r.r2_local_puts_per_s, 0)} puts/s of objects that size on its own, so one put per group on top of the text landing bounds the figure at ${fmt(r.landing_groups_per_s_tokens_r2_bound, 0)} groups/s. Deployed, each group writes its own object from its own Durable Object, in parallel.
- **Token CPU ratio**: workerd CPU per turn with tokens over the same marathon groups with \`tokens: "off"\` (8 turns, 256-token completions, same seeds, alternating order; ${fmt(r.details.tokens.cpuMsPerTurnWith)} vs ${fmt(r.details.tokens.cpuMsPerTurnWithout)} ms): asking for the token fields, reading them from the stream, storing each turn's tokens and landing the token object.
- **Token bytes per token**: the growth episode's token object over the tokens it holds (each turn's new prompt tokens and its completion): 4 bytes per id, 4 per completion logprob, and a JSON header of about 120 bytes per turn.
- **Remote step**: the same guess-number groups (same seeds, so the same transcripts) against the built-in environment and against its Python twin served over HTTP by \`python3 -m edgeroll_env serve\` and registered by REMOTE_ENVS (${r.details.remote.groups} groups of 8, ${r.details.remote.repeats} repeats, alternating order): workerd CPU per turn, ${fmt(r.details.remote.remoteCpuMsPerTurn)} vs ${fmt(r.details.remote.builtInCpuMsPerTurn)} ms, is what the step's HTTP call (and its schema check) costs the platform in place of running the code in the step worker; the Python process's own CPU is not counted. A turn's latency is an episode's wall time over its turns, the median over the run's episodes, with the simulator answering at once.
- **Token-in**: the same marathon groups (8 turns, 256-token completions, same seeds, rotating order) with \`generation: "chat"\` and \`"tokens"\` (${r.details.tokenIn.groups} groups of 8, ${r.details.tokenIn.repeats} repeats): workerd CPU per turn, ${fmt(r.details.tokenIn.tokensCpuMsPerTurn)} vs ${fmt(r.details.tokenIn.chatCpuMsPerTurn)} ms, and end-to-end turns per second with the simulator answering at once. A token-in turn makes two calls to the host (\`/tokenize\` for the new messages' ids, then \`/v1/completions\` with the prompt as ids) where a chat turn makes one, and sends the whole prompt as a list of ids.
- **Teacher scoring**: the same token-in groups with \`algorithm: "opd"\` (the simulator's teacher scores each episode's sample with \`prompt_logprobs\`) over the token-in run without: the extra workerd CPU, and the extra wall time of the whole run, divided by the sampled tokens the teacher scored.
- **Token serving ratio**: lease and ack of the same token-exact episodes, with base64 token samples (\`include: ["tokens"]\`) over without (\`messages\`, \`per_turn\`): each lease reads one R2 object per group and builds the samples.

## Growth with episode length

Marathon episodes of ${r.growth.turns} turns with ${r.growth.replyBytes}-byte replies, bytes per turn at a given turn index:

| Turn | Stored in the object | Moved to D1 (once, at landing) | Token bytes (R2, once) | Moved to the step worker (transcript so far) | Inference request (prompt) |
|---:|---:|---:|---:|---:|---:|
${growthRows.map((g) => `| ${g.turn} | ${g.storedBytes} | ${g.storedBytes} | ${g.tokenBytes} | ${g.stepCallBytes} | ${g.inferenceBytes} |`).join("\n")}

Stored bytes per turn stay flat, token bytes too — a turn stores only the prompt tokens after what the previous turn left (the environment's reply and the template's glue) and its completion — so storage grows linearly with the transcript (token object: ${r.growth.tokenObjectBytes} bytes for ${r.growth.tokensHeld} tokens, ${fmt(r.growth.tokenBytesPerToken)} bytes per token; the transcript: ${r.growth.storedTotal} bytes for the whole episode, landed in D1 once). The step call carries the whole transcript because environments rebuild their state by replaying it, so it grows with the turn index and its total over an episode is quadratic (${r.growth.stepCallTotal} bytes, ${fmt(r.growth.stepCallTotal / r.growth.storedTotal, 1)}× the transcript); it travels over a Worker-to-Worker RPC inside one location, never to D1, and is the same size as the prompt the inference host must receive anyway.

## Commands

- \`npm run bench\`: everything above (under 10 minutes); rewrites this file and bench/results.json.
- \`npm run bench -- --quick\`: a reduced run in under 90 s, printed only (CI runs it).
- \`npm run bench:floor\`: the C = 1,024 run alternated with a Worker that makes only a turn's platform calls, in fresh processes (notes below).

${NOTES_MARKER}${notes}`;
  writeFileSync(path, text);
}
