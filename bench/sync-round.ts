/**
 * `npm run bench:sync [-- --quick]`: only the weight-sync parts of `npm run bench` (the stall
 * of one sync held and interrupted, then the busy fleet over a training loop), at the full
 * run's sizes, printed, not published.
 */
import { measureBusyFleet } from "./busy-fleet";
import { benchPlan } from "./plan";
import { measureSyncStall } from "./sync-stall";

const plan = benchPlan(process.argv.includes("--quick"));
const say = (line: string) => console.log(line);
const sync = await measureSyncStall(plan.sync, say);
const busy = await measureBusyFleet(plan.busy, say);
console.log(JSON.stringify({ sync, busy }, null, 2));
process.exit(0);
