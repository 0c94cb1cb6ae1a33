/**
 * `npm run bench:sync [-- --quick] [-- --stall]`: only the weight-sync parts of `npm run bench`
 * (the stall of one sync held and interrupted, then the busy fleet over a training loop; with
 * `--stall`, the stall alone), at the full run's sizes, printed, not published.
 */
import { measureBusyFleet } from "./busy-fleet";
import { benchPlan } from "./plan";
import { measureSyncStall } from "./sync-stall";

const plan = benchPlan(process.argv.includes("--quick"));
const say = (line: string) => console.log(line);
const sync = await measureSyncStall(plan.sync, say);
const busy = process.argv.includes("--stall") ? null : await measureBusyFleet(plan.busy, say);
console.log(JSON.stringify({ sync, busy }, null, 2));
process.exit(0);
