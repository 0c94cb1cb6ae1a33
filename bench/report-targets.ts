/**
 * docs/benchmarks.md's section on memory and the tail: each against its target, judged from
 * the run's own figures, with the floor Worker's as the measure of what the local runtime takes.
 */
import { atMost, figure, fmt, metInEveryRun, verdict, withSpread } from "./report-figures";
import type { Results } from "./results";

export function memoryAndTail(r: Results): string {
  const rss = figure(r, "rss_over_floor_mb");
  const peak = figure(r, "peak_rss_mb");
  const floorPeak = figure(r, "floor_peak_rss_mb");
  const p99 = figure(r, "overhead_ms_p99_256");
  const floorP99 = figure(r, "floor_overhead_ms_p99_256");
  const over = figure(r, "overhead_ms_p99_256_over_floor");
  const memoryTarget = atMost(128);
  const tailTarget = atMost(50);
  const rssMet = rss.median !== null && memoryTarget.meets(rss.median);
  const rssMetEveryRound = metInEveryRun(rss, memoryTarget);
  const absoluteMet = p99.median !== null && tailTarget.meets(p99.median);
  const relativeMet = over.median !== null && tailTarget.meets(over.median);
  const lines = [
    "## Memory and the tail, against their targets",
    "",
    `- **Memory: within 128 MB of the floor Worker (firm).** The pipeline's peak RSS is ${withSpread(peak, 0)} MB, the floor's ${withSpread(floorPeak, 0)} MB in the same rounds: ${withSpread(rss, 0)} MB over it, round by round. Target ${rssMet ? (rssMetEveryRound ? "met" : "met at the median, not in every round") : "**not met**"}: ${verdict(rss, memoryTarget)}.`,
    `- **The tail: p99 turn overhead at C = 256 at most 50 ms, or at most 50 ms above the floor Worker's own p99 measured the same way.** The pipeline's p99 is ${withSpread(p99, 0)} ms, the floor's ${withSpread(floorP99, 0)} ms, the difference in each round ${withSpread(over, 0)} ms. ${
      absoluteMet
        ? "Met outright."
        : relativeMet
          ? `Met against the floor: ${fmt(over.median, 0)} ms above it. Not met outright: the floor Worker, which does none of edgeroll's work, itself has a p99 of ${fmt(floorP99.median, 0)} ms here, the local runtime's share.`
          : "**Not met**, outright or against the floor."
    }`,
  ];
  // The notes stay while any round misses its target, not only while the median does.
  if (!metInEveryRun(p99, tailTarget) && !metInEveryRun(over, tailTarget)) {
    const later = figure(r, "overhead_ms_p99_256_later_turns");
    const floorLater = figure(r, "floor_overhead_ms_p99_256_later_turns");
    const share = figure(r, "tail_first_turn_share_256");
    const floorShare = figure(r, "floor_tail_first_turn_share_256");
    lines.push(
      `- **Where the tail goes.** Every generation takes 1 s and the 256 episodes start together, so their first generations end together and their first steps queue on workerd's one thread at once; later turns still end close together, in smaller bursts. Of the floor's turns at or over its p99, a share of ${withSpread(floorShare)} were episodes' first turns; of the pipeline's, ${withSpread(share)}. ${
        share.median !== null && share.median >= 0.5
          ? "The pipeline's p99 therefore follows the CPU its first steps take, against the floor's."
          : "The pipeline opens each episode's step session while its first generation runs (the floor opens its session before it), so its first steps queue for less, and its tail lies in later turns."
      } Over every turn but the first, the p99 is ${withSpread(later, 0)} ms, the floor's ${withSpread(floorLater, 0)} ms: there the queue follows the CPU each turn takes, the pipeline's against the floor's in the table above, and moves with the machine's load from run to run.`,
    );
  }
  if (!rssMetEveryRound)
    lines.push(
      "- **Where the memory over the floor goes** (the tools, run apart from this bench: `npm run bench:heap -- pipeline|floor 1024 --series` for workerd's RSS, split into V8's pointer cage and the rest, beside V8's heap every 500 ms of a point; without `--series`, a heap snapshot at its height; `--allocations`, where the point's JavaScript allocates). The pipeline's resident set rises faster than the floor's while its 128 groups start and play their first turns, and again while they score and land at once. Its V8 heap grows larger than the floor's but holds little that survives a collection, at the half-way point and while its groups land alike (`--landing`: the snapshot is taken once the last generation was asked for): its size follows the garbage a turn makes (each streamed chunk parsed, each request, step and stored row checked, each landing's rows), and the pipeline makes more of it than the floor (`--allocations`). Cutting single sites of it (the example schema that each environment instance built anew) has not moved the peak. The rest of the difference is native, outside V8's cage, and grows both while the groups start and while they play. Part of it was the statements workerd keeps prepared for each object: a new group object now creates its schema in one statement instead of replaying its migrations step by step (measured in docs/architecture.md). The largest part left shows at the end: the pipeline's resident set climbs more than the floor's while its 128 groups score, hand their rows to the lander and put their token objects in R2 at once. Part of that was D1's: locally it runs in workerd's process and its memory grew with the size of the transactions it was sent, so the lander now writes at most 500,000 characters of rows per transaction (measured in docs/architecture.md).",
    );
  return lines.join("\n");
}
