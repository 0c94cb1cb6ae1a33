/**
 * docs/benchmarks.md's section on the inference fleet: what the fleet part ran, each variant's
 * own figures, and the failover run, all read from the run's results.
 */
import { figure, fmt, withSpread } from "./report-figures";
import type { Results } from "./results";

export function fleetSection(r: Results): string {
  const d = r.details.fleet;
  if (d === undefined) return "## The inference fleet\n\nNot measured in this run.";
  const { plan, latency } = d;
  const rate = (key: string, digits = 3) => withSpread(figure(r, key), digits);
  return `## The inference fleet

The same workload three ways, rotating which goes first in each repeat after a warm-up round of
each: ${plan.groups} marathon groups of ${plan.groupSize} episodes, ${plan.turns} turns each, every turn's
context the last one's plus the model's answer and the environment's reply (the simulator answers
seeded random words, so no two episodes share a conversation beyond their group's prompt). The
KV capacity is fixed at ${plan.kvBlocks} blocks of 16 tokens in all: ${plan.hosts} hosts of ${Math.floor(plan.kvBlocks / plan.hosts)} blocks behind
edgeroll's routing (\`INFERENCE_BASE_URL\` with the ${plan.hosts} URLs), the same ${plan.hosts} hosts behind a round-robin proxy
(bench/round-robin-proxy.ts: each request to the next host), and one host holding the whole capacity,
the hit rate a cache could at best reach. Every host's caches start empty each run. The latency
model is a GPU's: ${latency.ttftMs} ms to first token, ${latency.msPerToken} ms per generated token, and a prefill of
${latency.msPerPromptToken} ms per uncached prompt token that the host's requests share (one prefill after another,
the simulator's \`sharedPrefill\`); the one host has the whole fleet's prefill compute.

| | edgeroll (${plan.hosts} hosts) | round robin (${plan.hosts} hosts) | one host |
|---|---:|---:|---:|
| Prefix cache hit rate (cached / prompt tokens) | ${rate("edgeroll_hit_rate")} | ${rate("round_robin_hit_rate")} | ${rate("one_host_hit_rate")} |
| Episodes per second | ${rate("edgeroll_episodes_per_s", 1)} | ${rate("round_robin_episodes_per_s", 1)} | — |
| Hit rate with twice the KV capacity (one run) | ${fmt(d.atDoubleCapacity?.edgeroll, 3)} | ${fmt(d.atDoubleCapacity?.roundRobin, 3)} | ${fmt(d.atDoubleCapacity?.oneHost, 3)} |

What the model leaves out, and what it favours: only prefill is shared (decode is charged per
sequence, however many a host batches, the same in every variant); a block joins a host's cache
once its prefill is done, so episodes arriving together miss together. Round robin's copies of a
conversation compete for the same capacity, so its hit rate rises with capacity (the last row).
The round-robin proxy runs in the bench's process, beside the simulated hosts: one more local
hop per request, small next to a turn here. A router that keys on \`X-Session-ID\` (which edgeroll
sends on every request) would keep each episode on one host as well; the baseline here is a
load balancer that knows nothing of conversations.

**Failover.** One more edgeroll run of the same workload, host 1 killed a third of the way
through and revived two thirds through: ${r.failover_lost_episodes} of ${r.failover_episodes} episodes did not complete
(the target is none: a generation whose host does not answer moves to another).`;
}

/** The fleet's line of "What each figure is". */
export function fleetFigures(r: Results): string {
  const d = r.details.fleet;
  const runs = d === undefined ? 0 : d.plan.repeats;
  return `- **Fleet**: from [the inference fleet](#the-inference-fleet), over ${runs} repeat(s). The cache hit ratio is edgeroll's hit rate over the one host's in the same repeat (round robin's the same way, for comparison); the balance is the busiest host's requests over the mean; the throughput ratio is edgeroll's episodes per second over round robin's in the same repeat. ${runs === 1 ? "One repeat settles nothing." : ""}`.trimEnd();
}
