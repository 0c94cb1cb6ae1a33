/**
 * The bench's outputs: the printed table, bench/results.json and docs/benchmarks.md, written
 * whole from the results of one run and nothing else (`tsx bench/report.ts` writes the document
 * again from bench/results.json). Method notes are text here; every figure is read from results.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import {
  atLeast,
  atMost,
  type Figure,
  figure,
  figureAt,
  fmt,
  type Target,
  under,
  verdict,
  withSpread,
} from "./report-figures";
import { fleetFigures, fleetSection } from "./report-fleet";
import { memoryAndTail } from "./report-targets";
import type { Results } from "./results";

const ROOT = resolve(import.meta.dirname, "..");
const RESULTS = resolve(ROOT, "bench/results.json");
const DOC = resolve(ROOT, "docs/benchmarks.md");

type Row = [name: string, f: Figure, target: Target | null, digits?: number];

function rows(r: Results): Row[] {
  const c = (key: string, at: number) => figureAt(r, key, at);
  return [
    ["Overhead ratio, pipeline / in-process", figure(r, "overhead_ratio"), atLeast(0.5)],
    ["workerd CPU per turn (ms)", figure(r, "cpu_ms_per_turn"), under(2)],
    [
      "… with INFERENCE_STREAM=false: overhead ratio",
      figure(r, "overhead_ratio_unstreamed"),
      atLeast(0.5),
    ],
    [
      "… with INFERENCE_STREAM=false: CPU per turn (ms)",
      figure(r, "cpu_ms_per_turn_unstreamed"),
      under(2),
    ],
    [
      "… with wrangler's local traces on: overhead ratio",
      figure(r, "overhead_ratio_local_traces"),
      null,
    ],
    [
      "… with wrangler's local traces on: CPU per turn (ms)",
      figure(r, "cpu_ms_per_turn_local_traces"),
      null,
    ],
    ["Achieved / ideal, C = 8", c("ideal_ratio", 8), null],
    ["Achieved / ideal, C = 64", c("ideal_ratio", 64), null],
    ["Achieved / ideal, C = 256", c("ideal_ratio", 256), atLeast(0.9)],
    ["Achieved / ideal, C = 1024", c("ideal_ratio", 1024), atLeast(0.75)],
    ["… the floor Worker's, C = 1024", figure(r, "floor_ideal_ratio_1024"), null],
    ["Turn overhead at C = 256, p50 (ms)", figure(r, "overhead_ms_p50_256"), null, 0],
    ["Turn overhead at C = 256, p99 (ms)", figure(r, "overhead_ms_p99_256"), atMost(50), 0],
    ["… the floor Worker's p99 at C = 256 (ms)", figure(r, "floor_overhead_ms_p99_256"), null, 0],
    [
      "… the pipeline's p99 over the floor's, same round (ms)",
      figure(r, "overhead_ms_p99_256_over_floor"),
      atMost(50),
      0,
    ],
    ["Peak workerd RSS, C = 8 to 1024 in a fresh process (MB)", figure(r, "peak_rss_mb"), null, 0],
    ["… the floor Worker's, same points (MB)", figure(r, "floor_peak_rss_mb"), null, 0],
    [
      "… the pipeline's over the floor's, same round (MB)",
      figure(r, "rss_over_floor_mb"),
      atMost(128),
      0,
    ],
    ["Landing (groups of 8 per s, durable)", figure(r, "landing_groups_per_s"), atLeast(600), 0],
    [
      "Serving (episodes per s, lease + ack)",
      figure(r, "serving_episodes_per_s"),
      atLeast(5000),
      0,
    ],
    [
      "Landing with tokens (groups of 8 per s: R2 object, then D1)",
      figure(r, "landing_groups_per_s_tokens"),
      atLeast(600),
      0,
    ],
    [
      "… at the local R2's own pace (one put per group + D1)",
      figure(r, "landing_groups_per_s_tokens_r2_bound"),
      null,
      0,
    ],
    [
      "Token CPU ratio, per turn with tokens / without (256-token completions)",
      figure(r, "token_cpu_ratio"),
      atMost(1.25),
    ],
    [
      "Token serving ratio, base64 tokens / without",
      figure(r, "token_serving_ratio"),
      atLeast(0.5),
    ],
    [
      "Remote step: workerd CPU per turn, Python guess-number over HTTP / built-in",
      figure(r, "remote_step_cpu_ratio"),
      null,
    ],
    [
      "… a turn's latency, remote (ms, simulator answering at once)",
      figure(r, "remote_step_turn_ms"),
      null,
      1,
    ],
    ["… a turn's latency, built-in (ms)", figure(r, "builtin_step_turn_ms"), null, 1],
    [
      "Token-in: workerd CPU per turn, generation tokens / chat (256-token completions)",
      figure(r, "token_in_cpu_ratio"),
      null,
    ],
    ["… turns per second end to end, tokens / chat", figure(r, "token_in_throughput_ratio"), null],
    [
      "Teacher scoring (OPD): workerd CPU added per sampled token (µs)",
      figure(r, "teacher_cpu_us_per_token"),
      null,
      1,
    ],
    ["… wall time added per sampled token (µs)", figure(r, "teacher_wall_us_per_token"), null, 1],
    [
      "Fleet: prefix cache hit rate, edgeroll over one host with the whole KV",
      figure(r, "fleet_cache_hit_ratio"),
      atLeast(0.9),
    ],
    ["… round robin over one host", figure(r, "round_robin_cache_hit_ratio"), null],
    ["Fleet balance, busiest host's requests / mean", figure(r, "fleet_balance"), atMost(1.25)],
    [
      "Fleet throughput, episodes per s, edgeroll / round robin",
      figure(r, "fleet_throughput_ratio"),
      atLeast(1.5),
    ],
    [
      "Weight sync: stall interrupted / held, same stage of the generations",
      figure(r, "sync_stall_ratio"),
      atMost(0.01),
      4,
    ],
    [
      "Busy fleet: host time generating outside weight loads, interrupted syncs",
      figure(r, "fleet_busy_fraction_interrupt"),
      atLeast(0.95),
      3,
    ],
    ["… held syncs", figure(r, "fleet_busy_fraction_hold"), null, 3],
    [
      "Weight sync: tokens lost at an interrupt (streamed before the pause's request, not kept), token-in",
      figure(r, "interrupt_tokens_lost"),
      atMost(0),
      0,
    ],
    [
      "… tokens cut off (streamed after the request, before the close reached the host, not kept)",
      figure(r, "interrupt_tokens_cut_off"),
      null,
      0,
    ],
    [
      "Signal share: example-epochs with a group that has reward variance, dynamic sampling",
      figure(r, "signal_share_dynamic"),
      atLeast(0.9),
      3,
    ],
    ["… without dynamic sampling", figure(r, "signal_share_plain"), null, 3],
    ["… share of groups uniform without it", figure(r, "signal_plain_uniform_share"), null, 3],
    [
      "… episodes generated with dynamic sampling / without (its extra generation)",
      figure(r, "signal_generation_ratio"),
      null,
    ],
  ];
}

/** The weight sync's stalls: p50 and p99 over the repeats, held and interrupted. */
function syncStallRows(r: Results): string {
  const { hold, interrupt } = r.sync_stall_ms;
  const ms = (v: number | null) => (v === null ? "—" : fmt(v, 0));
  const met = interrupt.p99 === null ? "" : interrupt.p99 <= 500 ? "yes" : "**no**";
  return [
    `| Weight sync stall, held: p50 / p99 (ms, pause to nothing in flight) | ${ms(hold.p50)} / ${ms(hold.p99)} | — | |`,
    `| … interrupted: p50 / p99 (ms) | ${ms(interrupt.p50)} / ${ms(interrupt.p99)} | ≤ 500 | ${met} |`,
  ].join("\n");
}

