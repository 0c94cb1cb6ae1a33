/**
 * `npm run bench:rss [-- rounds]`: only the memory figure of `npm run bench` (the
 * pipeline's peak workerd RSS over the floor's, C = 8 to 1,024 in fresh processes), for
 * iterating on memory without the full bench's other parts.
 */
import { measureSweep, rssOverFloor } from "./sweep";

const rounds = Number(process.argv[2] ?? "1");
const sweep = await measureSweep({ concurrencies: [8, 64, 256, 1024], turns: 12, rounds }, (l) =>
  console.log(l),
);
for (const p of sweep.processes)
  console.log(
    `round ${p.round + 1} ${p.side}: idle ${p.idleRssMb.toFixed(0)} MB, peak ${p.peakRssMb.toFixed(0)} MB`,
  );
console.log(
  `over the floor, by round: ${rssOverFloor(sweep)
    .map((d) => d.toFixed(0))
    .join(", ")} MB`,
);
process.exit(0);
