/**
 * `npm run bench [-- --quick]`: what edgeroll costs on top of inference, measured against its
 * references in one run on this machine. See docs/benchmarks.md for the figures and what they mean.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { measureBusyFleet } from "./busy-fleet";
import { measureFleet } from "./fleet";
import { measureGrowth } from "./growth";
import { measureLanding } from "./landing";
import { detectMachine } from "./machine";
import { machineShareSampler } from "./machine-share";
import { measureOverhead, type OverheadResult } from "./overhead";
import { benchPlan } from "./plan";
import { measureRemoteStep, REMOTE_NAME, startPythonGuessNumber } from "./remote-env";
import type { Repeated } from "./repeats";
import { benchmarksDoc, printTable, writeOutputs } from "./report";
import { fromRepeated, withSpread } from "./report-figures";
import { resultsJson } from "./results";
import { measureSignalShare } from "./signal-share";
import { withBenchStack } from "./stack";
import { measureSweep } from "./sweep";
import { measureSyncStall } from "./sync-stall";
import { measureTokenIn } from "./token-in";
import { measureTokenCpu } from "./tokens";

const quick = process.argv.includes("--quick");
const plan = benchPlan(quick);

const started = Date.now();
const share = machineShareSampler();
const machine = detectMachine();
const spread = (r: Repeated, digits = 2) => withSpread(fromRepeated(r), digits);
const say = (line: string) =>
  console.log(`[bench ${((Date.now() - started) / 1000).toFixed(0)}s] ${line}`);

function sayOverhead(o: OverheadResult, note = ""): void {
  say(
    `overhead (${o.stream ? "streamed" : "non-streamed"}${note}): ratio ${spread(o.overheadRatio)}, workerd CPU per turn ${spread(o.cpuMsPerTurn)} ms`,
  );
}

// The Python environment the remote-step part measures, registered on the main stack.
const python = await startPythonGuessNumber();
const pipeline = await withBenchStack(
  async (bench) => {
    say(
      `overhead: ${plan.overhead.groups} guess-number groups of 8, ${plan.overhead.warmUps} warm-up round(s), ${plan.overhead.repeats} repeats`,
    );
    const overhead = await measureOverhead(bench, { ...plan.overhead, stream: true });
    sayOverhead(overhead);
    const growth = await measureGrowth(bench, plan.growthTurns);
    say(
      `growth: ${growth.turns} turns, ${growth.objectTotal} bytes in the object, ${growth.d1Total} in D1, token object ${growth.tokenObjectBytes} bytes for ${growth.tokensHeld} tokens`,
    );
    const tokens = await measureTokenCpu(bench, plan.tokens);
    say(`tokens: CPU per turn with / without ${spread(tokens.ratio)}`);
    const remote = await measureRemoteStep(bench, plan.remote);
    say(`remote step: CPU per turn over HTTP / built in ${spread(remote.cpuRatio)}`);
    const tokenIn = await measureTokenIn(bench, plan.tokenIn);
    say(
      `token-in: CPU per turn tokens / chat ${spread(tokenIn.cpuRatio)}; turns/s ${spread(tokenIn.throughputRatio)}`,
    );
    return { overhead, growth, tokens, remote, tokenIn };
  },
  { vars: { REMOTE_ENVS: JSON.stringify({ [REMOTE_NAME]: python.url }) } },
).finally(() => python.child.kill());
// The same comparison with one body per completion (INFERENCE_STREAM=false), in its own stack.
const unstreamed = await withBenchStack(
  (bench) => measureOverhead(bench, { ...plan.overhead, stream: false }),
  { vars: { INFERENCE_STREAM: "false" } },
);
sayOverhead(unstreamed);
// Streamed again, with wrangler dev's local trace of every call on, as plain `wrangler dev` runs.
const traced = await withBenchStack(
  (bench) => measureOverhead(bench, { ...plan.overhead, stream: true }),
  { localTraces: true },
);
sayOverhead(traced, ", wrangler's local traces on");
// The ideal ratios and their floor: fresh processes, the pipeline and the floor alternated.
say(
  `ideal ratios: C = ${plan.sweep.concurrencies.join(", ")}, ${plan.sweep.rounds} round(s) of the pipeline and the floor Worker`,
);
const sweep = await measureSweep(plan.sweep, say);
say(`landing and serving: ${plan.landing.groups} groups, ${plan.landing.repeats} repeat(s)`);
const landing = await measureLanding(plan.landing.groups, plan.landing.repeats);
say(
  `landing ${spread(landing.landingGroupsPerS, 0)} groups/s, serving ${spread(landing.servingEpisodesPerS, 0)} episodes/s, token serving ratio ${spread(landing.tokenServingRatio)}`,
);
const { fleet: f } = plan;
say(
  `fleet: ${f.groups} groups of ${f.groupSize}, ${f.turns} turns, on ${f.hosts} simulated hosts with ${f.kvBlocks} KV blocks in all; edgeroll, round robin and one host rotated, ${f.repeats} repeat(s), then a host killed mid-run`,
);
const fleet = await measureFleet(plan.fleet, say);
say(
  `fleet: hit rate over one host's ${spread(fleet.fleetCacheHitRatio)} (round robin ${spread(fleet.roundRobinCacheHitRatio)}), balance ${spread(fleet.fleetBalance)}, episodes/s over round robin ${spread(fleet.fleetThroughputRatio)}, ${fleet.failoverLostEpisodes} of ${fleet.failoverEpisodes} lost to the killed host`,
);

const { sync: sp } = plan;
say(
  `weight sync: ${sp.groups} groups streaming ${sp.tokens / sp.tokensPerS}-s generations, started one after another, paused once all stream, held and interrupted alternately, ${sp.repeats} repeat(s)`,
);
const sync = await measureSyncStall(plan.sync, say);
say(
  `weight sync: stall ${spread(sync.holdStallMs, 0)} ms held, ${spread(sync.interruptStallMs, 0)} ms interrupted (ratio ${spread(sync.stallRatio, 4)})`,
);

const { busy: bp } = plan;
say(
  `busy fleet: ${bp.steps} training steps on ${bp.hosts} simulated hosts, ${bp.inFlightGroups} groups of ${bp.groupSize} in flight, a ${bp.loadMs}-ms weight load each step, held and interrupted alternately, ${bp.repeats} repeat(s)`,
);
const busy = await measureBusyFleet(plan.busy, say);
say(`busy fleet: ${spread(busy.hold, 3)} held, ${spread(busy.interrupt, 3)} interrupted`);

const { signal: sg } = plan;
say(
  `signal share: ${sg.examples} exact-answer questions in groups of ${sg.groupSize} at temperature ${sg.temperature}, produced plainly and with dynamic sampling (${sg.maxResamples} resamples), ${sg.repeats} repeat(s)`,
);
const signal = await measureSignalShare(plan.signal, say);
say(
  `signal share: ${spread(signal.plain, 3)} plain, ${spread(signal.dynamic, 3)} dynamic, at ${spread(signal.generationRatio)}x the episodes`,
);

const results = resultsJson({
  quick,
  seconds: (Date.now() - started) / 1000,
  ...pipeline,
  unstreamed,
  traced,
  sweep,
  landing,
  fleet,
  sync,
  busy,
  signal,
  machine,
  share: share.stop(),
});
printTable(results);
if (quick) {
  // Not written where the full run writes: a quick run's figures are no document's. Rendered all
  // the same, so that CI proves the document can be made from these results.
  const out = join(tmpdir(), "edgeroll-bench-quick");
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, "results.json"), `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(join(out, "benchmarks.md"), benchmarksDoc(results, "npm run bench -- --quick"));
  say(`quick run: written to ${out} only; \`npm run bench\` writes docs/benchmarks.md`);
} else {
  writeOutputs(results, "npm run bench");
  say("wrote docs/benchmarks.md and bench/results.json");
}