export function printTable(r: Results): void {
  console.table(
    rows(r).map(([name, f, target, digits]) => ({
      figure: name,
      measured: withSpread(f, digits),
      target: target?.label ?? "—",
      met: verdict(f, target),
    })),
  );
  console.table(
    r.growth.rows
      .filter((g) => [1, 10, 25, 50].includes(g.turn) || g.turn === r.growth.turns)
      .map((g) => ({
        turn: g.turn,
        "object B": g.objectBytes,
        "D1 B": g.d1Bytes,
        "token B (R2)": g.tokenBytes,
        "to step worker B": g.stepCallBytes,
        "to inference B": g.inferenceBytes,
      })),
  );
}

function sharedWith(r: Results): string {
  const s = r.machine_share;
  const others = s.others
    .filter((o) => o.cpuS >= 1)
    .map((o) => `${o.command} ${fmt(o.cpuS, 0)} s`)
    .join(", ");
  const share = `${fmt(s.otherCpuS, 0)} CPU seconds over the run's ${fmt(s.seconds, 0)} s, ${fmt(s.otherCores)} cores on average`;
  return s.otherCores < 0.05
    ? `Nothing else of note used the CPU during the run (processes outside the bench's own: ${share}).`
    : `Processes outside the bench's own used ${share}${others ? ` (the largest: ${others})` : ""}; the bench's own processes used ${fmt(s.benchCpuS, 0)} CPU seconds.`;
}

