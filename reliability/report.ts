/** Writes docs/reliability.md from the result files of the reliability runs. */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { FleetRunResult } from "./fleet-verdict";
import { RESULTS } from "./harness";
import type { Row } from "./suites";
import type { CrashResult, EpisodeEnds, LoadResult } from "./verdicts";

const FILE = resolve(import.meta.dirname, "../docs/reliability.md");

function read<T>(name: string): (T & { commit?: string }) | null {
  const file = join(RESULTS, `${name}.json`);
  return existsSync(file)
    ? (JSON.parse(readFileSync(file, "utf8")) as T & { commit?: string })
    : null;
}

/** "on <date> at commit <c>": the code a table's run ran (older results did not record it). */
function ranOn(date: string, commits: readonly (string | undefined)[]): string {
  const known = [...new Set(commits.filter((c) => c !== undefined))];
  const at =
    known.length === 0 ? "" : ` at commit${known.length > 1 ? "s" : ""} ${known.join(", ")}`;
  return `on ${date.slice(0, 10)}${at}`;
}

/** A load or crash result in today's shape (with `problems`), or null: rerun it. */
function current<T extends { problems?: unknown }>(result: T | null): T | null {
  return result !== null && Array.isArray(result.problems) ? result : null;
}

const seconds = (s: number | null) => (s === null ? "never" : `${s.toFixed(1)} s`);

/** What `npm run test:producer-crash` wrote (reliability/producer-crash.ts). */
interface ProducerCrashResult {
  date: string;
  commit?: string;
  short: boolean;
  examples: number;
  epochs: number;
  kills: { atSeconds: number; started: number; inFlight: number }[];
  seconds: number;
  groups: number;
  failed: number;
  lost?: number;
  duplicated?: number;
  state: string;
  ok: boolean;
  problems: string[];
}

function producerCrashSection(run: ProducerCrashResult | null): string {
  // A result from before lost and duplicated were counted per example is not this code's.
  if (run === null || run.lost === undefined || run.duplicated === undefined)
    return "Not run yet: `npm run test:producer-crash`.";
  return [
    `Produced by \`npm run test:producer-crash${run.short ? " -- --short" : ""}\` ${ranOn(run.date, [run.commit])}: a run's producer (\`POST /v1/runs/:id/producer\`)`,
    `covers ${run.examples} examples ${run.epochs} times through \`wrangler dev\`, while the workerd process tree is SIGKILLed ${run.kills.length} times`,
    "at random points (restarted on the same state directory each time; the simulator outlives it, as a GPU host would).",
    "",
    "| figure | value |",
    "|---|---|",
    `| kills (seconds into the run: groups started, in flight) | ${run.kills.map((k) => `${k.atSeconds.toFixed(1)} s: ${k.started}, ${k.inFlight}`).join("; ")} |`,
    `| groups expected / made / landed as failed | ${run.examples * run.epochs} / ${run.groups} / ${run.failed} |`,
    `| example-epochs lost / duplicated | ${run.lost} / ${run.duplicated} |`,
    `| the producer ended | ${run.state} |`,
    `| wall time | ${run.seconds.toFixed(0)} s |`,
    `| the producer done, one group per example and epoch, none failed, a kill with groups in flight | ${verdictLine(run.ok, run.problems)} |`,
  ].join("\n");
}

/** What `npm run test:budget-crash` wrote (reliability/budget-crash.ts). */
interface BudgetCrashResult {
  date: string;
  short: boolean;
  examples: number;
  budget: number;
  kills: {
    atSeconds: number;
    groupsInFlight: number;
    sampledInFlight: number;
    sampled: number;
    differing: string[];
  }[];
  stoppedAt: {
    groups: number;
    sampled: number;
    overshoot: number;
    inFlightBound: number;
    waiting: string | null;
    refused: string;
    unchangedAcrossKill: boolean;
  };
  final: { groups: number; sampled: number; usd: number; exact: boolean };
  seconds: number;
  ok: boolean;
  problems: string[];
}

