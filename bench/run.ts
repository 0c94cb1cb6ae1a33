/**
 * `npm run bench [-- --quick]`: what edgeroll costs on top of inference, measured against its
 * references in one run on this machine. See docs/benchmarks.md for the figures and what they mean.
 */
import { type FloorPoint, measureFloor } from "./floor-point";
import { measureGrowth } from "./growth";
import { type IdealPoint, measureIdeal } from "./ideal";
import { measureLanding } from "./landing";
import { measureOverhead, type OverheadResult } from "./overhead";
import { measureRemoteStep, REMOTE_NAME, startPythonGuessNumber } from "./remote-env";
import { printTable, resultsJson, writeOutputs } from "./report";
import { withBenchStack } from "./stack";
import { measureTokenIn } from "./token-in";
import { measureTokenCpu } from "./tokens";

const quick = process.argv.includes("--quick");
const plan = quick
  ? {
      overhead: { groups: 4, repeats: 1 },
      concurrency: [8, 64],
      turns: 6,
      growthTurns: 10,
      landing: { groups: 50, repeats: 1 },
      tokens: { groups: 4, repeats: 1 },
      remote: { groups: 4, repeats: 1 },
      tokenIn: { groups: 4, repeats: 1 },
      floor: false,
    }
  : {
      overhead: { groups: 32, repeats: 3 },
      concurrency: [8, 64, 256, 1024],
      turns: 12,
      growthTurns: 50,
      landing: { groups: 600, repeats: 3 },
      tokens: { groups: 16, repeats: 4 },
      remote: { groups: 16, repeats: 4 },
      tokenIn: { groups: 16, repeats: 3 },
      floor: true,
    };

const started = Date.now();
const say = (line: string) =>
  console.log(`[bench ${((Date.now() - started) / 1000).toFixed(0)}s] ${line}`);

function sayOverhead(o: OverheadResult, note = ""): void {
  say(
    `overhead (${o.stream ? "streamed" : "non-streamed"}${note}): ratio ${o.overheadRatio.toFixed(2)}, ${o.cpuMsPerTurn.toFixed(2)} ms workerd CPU per turn`,
  );
}

// The Python environment the remote-step part measures, registered on the main stack.
const python = await startPythonGuessNumber();
const pipeline = await withBenchStack(
  async (bench) => {
    say(
      `overhead: ${plan.overhead.groups} guess-number groups of 8, ${plan.overhead.repeats} repeat(s)`,
    );
    const overhead = await measureOverhead(bench, { ...plan.overhead, stream: true });
    sayOverhead(overhead);
    const ideal: IdealPoint[] = [];
    for (const c of plan.concurrency) {
      const point = await measureIdeal(bench, c, plan.turns);
      say(
        `C=${c}: achieved/ideal ${point.ratio.toFixed(2)}, overhead p50 ${point.overheadMsP50} ms, p99 ${point.overheadMsP99} ms, RSS ${point.peakRssMb.toFixed(0)} MB, workerd ${point.workerdCores.toFixed(2)} cores`,
      );
      ideal.push(point);
    }
    const growth = await measureGrowth(bench, plan.growthTurns);
    say(
      `growth: ${growth.turns} turns, ${growth.storedTotal} bytes stored, token object ${growth.tokenObjectBytes} bytes for ${growth.tokensHeld} tokens (${growth.tokenBytesPerToken.toFixed(2)} B/token)`,
    );
    const tokens = await measureTokenCpu(bench, plan.tokens);
    say(
      `tokens: ${tokens.cpuMsPerTurnWith.toFixed(2)} ms CPU per turn with, ${tokens.cpuMsPerTurnWithout.toFixed(2)} without (ratio ${tokens.ratio.toFixed(2)})`,
    );
    const remote = await measureRemoteStep(bench, plan.remote);
    say(
      `remote step: ${remote.remoteCpuMsPerTurn.toFixed(2)} ms CPU per turn over HTTP, ${remote.builtInCpuMsPerTurn.toFixed(2)} built in (ratio ${remote.cpuRatio.toFixed(2)}); turn ${remote.remoteTurnMs.toFixed(1)} vs ${remote.builtInTurnMs.toFixed(1)} ms`,
    );
    const tokenIn = await measureTokenIn(bench, plan.tokenIn);
    say(
      `token-in: ${tokenIn.tokensCpuMsPerTurn.toFixed(2)} ms CPU per turn, chat ${tokenIn.chatCpuMsPerTurn.toFixed(2)} (ratio ${tokenIn.cpuRatio.toFixed(2)}); turns/s ratio ${tokenIn.throughputRatio.toFixed(2)}; teacher ${tokenIn.teacherCpuUsPerToken.toFixed(1)} µs CPU, ${tokenIn.teacherWallUsPerToken.toFixed(1)} µs wall per sampled token`,
    );
    return { overhead, ideal, growth, tokens, remote, tokenIn };
  },
  { vars: { REMOTE_ENVS: JSON.stringify({ [REMOTE_NAME]: python.url }) } },
).finally(() => python.child.kill());
// The platform's floor at C = 1,024 in the same run: a Worker making only a turn's calls.
let floor: FloorPoint | null = null;
if (plan.floor) {
  floor = await measureFloor();
  say(
    `floor C=1024: achieved/ideal ${floor.ratio.toFixed(2)}, peak RSS ${floor.peakRssMb.toFixed(0)} MB`,
  );
}
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
say(`landing and serving: ${plan.landing.groups} groups, ${plan.landing.repeats} repeat(s)`);
const landing = await measureLanding(plan.landing.groups, plan.landing.repeats);
say(
  `landing ${landing.landingGroupsPerS.toFixed(0)} groups/s (${landing.landingGroupsPerSTokens.toFixed(0)} with tokens), serving ${landing.servingEpisodesPerS.toFixed(0)} episodes/s (base64 tokens: ${landing.tokenServingRatio.toFixed(2)} of the same without)`,
);

const results = resultsJson({
  quick,
  seconds: (Date.now() - started) / 1000,
  ...pipeline,
  unstreamed,
  traced,
  landing,
  floor,
});
printTable(results);
if (quick) say("quick run: figures printed only; `npm run bench` writes docs/benchmarks.md");
else {
  writeOutputs(results, "npm run bench");
  say("wrote docs/benchmarks.md and bench/results.json");
}