function byCTable(r: Results): string {
  const cs = Object.keys(r.ideal_ratio);
  const cell = (key: string, c: string, digits = 2) => withSpread(figureAt(r, key, c), digits);
  return [
    "| C | Achieved / ideal, pipeline | floor | Turn overhead p50 / p99, pipeline (ms) | floor (ms) | workerd CPU per turn, pipeline / floor (ms) |",
    "|---:|---:|---:|---:|---:|---:|",
    ...cs.map(
      (c) =>
        `| ${c} | ${cell("ideal_ratio", c)} | ${cell("floor_ideal_ratio", c)} | ${fmt(figureAt(r, "overhead_ms_p50_by_c", c).median, 0)} / ${cell("overhead_ms_p99_by_c", c, 0)} | ${fmt(figureAt(r, "floor_overhead_ms_p50_by_c", c).median, 0)} / ${cell("floor_overhead_ms_p99_by_c", c, 0)} | ${fmt(figureAt(r, "workerd_cpu_ms_per_turn_by_c", c).median)} / ${fmt(figureAt(r, "floor_cpu_ms_per_turn_by_c", c).median)} |`,
    ),
  ].join("\n");
}

function processTable(r: Results): string {
  const sweep = r.details.sweep;
  return [
    "| Round | Process | workerd idle (MB) | Peak RSS (MB) |",
    "|---:|---|---:|---:|",
    ...sweep.processes.map(
      (p) => `| ${p.round + 1} | ${p.side} | ${fmt(p.idleRssMb, 0)} | ${fmt(p.peakRssMb, 0)} |`,
    ),
  ].join("\n");
}

function warmUps(o: Results["details"]["overhead"]): string {
  if (o.warmUpRuns.length === 0) return "no warm-up round";
  return `warm-up rounds, not counted: in-process ${o.warmUpRuns.map((w) => fmt(w.inProcessTurnsPerS, 0)).join(" → ")}, pipeline ${o.warmUpRuns.map((w) => fmt(w.pipelineTurnsPerS, 0)).join(" → ")} turns/s`;
}