function budgetCrashSection(run: (BudgetCrashResult & { commit?: string }) | null): string {
  if (run === null) return "Not run yet: `npm run test:budget-crash`.";
  const kills = run.kills
    .map(
      (k) =>
        `${k.atSeconds.toFixed(1)} s: ${k.sampled} (${k.sampledInFlight} in ${k.groupsInFlight} groups), ${k.differing.length === 0 ? "same after" : `differs in ${k.differing.join(", ")}`}`,
    )
    .join("; ");
  const stop = run.stoppedAt;
  return [
    `Produced by \`npm run test:budget-crash${run.short ? " -- --short" : ""}\` ${ranOn(run.date, [run.commit])}: a run produces itself from ${run.examples} examples through \`wrangler dev\``,
    `under a budget of ${run.budget} sampled tokens. Mid-run it is paused (interrupting its generations), its spend read from \`GET /v1/runs/:id\`, the workerd process tree SIGKILLed and`,
    "restarted on the same state, and its spend read again; then it runs until the budget stops it, is SIGKILLed once more, and finishes once the limit is lifted.",
    "",
    "| figure | value |",
    "|---|---|",
    `| kills mid-run (seconds in: sampled tokens spent, of which in flight; after the restart) | ${kills} |`,
    `| stopped by its budget: groups, sampled tokens, overshoot (bound: its last groups in flight spent) | ${stop.groups}, ${stop.sampled}, ${stop.overshoot} (${stop.inFlightBound}) |`,
    `| a start past the budget | ${stop.refused || "not refused"} |`,
    `| the same spend across a SIGKILL while stopped | ${stop.unchangedAcrossKill ? "yes" : "no"} |`,
    `| lifted: groups, sampled tokens, USD; the spend equal to the sums over its messages | ${run.final.groups}, ${run.final.sampled}, $${run.final.usd.toFixed(6)}; ${run.final.exact ? "yes" : "no"} |`,
    `| wall time | ${run.seconds.toFixed(0)} s |`,
    `| the spend unchanged by every kill, starts refused past the budget, the overshoot within the groups in flight, every example done once lifted | ${verdictLine(run.ok, run.problems)} |`,
  ].join("\n");
}

function fleetSection(fleet: (FleetRunResult & { commit?: string }) | null): string {
  if (fleet === null) return "Not run yet: `npm run test:fleet`.";
  const hosts = fleet.requestsByHost.map((n, i) => `host ${i}: ${n}`).join(", ");
  return [
    `Produced by \`npm run test:fleet${fleet.short ? " -- --short" : ""}\` ${ranOn(fleet.date, [fleet.commit])}: ${fleet.hosts} simulated hosts, each \`edgeroll sim\` in a process of its own`,
    `(${fleet.latency.ttftMs} ms to first token, ${fleet.latency.msPerToken} ms per token), host ${fleet.slowHost} ${fleet.slowFactor} times slower throughout, behind one comma-separated \`INFERENCE_BASE_URL\`.`,
    `${fleet.groups - fleet.lateGroups} marathon groups of ${fleet.groupSize} (${fleet.turns} turns an episode) start at once; host ${fleet.killedHost} is SIGKILLed while they run and started again on the same port ${fleet.revivedAtSeconds - fleet.killedAtSeconds > 0 ? `${(fleet.revivedAtSeconds - fleet.killedAtSeconds).toFixed(0)} s later` : "later"};`,
    `${fleet.lateGroups} more groups start once it is readmitted. Times are seconds from the first group's start.`,
    "",
    "| figure | value |",
    "|---|---|",
    `| host ${fleet.killedHost} SIGKILLed, with episodes on it | ${seconds(fleet.killedAtSeconds)}, ${fleet.inFlightOnKilledHost} |`,
    `| shown ejected by \`GET /v1/hosts\` | ${seconds(fleet.ejectedAtSeconds)} |`,
    `| started again / readmitted (on trial) / healthy again | ${seconds(fleet.revivedAtSeconds)} / ${seconds(fleet.readmittedAtSeconds)} / ${seconds(fleet.healthyAgainAtSeconds)} |`,
    `| generations answered by host (the killed one: after its restart) | ${hosts} |`,
    `| other hosts ever shown ejected | ${fleet.otherEjections ?? "not counted"} |`,
    `| groups landed / landed as failed / served to a trainer | ${fleet.landed} / ${fleet.failedGroups} / ${fleet.served} |`,
    `| episodes completed / truncated / failed | ${ends(fleet.episodeEnds)} |`,
    `| lost / duplicated | ${fleet.lost} / ${fleet.duplicated} |`,
    `| wall time | ${fleet.seconds.toFixed(0)} s |`,
    `| every group landed, none as failed, every episode completed; the dead host ejected, readmitted and answering again; the slow one serving; no other host ejected | ${verdictLine(fleet.ok, fleet.problems)} |`,
  ].join("\n");
}

