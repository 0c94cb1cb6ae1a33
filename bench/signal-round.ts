/**
 * `npm run bench:signal [-- --quick]`: only the signal share of \`npm run bench\`, without and
 * with dynamic sampling, at the full run's sizes, printed, not published.
 */
import { benchPlan } from "./plan";
import { measureSignalShare } from "./signal-share";

const plan = benchPlan(process.argv.includes("--quick"));
const signal = await measureSignalShare(plan.signal, (line) => console.log(line));
console.log(JSON.stringify(signal, null, 2));
process.exit(0);
