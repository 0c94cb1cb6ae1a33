/**
 * docs/benchmarks.md's section on memory and the tail: each against its target, judged from
 * the run's own figures, with the floor Worker's as the measure of what the local runtime takes.
 */
import { atMost, figure, fmt, verdict, withSpread } from "./report-figures";
import type { Results } from "./results";

export function memoryAndTail(r: Results): string {
  const rss = figure(r, "rss_over_floor_mb");
  const peak = figure(r, "peak_rss_mb");
  const floorPeak = figure(r, "floor_peak_rss_mb");
  const p99 = figure(r, "overhead_ms_p99_256");
  const floorP99 = figure(r, "floor_overhead_ms_p99_256");
  const over = figure(r, "overhead_ms_p99_256_over_floor");
  const rssMet = rss.median !== null && rss.median <= 128;
  const absoluteMet = p99.median !== null && p99.median <= 50;
  const relativeMet = over.median !== null && over.median <= 50;
  const lines = [
    "## Memory and the tail, against their targets",
    "",
    `- **Memory: within 128 MB of the floor Worker (firm).** The pipeline's peak RSS is ${withSpread(peak, 0)} MB, the floor's ${withSpread(floorPeak, 0)} MB in the same rounds: ${withSpread(rss, 0)} MB over it, round by round. Target ${rssMet ? "met" : "**not met**"}: ${verdict(rss, atMost(128))}.`,
    `- **The tail: p99 turn overhead at C = 256 at most 50 ms, or at most 50 ms above the floor Worker's own p99 measured the same way.** The pipeline's p99 is ${withSpread(p99, 0)} ms, the floor's ${withSpread(floorP99, 0)} ms, the difference in each round ${withSpread(over, 0)} ms. ${
      absoluteMet
        ? "Met outright."
        : relativeMet
          ? `Met against the floor: ${fmt(over.median, 0)} ms above it. Not met outright: the floor Worker, which does none of edgeroll's work, itself has a p99 of ${fmt(floorP99.median, 0)} ms here, the local runtime's share.`
          : "**Not met**, outright or against the floor."
    }`,
  ];
  if (!rssMet)
    lines.push(
      "- **Where the memory over the floor goes** (the tools: `npm run bench:heap -- pipeline|floor 1024 --series` for workerd's RSS beside V8's heap every 500 ms of a point; without `--series`, a heap snapshot at its height). The pipeline's resident set grows over the turns faster than the floor's, and jumps again while its 128 groups score and land at once. V8's own heap is the smaller part of the difference; most of it is native: per object, workerd keeps every distinct SQL statement it has run prepared (a cache of up to 1 MB of SQL text per object), `--statements 60` makes each floor object run 60 more to measure what that costs (about 38 MB at C = 1,024). The group object now runs about 15 distinct statements of its tables (one UPDATE per table, no read-back of a group just created; docs/architecture.md), down from about 40, beside its migrations; the floor's object runs about 12. What remains is mostly the landing: scoring, credit and the token object for 128 groups at once, and the turns' token arrays (ArrayBuffer backing stores between collections).",
    );
  return lines.join("\n");
}