const cell = (text: string | number) => String(text).replaceAll("|", "\\|").replaceAll("\n", " ");
const ends = (e: EpisodeEnds) => `${e.completed} / ${e.truncated} / ${e.failed}`;
/** A run's verdict in its table: yes, or NO with every reason. */
const verdictLine = (ok: boolean, problems: readonly string[]) =>
  ok ? "yes" : `**NO**: ${problems.map(cell).join("; ")}`;

function table(rows: readonly Row[]): string {
  return [
    "| fault | tried | what happened | expected | lost | duplicated | as expected |",
    "|---|---|---|---|---|---|---|",
    ...rows.map(
      (r) =>
        `| ${cell(r.fault)} | ${cell(r.tried)} | ${cell(r.outcome)} | ${cell(r.expected)} | ${r.lost} | ${r.duplicated} | ${r.ok ? "yes" : "**NO**"} |`,
    ),
  ].join("\n");
}

const WORKERD_TESTS = [
  [
    "Durable Object evicted mid-turn",
    "test/worker/restarts.test.ts",
    "3 episodes parked on a persisted retry at turn 2, object evicted, resumed from storage; landed once, transcripts contiguous, storage deleted",
  ],
  [
    "Durable Object evicted mid-scoring",
    "test/worker/restarts.test.ts",
    "scoring times out once, object evicted while the scoring retry waits; resumed, graded, landed once",
  ],
  [
    "Durable Object evicted mid-landing",
    "test/worker/restarts.test.ts",
    "D1 refuses the landing, object evicted while the landing retry waits; resumed, landed once",
  ],
  [
    "generation lost with its instance",
    "test/worker/restarts.test.ts",
    "generations marked sent by a dead instance are re-dispatched, counted in `redispatches`, and the group lands",
  ],
  [
    "generation lost to more restarts than MAX_REDISPATCHES",
    "test/worker/restarts.test.ts",
    'one episode\'s generation lost with its instance at 4 turns running (MAX_REDISPATCHES 3): it ends failed `redispatch_limit`, "generation lost to 4 restarts", after 3 re-dispatches; the other episodes complete and the group lands once',
  ],
  [
    "duplicate alarm delivery",
    "test/worker/restarts.test.ts",
    "10 extra alarm() calls while running and after landing: no second driver, one landing",
  ],
  [
    "D1 write failure during landing",
    "test/worker/rollout-group.test.ts",
    "messages table renamed away: object keeps transcripts, records `last_error`, retries, lands when D1 is back",
  ],
  [
    "environment throws",
    "test/worker/rollout-group.test.ts",
    "6 episodes, those whose first guess is odd fail `env_error`, the others land with advantages",
  ],
  [
    "host hangs past a 2 s deadline",
    "test/worker/rollout-group.test.ts",
    "exactly 2 requests (one retry), then `generation_timeout`; late output never in the transcript",
  ],
  [
    "trainer bumps the version past max_lag",
    "test/worker/async-rl.test.ts",
    "generations hang on turn 2; the bump aborts them (one request each, no timeout retry): every episode ends `stale_policy` with its transcript, the group lands, another run's group completes",
  ],
  [
    "trainer pauses the run",
    "test/worker/async-rl.test.ts",
    "paused longer than the 2 s deadline: no host request, no episode failed; resumed, every episode completes, each turn recording the new version",
  ],
  [
    "request schemas, fuzzed",
    "test/worker/fuzz.test.ts",
    "150 mutated or random bodies for POST /v1/groups and 150 for the lease: no 5xx, a refusal stores nothing",
  ],
  [
    "action parser and episodes, fuzzed",
    "test/sdk/properties.test.ts",
    "2,500 random or protocol-shaped actions parsed without a throw; 600 random-action episodes end with a valid reward",
  ],
] as const;

