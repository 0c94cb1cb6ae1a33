/**
 * `npm run bench:floor`: how close the pipeline runs to the platform at C = 1,024, alternating
 * bench/floor/ and the pipeline in fresh processes (bench/floor-point.ts), round after round.
 */
import { type FloorPoint, measureFloor, measurePipeline } from "./floor-point";

const ROUNDS = Number(process.argv[2] ?? "2");

const rows: Record<string, string | number>[] = [];
const show = (what: string, round: number, p: FloorPoint) => {
  rows.push({
    what,
    round,
    "achieved / ideal": +p.ratio.toFixed(2),
    "end to end": +p.endToEndRatio.toFixed(2),
    "CPU ms / turn": +p.cpuMsPerTurn.toFixed(2),
    "peak RSS MB": Math.round(p.peakRssMb),
  });
  console.log(JSON.stringify(rows.at(-1)));
};
for (let round = 1; round <= ROUNDS; round++) {
  show("floor", round, await measureFloor());
  show("pipeline", round, await measurePipeline());
}
console.table(rows);
