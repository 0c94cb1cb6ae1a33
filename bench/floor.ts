/**
 * `npm run bench:floor [-- ROUNDS [C,C,...]]`: the pipeline against the floor Worker alone, each
 * in fresh processes, the order alternated round after round (bench/sweep.ts): by default two
 * rounds of C = 256 and 1,024, as the full bench measures them.
 */
import { measureSweep, rssOverFloor } from "./sweep";

const rounds = Number(process.argv[2] ?? "2");
const concurrencies = (process.argv[3] ?? "256,1024").split(",").map(Number);

const sweep = await measureSweep({ concurrencies, turns: 12, rounds }, (line) => console.log(line));
console.table(
  sweep.processes.flatMap((run) =>
    run.points.map((p) => ({
      side: run.side,
      round: run.round + 1,
      C: p.concurrency,
      "achieved / ideal": +p.ratio.toFixed(2),
      "end to end": +p.endToEndRatio.toFixed(2),
      "p50 ms": p.overheadMsP50,
      "p99 ms": p.overheadMsP99,
      "CPU ms / turn": +p.cpuMsPerTurn.toFixed(2),
      "peak RSS MB": Math.round(p.peakRssMb),
    })),
  ),
);
console.log(`RSS over the floor, by round (MB): ${rssOverFloor(sweep).map(Math.round).join(", ")}`);