export function renderReport(): void {
  const suites = ["host", "env", "remote", "trainer", "input", "judge"]
    .map((name) =>
      read<{ date: string; short: boolean; seconds: number; rows: Row[] }>(`faults-${name}`),
    )
    .filter((s) => s !== null);
  const faults =
    suites.length === 0
      ? null
      : {
          date: suites.map((s) => s.date).sort()[0] as string,
          commits: suites.map((s) => s.commit),
          short: suites.some((s) => s.short),
          seconds: suites.reduce((a, s) => a + s.seconds, 0),
          rows: suites.flatMap((s) => s.rows),
        };
  // A result written before the runs recorded their verdict's reasons is not this code's.
  const crash = current(read<CrashResult>("crash"));
  const policy = read<{ date: string; short: boolean; seconds: number; rows: Row[] }>(
    "policy-crash",
  );
  const load = current(read<LoadResult>("load"));
  const sections = [
    "# Reliability",
    "",
    "What edgeroll does when things go wrong, measured. Every table below is written by a command in this",
    'repository; rerun it and this file is rewritten with your figures. "Lost" counts episodes (or groups)',
    'that should have landed and did not; "duplicated" counts any that landed twice. The runs use the real',
    "stack: the Worker under `wrangler dev` (workerd, Durable Objects and D1 on disk) and the inference",
    "simulator as an HTTP host, steered per request by the directives in `src/sim/directives.ts`.",
    "",
    "## Faults and bad input",
    "",
    faults
      ? `Produced by \`npm run reliability\`${faults.short ? " -- --short" : ""} ${ranOn(faults.date, faults.commits)} in ${faults.seconds.toFixed(0)} s (generation deadlines of 10 s, a 2 s step timeout, and judge calls of 2 s within a 10 s score call, so that deadline faults finish quickly).`
      : "Not run yet: `npm run reliability`.",
    "",
    faults ? table(faults.rows) : "",
    "",
    "## Process crash",
    "",
    crash
      ? [
          `Produced by \`npm run test:crash${crash.short ? " -- --short" : ""}\` ${ranOn(crash.date, [crash.commit])}: ${crash.groups} groups of ${crash.groupSize} episodes started through \`wrangler dev\`,`,
          `in ${crash.kills.length + 1} waves, one started shortly before each of ${crash.kills.length} SIGKILLs of the workerd process tree (restarted on the same`,
          `state directory after each) and the last after them; MAX_REDISPATCHES ${crash.maxRedispatches}, more than the kills, so no episode can run out of re-dispatches.`,
          "",
          "| figure | value |",
          "|---|---|",
          `| kills (seconds into the run: groups started, mid-episode, scoring, landed) | ${crash.kills.map((k) => `${k.atSeconds.toFixed(1)} s: ${k.started}, ${k.midEpisode}, ${k.scoring}, ${k.landedBefore}`).join("; ")} |`,
          `| groups started / landed / landed as failed | ${crash.groups} / ${crash.landedGroups} / ${crash.failedGroups} |`,
          `| episodes expected / landed | ${crash.expectedEpisodes} / ${crash.episodes} |`,
          `| episodes completed / truncated / failed | ${ends(crash.episodeEnds)} |`,
          `| duplicated episodes | ${crash.duplicatedEpisodes} |`,
          `| transcripts with gaps or a turn count that disagrees | ${crash.brokenTranscripts} |`,
          `| episodes without a final status | ${crash.unaccountedEpisodes} |`,
          `| generations lost with a killed process and re-dispatched | ${crash.redispatches} |`,
          `| episode failures by reason | ${
            Object.entries(crash.failureReasons)
              .map(([r, n]) => `${r}: ${n}`)
              .join(", ") || "none"
          } |`,
          `| wall time | ${crash.seconds.toFixed(0)} s |`,
          `| every group landed exactly once and none as failed, every episode there once and completed, every kill mid-episode | ${verdictLine(crash.ok, crash.problems)} |`,
        ].join("\n")
      : "Not run yet: `npm run test:crash`.",
    "",
    "## Policy changes during crashes",
    "",
    policy
      ? [
          `Produced by \`npm run test:policy-crash${policy.short ? " -- --short" : ""}\` ${ranOn(policy.date, [policy.commit])} in ${policy.seconds.toFixed(0)} s: the trainer's`,
          "policy calls (POST /v1/runs/:id/policy) while the workerd process tree is killed with SIGKILL and restarted",
          "on the same state directory (a 1 s heartbeat, 5 s generation deadlines).",
          "",
          table(policy.rows),
        ].join("\n")
      : "Not run yet: `npm run test:policy-crash`.",
    "",
    "## A run's producer during crashes",
    "",
    producerCrashSection(read<ProducerCrashResult>("producer-crash")),
    "",
    "## A run's bill and budget during crashes",
    "",
    budgetCrashSection(read<BudgetCrashResult>("budget-crash")),
    "",
    "## Load",
    "",
    load
      ? [
          `Produced by \`npm run test:load${load.short ? " -- --short" : ""}\` ${ranOn(load.date, [load.commit])}: ${load.groups} groups of ${load.groupSize} episodes started at once against the simulator`,
          `(${load.latency.ttftMs} ms to first token, ${load.latency.msPerToken} ms per token, ${load.latency.msPerPromptToken} ms per prompt token), then leased and acked.`,
          "",
          "| figure | value |",
          "|---|---|",
          `| groups started / landed / landed as failed / served to a trainer | ${load.started} / ${load.landed} / ${load.failedGroups} / ${load.served} |`,
          `| episodes landed / distinct | ${load.episodes} / ${load.distinctEpisodes} |`,
          `| lost / duplicated | ${load.lost} / ${load.duplicated} |`,
          `| episodes completed / truncated / failed | ${ends(load.episodeEnds)} |`,
          `| most episodes in flight at once | ${load.peakInFlightEpisodes} |`,
          `| sampled turns, and turns per second | ${load.turns}, ${load.turnsPerSecond.toFixed(1)} |`,
          `| turn overhead p50 / p99 / mean (ms) | ${load.overheadMs.p50} / ${load.overheadMs.p99} / ${load.overheadMs.mean?.toFixed(1)} |`,
          `| wall time | ${load.seconds.toFixed(0)} s |`,
          `| started = landed = served, none landed as failed, every episode completed, nothing lost or duplicated | ${verdictLine(load.ok, load.problems)} |`,
          "",
          "Turn overhead is measured by the inference host: the time from finishing an episode's generation t",
          "to receiving its request t+1 — stepping the environment, persisting, the permit, building the request.",
        ].join("\n")
      : "Not run yet: `npm run test:load`.",
    "",
    "## A host of a fleet killed",
    "",
    fleetSection(current(read<FleetRunResult>("fleet"))),
    "",
    "## In the test suite (`npm test`)",
    "",
    "Faults that need the test harness's control over Durable Objects (eviction, alarm delivery) run in",
    "workerd through `@cloudflare/vitest-plugin`, against the simulator as a real HTTP host. Rerun one with",
    "`npx vitest run <file>`; each passes only if the group lands exactly once with every episode accounted for.",
    "",
    "| fault | file | what the test does and asserts |",
    "|---|---|---|",
    ...WORKERD_TESTS.map(([fault, file, what]) => `| ${fault} | \`${file}\` | ${what} |`),
    "",
    "## Access",
    "",
    "Bearer tokens by role from the `API_TOKENS` secret; constant-time comparison of SHA-256 digests; 401",
    "without or with an unknown token, 403 with a token that lacks the role; a batch can be settled only by",
    "the trainer that leased it; with no tokens configured the Worker serves local requests only.",
    "`test/worker/access.test.ts` checks every route against every role.",
    "",
  ];
  writeFileSync(FILE, sections.join("\n"));
}

if (process.argv[1]?.endsWith("report.ts")) renderReport();
