/**
 * `npm run bench:fleet [-- groups repeats]`: only the fleet part of `npm run bench` (edgeroll's
 * routing over four simulated hosts against round robin and one big host, then a failover run),
 * printed, not published.
 */
import { measureFleet } from "./fleet";

const groups = Number(process.argv[2] ?? "32");
const repeats = Number(process.argv[3] ?? "3");
const result = await measureFleet(
  { hosts: 4, groups, groupSize: 8, turns: 8, repeats, kvBlocks: 20_000 },
  (line) => console.log(line),
);
console.log(JSON.stringify(result, null, 2));
process.exit(0);