export function benchmarksDoc(r: Results, command: string): string {
  const d = r.details;
  const g = r.growth;
  const growthRows = g.rows.filter((x) => [1, 10, 25, 50].includes(x.turn));
  const sweep = d.sweep;
  return `# Benchmarks

Written whole by \`${command}\` from the run it describes: commit ${r.commit}${r.commit_dirty ? " (with uncommitted changes)" : ""}, ${r.date.slice(0, 10)}, ${fmt(r.seconds, 0)} s. Every figure below is read from
[bench/results.json](../bench/results.json), which the same run wrote; nothing is kept from an
earlier run.

Machine (detected): ${r.machine}. ${sharedWith(r)}

How figures are measured. Each part warms up before it counts, runs its variants in alternated
order (A then B, then B then A; three variants rotate), repeats, and reports the median with the
spread (lowest–highest) of every repeat; each repeat is in bench/results.json (\`*_runs\`). A figure
measured once says so and is not judged against its target. Ratios compare variants measured in
the same run, on the same stack, minutes apart; absolute figures move with the machine.

| Figure | Median (spread, repeats) | Target | Met |
|---|---:|---:|:-:|
${rows(r)
  .map(
    ([name, f, target, digits]) =>
      `| ${name} | ${withSpread(f, digits)} | ${target?.label ?? "—"} | ${verdict(f, target)} |`,
  )
  .join("\n")}
| Token bytes per token (R2 object / tokens held; bytes, the same every run) | ${fmt(r.token_bytes_per_token)} | ≤ 10 | ${r.token_bytes_per_token <= 10 ? "yes" : "**no**"} |
| Episodes lost when a fleet host is killed mid-run (a count, of ${r.failover_episodes ?? "—"}) | ${r.failover_lost_episodes ?? "—"} | 0 | ${r.failover_lost_episodes === undefined ? "" : r.failover_lost_episodes === 0 ? "yes" : "**no**"} |
${syncStallRows(r)}

## The pipeline against the floor, at each C

Each round starts a fresh \`wrangler dev\` for the pipeline and another for the floor Worker, in
alternated order (${sweep.processes.map((p) => p.side).join(", ")}), and each plays the same points in the same order (C = ${sweep.concurrencies.join(", ")}; ${sweep.turns} turns an episode, every generation 1 s at the simulator). The pipeline runs with
\`MAX_INFLIGHT_GENERATIONS=${sweep.maxInflightGenerations}\`, above every C measured, so its limiter is called but never queues;
the floor has no limiter, so it never does either. Medians over ${sweep.rounds} rounds:

${byCTable(r)}

${processTable(r)}

${memoryAndTail(r)}

${fleetSection(r)}

## What each figure is

- **Overhead ratio**: turns per second of the full pipeline (HTTP trigger, group Durable Object, step and score workers, D1 landing) divided by the SDK's own episode loop in one Node process, on the same guess-number groups, seeds and simulator at latency 0, completions streamed as by default (${fmt(d.overhead.pipelineTurnsPerS.median, 0)} vs ${fmt(d.overhead.inProcessTurnsPerS.median, 0)} turns/s, ${d.overhead.groups} groups of 8). Both are warmed up first and then alternate which runs first; ${warmUps(d.overhead)}. The pipeline's side is timed from its first start to its last group landed, polled one group at a time (GET /v1/groups/:id every 100 ms).
- **workerd CPU per turn**: CPU time of the workerd process (every worker, object and local D1) over the pipeline's part of a repeat, divided by the turns played. /proc counts it in clock ticks of ${r.machine_detail.clockTicksPerSecond} per second (\`getconf CLK_TCK\`).
- **… with INFERENCE_STREAM=false**: the same two figures with one body per completion instead of a stream (the reference loop also unstreamed), in a second stack (${fmt(d.unstreamed.pipelineTurnsPerS.median, 0)} vs ${fmt(d.unstreamed.inProcessTurnsPerS.median, 0)} turns/s; ${warmUps(d.unstreamed)}).
- **… with wrangler's local traces on**: the streamed figures again, in a third stack where wrangler dev records its local trace of every call, as it does by default (${fmt(d.traced.pipelineTurnsPerS.median, 0)} vs ${fmt(d.traced.inProcessTurnsPerS.median, 0)} turns/s). edgeroll's local stack turns that off ([development.md](development.md#local-traces)); every other figure is measured without it.
- **Achieved / ideal**: with every generation taking 1 s at the host, C episodes can make at most C turns per second; this is the rate in steady state (from 1 s after the last group started to 2 s before the last landed, the least-squares slope of turns against time) over C (end to end, start and landing included: ${Object.keys(
    r.ideal_ratio_end_to_end,
  )
    .map((c) => `C=${c} ${withSpread(figureAt(r, "ideal_ratio_end_to_end", c))}`)
    .join(", ")}).
- **Turn overhead**: the host's view of the time between finishing an episode's generation and receiving its next request (the step, the writes, the queueing in between), over every turn of the point; p50 and p99 are the simulator's, per point, and the medians over rounds.
- **The floor Worker**: \`bench/floor/\`, a Worker that makes only the platform calls of an edgeroll group (a streamed fetch asking for the same fields, so the host sends the same bytes; a step on an RpcTarget session of a service; the same statements in shared write turns, each turn's token ids and logprobs in the object's SQLite, one object per group of 8; its group row in D1 when it starts and, when it ends, one R2 put of its tokens and one D1 batch of its episode and message rows, in edgeroll's D1 schema) and none of edgeroll's own work (no limiter, validation, scoring, credit, group commit or restarts). Locally, D1 and R2 run inside the same workerd process as the Worker, so the landed rows' memory shows in its resident set; deployed, they are services of their own. The floor lands the same rows so that their share counts as the runtime's, not edgeroll's. The distance between the pipeline and the floor is edgeroll's share; the floor itself is the platform's, locally. Neither is asked anything while its turns are played: the floor's point is one request held until its groups landed, and the pipeline's wait counts the simulator's answers in the bench's own process until every turn is played, then polls its groups one at a time (GET /v1/groups/:id every 100 ms) until each has landed. Polling GET /v1/runs/:id instead, as this bench did before, asks every running group object for its spend on each poll: work on the pipeline's thread alone, which at C = 8 more than doubled its CPU per turn.
- **Peak workerd RSS**: the largest resident set of the workerd process, sampled every 250 ms, over a fresh process's points (so at C = 1,024, after the smaller Cs), for the pipeline and the floor in the same round.
- **Landing**: scored groups of 8 episodes of about 256 tokens, landed durably in D1 through the lander per second (${d.landing.groups} groups at once, ${d.landing.repeats} repeats after a warm-up round, text and token landings alternating which goes first).
- **Serving**: episodes per second leased (whole groups with transcripts, 50 groups per lease) and acked through the API.
- **Landing with tokens**: the same groups as *Landing*, each turn also carrying its token ids and logprobs: each group's token object is put in R2, then its rows go through the lander. Locally R2 is miniflare's emulation, which serves one operation at a time: in the same run it took ${withSpread(figure(r, "r2_local_puts_per_s"), 0)} puts/s of objects that size on its own, so one put per group on top of the text landing bounds the figure (the row below it). Deployed, each group writes its own object from its own Durable Object, in parallel.
- **Token CPU ratio**: workerd CPU per turn with tokens over the same marathon groups with \`tokens: "off"\` (8 turns, 256-token completions, same seeds, alternating order; ${withSpread(figure(r, "token_cpu_ms_per_turn"))} ms with tokens): asking for the token fields, reading them from the stream, storing each turn's tokens and landing the token object.
- **Token bytes per token**: the growth episode's token object, read from local R2, over the tokens it holds (each turn's new prompt tokens and its completion); the bytes are the same in every run with the same seeds.
- **Token serving ratio**: lease and ack of the same token-exact episodes, with base64 token samples (\`include: ["tokens"]\`) over without, the two alternating which goes first: each lease reads one R2 object per group and builds the samples.
- **Remote step**: the same guess-number groups (same seeds, so the same transcripts) against the built-in environment and against its Python twin served over HTTP by \`python3 -m edgeroll_env serve\` (${d.remote.groups} groups of 8, ${d.remote.repeats} repeats, alternating order): workerd CPU per turn, ${withSpread(figure(r, "remote_step_cpu_ms_per_turn"))} against ${withSpread(figure(r, "builtin_step_cpu_ms_per_turn"))} ms; the Python process's own CPU is not counted. A turn's latency is an episode's wall time over its turns, the median over the run's episodes, with the simulator answering at once.
- **Token-in**: the same marathon groups (8 turns, 256-token completions, same seeds, rotating order) with \`generation: "chat"\` and \`"tokens"\` (${d.tokenIn.groups} groups of 8, ${d.tokenIn.repeats} repeats): workerd CPU per turn, ${withSpread(figure(r, "token_in_cpu_ms_per_turn"))} against ${withSpread(figure(r, "chat_cpu_ms_per_turn"))} ms, and end-to-end turns per second with the simulator answering at once. A token-in turn makes two calls to the host (\`/tokenize\`, then \`/v1/completions\` with the prompt as ids) where a chat turn makes one.
- **Teacher scoring**: the same token-in groups with \`algorithm: "opd"\` (the simulator's teacher scores each episode's sample with \`prompt_logprobs\`) over the token-in run without: the extra workerd CPU, and the extra wall time of the whole run, divided by the sampled tokens the teacher scored. The wall-time figure is a difference of two runs' durations and its spread shows how little of it is the teacher's.
${fleetFigures(r)}
- **Weight sync**: ${d.sync.plan.groups} groups of 1 on one simulated host, each streaming a ${fmt(d.sync.plan.tokens, 0)}-token generation at ${fmt(d.sync.plan.tokensPerS, 0)} tokens a second, started one after another over nine tenths of a generation's length, as an asynchronous producer keeps its streams going: whenever a step ends, some generation has just begun, so a held sync waits for nearly a whole one (with G streams of length L, for at least L × (G − 1) / G). Once the newest is streaming the run is paused, then idle is awaited as a trainer does: done if the pause's answer says 0 in flight, else with \`waitIdle\` (GET /v1/runs/:id every 20 ms). The stall is the time from the pause's request to the first 0 in flight: held, the generations finish; interrupted (\`interrupt: true\`), they are aborted at once and sent again after the resume. Each repeat holds one run and interrupts another, alternating which goes first; the ratio pairs the two of a repeat. The groups generate from token ids (\`generation: "tokens"\`): the interrupted generations kept ${withSpread(figure(r, "interrupt_kept_tokens"), 0)} tokens in all and continued from them after the resume, and dropped ${withSpread(figure(r, "interrupt_discarded_tokens"), 0)}. The simulator logs when it wrote each token of a stream whose client closed it early. Lost tokens are, episode by episode, those it had streamed before the pause was requested that edgeroll did not keep: nothing the host sent before the trainer asked may be lost. Tokens it streamed after the request, until the close reached it, and that edgeroll did not keep are counted apart as cut off: the host's work the cut wasted. An interrupt first reads on while bytes are already arriving (5 ms a read, 50 ms in all), so what the host sent before the cut but a busy thread had not yet read is kept; what is cut off was still in transit.
- **Signal share**: ${d.signal.plan.examples} exact-answer questions, uploaded as a dataset and produced server side by a run's producer (\`POST /v1/runs/:id/producer\`), groups of ${d.signal.plan.groupSize} at temperature ${d.signal.plan.temperature}, where the simulator slips by one with probability 0.15 × the temperature, so about half the groups land uniform. Each repeat produces the dataset once plainly and once with \`dynamic_sampling: {max_resamples: ${d.signal.plan.maxResamples}}\`, alternating which goes first. The share is of examples one of whose groups landed with differing rewards (the producer's \`examples_with_signal\`); the cost is the episodes generated with dynamic sampling over those without, in the same repeat.
- **Busy fleet**: an asynchronous training loop of ${d.busy.plan.steps} steps on ${d.busy.plan.hosts} simulated hosts. A producer keeps ${d.busy.plan.inFlightGroups} token-in groups of ${d.busy.plan.groupSize} in flight (each slot asks every 250 ms whether its group landed, GET /v1/groups/:id, and then starts the next), each generation drawing its length from a fifth of ${fmt(d.busy.plan.tokens, 0)} tokens to all of them, at ${fmt(d.busy.plan.tokensPerS, 0)} tokens a second. Each step the trainer waits for ${d.busy.plan.groupsPerStep} more groups to land, pauses the run (held, or with \`interrupt\`), waits for idle, loads weights for ${fmt(d.busy.plan.loadMs, 0)} ms and resumes at the next version. The figure is the hosts' busy time (at least one generation running, as each simulator counts it) over the host-seconds outside the loads; 1 is the physical limit. Held and interrupted loops alternate which goes first. The mean stall a step was ${withSpread(figure(r, "busy_stall_ms_hold"), 0)} ms held and ${withSpread(figure(r, "busy_stall_ms_interrupt"), 0)} ms interrupted.

## Growth with episode length

Marathon episodes of ${g.turns} turns with ${g.replyBytes}-byte replies, the first episode's bytes per turn at a given turn index, measured
where they are kept. The object's rows are read from its SQLite file while the group waits in scoring (every turn written,
nothing deleted); D1's from the landed rows; R2's from the token object itself. Row bytes are SQLite's records and index
entries, as SQLite encodes them (summed over the object's tables they come to ${g.objectRowCheck.rows} bytes, and dbstat finds ${g.objectRowCheck.dbstat}
in the same tables).

| Turn | Stored in the object (its rows) | Landed in D1 (message rows) | Token bytes in R2 (header entry and arrays) | Moved to the step worker (transcript so far) | Inference request (prompt) |
|---:|---:|---:|---:|---:|---:|
${growthRows.map((x) => `| ${x.turn} | ${x.objectBytes} | ${x.d1Bytes} | ${x.tokenBytes} | ${x.stepCallBytes} | ${x.inferenceBytes} |`).join("\n")}

Over the whole episode its turns' rows take ${g.objectTotal} bytes in the object and ${g.d1Total} in D1; as the wire carries it, the
transcript is ${g.transcriptWireBytes} bytes. The object's SQLite file used ${g.objectPages} bytes of pages while scoring (both episodes, every
table), and D1's pages grew by ${g.d1PagesAdded} bytes with the group's landing (page-granular, indexes and the groups and episodes rows
included). The token object is ${g.tokenObjectBytes} bytes for ${g.tokensHeld} tokens (${fmt(g.tokenBytesPerToken)} bytes per token; ${g.tokenObjectFixedBytes} of them no
turn owns: the magic, the header's frame, the padding). Stored bytes per turn stay flat, so storage grows linearly with the transcript.
The step call carries the whole transcript because environments rebuild their state by replaying it, so it grows with the turn index
and its total over an episode is quadratic (${g.stepCallTotal} bytes, ${fmt(g.stepCallTotal / g.transcriptWireBytes, 1)}× the transcript); it travels over a Worker-to-Worker RPC inside
one location, never to D1, and is the size of the prompt the inference host must receive anyway.

## Commands

- \`npm run bench\`: everything above; rewrites this file and bench/results.json (this run: ${fmt(r.seconds / 60, 0)} minutes).
- \`npm run bench -- --quick\`: a reduced run, printed only (CI runs it).
- \`npm run bench:floor [-- ROUNDS C,C]\`: the pipeline against the floor Worker alone, fresh processes, alternated.
- \`npm run bench:fleet [-- GROUPS REPEATS]\`: only the fleet part, printed.
- \`npm run bench:signal [-- --quick]\`: only the signal share, without and with dynamic sampling, printed.
- \`npm run bench:sync [-- --quick] [-- --stall]\`: only the weight-sync parts (one sync's stall, the busy fleet; \`--stall\`, the stall alone), printed.
- \`npm run bench:rss [-- ROUNDS]\`: only the memory figure (the pipeline's peak workerd RSS over the floor's, C = 8 to 1,024, fresh processes), about 6.5 minutes a round.
- \`npm run bench:profile\`: a V8 CPU profile of the Worker; \`npm run bench:heap\`: a heap snapshot of workerd at the C = 1,024 peak, summarized.
- \`npx tsx bench/report.ts\`: writes this file again from bench/results.json.
`;
}

export function writeOutputs(r: Results, command: string): void {
  writeFileSync(RESULTS, `${JSON.stringify(r, null, 2)}\n`);
  writeFileSync(DOC, benchmarksDoc(r, command));
}

// `tsx bench/report.ts`: the document again, from the results the last full run wrote.
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const results = JSON.parse(readFileSync(RESULTS, "utf8")) as Results;
  writeFileSync(DOC, benchmarksDoc(results, "npm run bench"));
  console.log("wrote docs/benchmarks.md from bench/results.json");
}
