/**
 * `npm run test:budget-crash [-- --short]`: a run's bill and budget across SIGKILLs, on
 * `wrangler dev`. A run produces itself under a budget of sampled tokens; several times mid-run
 * it is paused (interrupting its generations), its spend read, the workerd process tree
 * SIGKILLed and restarted on the same state, and its spend read again: the two must be equal.
 * Resumed, it must stop starting groups once the budget is reached (its producer waiting, a
 * POST refused 429 budget_exhausted), pass the limit by no more than its last groups in flight
 * spent, keep that figure across one more SIGKILL, and finish once the limit is lifted, its
 * final spend the sums over its messages. Writes reliability/results/budget-crash.json and
 * docs/reliability.md.
 */
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { applyMigrations, startWorker, stopProcessGroup } from "../src/cli/local-stack";
import { apiTokensVar, localTokens } from "../src/cli/local-tokens";
import { freePort } from "../src/cli/ports";
import { runSql } from "../src/cli/sql";
import { EdgerollClient, EdgerollError, type SpendView } from "../src/client/edgeroll-client";
import { startSimulator } from "../src/sim/server";
import { flag, writeResult } from "./harness";
import { renderReport } from "./report";

const short = flag("short");
const EXAMPLES = short ? 24 : 48;
const KILLS = short ? 2 : 4;
const MAX_IN_FLIGHT = 4;
const RUN = "budget-crash";
const PRICE = { prompt: 0.2, cached: 0.05, completion: 0.8 };

const started = Date.now();
const state = mkdtempSync(join(tmpdir(), "edgeroll-budget-crash-"));
const simulator = await startSimulator({
  // Slow enough that a kill finds groups in flight.
  latency: { ttftMs: 200, msPerToken: 10, msPerPromptToken: 0.05 },
});
applyMigrations(state);
const tokens = localTokens(state);
const port = await freePort();
const worker = {
  persistTo: state,
  port,
  inferenceUrl: simulator.url,
  vars: { HEARTBEAT_S: "1", MAX_REDISPATCHES: "20", INFERENCE_PRICE: JSON.stringify(PRICE) },
  secrets: { API_TOKENS: apiTokensVar(tokens) },
};
const client = new EdgerollClient({
  baseUrl: `http://127.0.0.1:${port}`,
  token: tokens.admin,
  attempts: 20,
});
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const sql = (query: string) => runSql(query, { persistTo: state });

/** The fields of two spend reads that differ. */
const differing = (a: SpendView, b: SpendView) =>
  (Object.keys(a) as (keyof SpendView)[]).filter((key) => a[key] !== b[key]);

let process_: ChildProcess = await startWorker(worker);
const problems: string[] = [];
const kills: {
  atSeconds: number;
  groupsInFlight: number;
  sampledInFlight: number;
  sampled: number;
  differing: string[];
}[] = [];

/** Pauses the run, reads its spend, SIGKILLs the Worker, restarts it, reads again. */
async function killBetweenReads(): Promise<void> {
  await client.setPolicy(RUN, { version: 0, paused: true, interrupt: true });
  await client.waitIdle(RUN, { timeoutMs: 60_000 });
  // Gradings already under way finish (a score call is milliseconds here).
  await sleep(1000);
  const before = (await client.getRun(RUN)).costs;
  await stopProcessGroup(process_, "SIGKILL");
  process_ = await startWorker(worker);
  const after = (await client.getRun(RUN)).costs;
  const changed = differing(before.total, after.total);
  kills.push({
    atSeconds: (Date.now() - started) / 1000,
    groupsInFlight: before.groups_in_flight,
    sampledInFlight: before.in_flight.sampled_tokens,
    sampled: before.total.sampled_tokens,
    differing: changed,
  });
  console.log(
    `kill ${kills.length}: ${before.total.sampled_tokens} sampled tokens (${before.in_flight.sampled_tokens} in ${before.groups_in_flight} groups in flight); after: ${changed.length === 0 ? "the same" : `differs in ${changed.join(", ")}`}`,
  );
  if (changed.length > 0)
    problems.push(
      `kill ${kills.length}: the spend differs after the restart in ${changed.join(", ")}: ${JSON.stringify(before.total)} then ${JSON.stringify(after.total)}`,
    );
}

try {
  // Guess-number: several turns an episode, so a group in flight has spent something already.
  const lines = Array.from({ length: EXAMPLES }, (_, i) =>
    JSON.stringify({
      id: `q-${i}`,
      input: "I'm thinking of a whole number between 1 and 100. Find it.",
      metadata: { secret: 1 + ((i * 37) % 100) },
    }),
  );
  await client.pushDataset(RUN, lines.join("\n"));
  // About half of what the dataset spends (a group of four spends some 200 sampled tokens here).
  await client.setPolicy(RUN, { version: 0 });
  const budget = short ? 2400 : 4800;
  await client.setBudget(RUN, { max_sampled_tokens: budget });
  await client.startProducer(RUN, {
    env: "guess-number",
    dataset: RUN,
    group_size: 4,
    max_in_flight: MAX_IN_FLIGHT,
    sampling: { model: "sim", temperature: 1, max_completion_tokens: 32 },
  });

  // Mid-run: killed between two reads of the spend, with groups in flight.
  for (let k = 0; k < KILLS; k++) {
    await sleep(1000 + Math.random() * 1000);
    const run = await client.getRun(RUN);
    if (run.budget?.exhausted === true) break;
    await killBetweenReads();
    await client.setPolicy(RUN, { version: 0, paused: false });
  }
  if (kills.filter((k) => k.groupsInFlight > 0).length === 0)
    problems.push("no kill found groups in flight");

  // Run on until the budget stops it: the producer waits, nothing is in flight.
  const deadline = Date.now() + 300_000;
  for (;;) {
    const producer = await client.getProducer(RUN);
    if (producer.waiting !== null && producer.groups_in_flight === 0) break;
    if (producer.state !== "running") {
      problems.push(`the producer ended ${producer.state} before its budget was reached`);
      break;
    }
    if (Date.now() > deadline) throw new Error("the budget never stopped the run");
    await sleep(500);
  }
  const stopped = await client.getBudget(RUN);
  const waiting = (await client.getProducer(RUN)).waiting;
  const groupsAtStop = (await client.getRun(RUN)).groups.total;
  // Groups in flight when the limit was reached are those that landed after it (none started
  // since): at most MAX_IN_FLIGHT, the last to land. What they spent bounds the overshoot.
  const lastLanded = sql(
    `SELECT g.id, SUM(e.completion_tokens) AS sampled FROM groups g JOIN episodes e ON e.group_id = g.id
     WHERE g.run_id = '${RUN}' GROUP BY g.id ORDER BY g.finished_at DESC LIMIT ${MAX_IN_FLIGHT}`,
  );
  const inFlightBound = lastLanded.reduce((n, r) => n + Number(r.sampled), 0);
  const overshoot = stopped.overshoot.max_sampled_tokens ?? 0;
  if (!stopped.exhausted) problems.push("the producer waits but the budget is not exhausted");
  if (overshoot > inFlightBound)
    problems.push(
      `overshoot ${overshoot} is more than the last groups in flight spent (${inFlightBound})`,
    );
  let refused = "";
  try {
    await client.startGroup({
      env: "exact-answer",
      example: { id: "extra", input: "What is 1 + 1?", output: "2" },
      group_size: 2,
      run_id: RUN,
      sampling: { model: "sim", temperature: 0 },
    });
    problems.push("a group started past the budget");
  } catch (error) {
    refused = error instanceof EdgerollError ? error.code : String(error);
    if (refused !== "budget_exhausted") problems.push(`a start past the budget: ${refused}`);
  }

  // Killed while stopped by its budget: the same spend, and still nothing starts.
  const beforeStopKill = (await client.getRun(RUN)).costs.total;
  await stopProcessGroup(process_, "SIGKILL");
  process_ = await startWorker(worker);
  await sleep(3000);
  const afterStopKill = await client.getRun(RUN);
  const changedAtStop = differing(beforeStopKill, afterStopKill.costs.total);
  if (changedAtStop.length > 0)
    problems.push(
      `stopped by its budget, the spend changed across a SIGKILL in ${changedAtStop.join(", ")}`,
    );
  if (afterStopKill.groups.total !== groupsAtStop)
    problems.push(
      `${afterStopKill.groups.total - groupsAtStop} groups started after the restart past the budget`,
    );

  // Lifted: the producer finishes the dataset.
  await client.setBudget(RUN, { max_sampled_tokens: null });
  const done = await client.waitForProducer(RUN, { intervalMs: 500, timeoutMs: 300_000 });
  if (done.state !== "done") problems.push(`the producer ended ${done.state}: ${done.reason}`);
  const finalCosts = (await client.getRun(RUN)).costs.total;
  await stopProcessGroup(process_);
  const [raw] = sql(
    `SELECT COUNT(*) AS generations, SUM(m.completion_tokens) AS sampled, SUM(m.prompt_tokens) AS prompt,
       SUM(m.usd) AS usd FROM messages m JOIN episodes e ON e.id = m.episode_id
     WHERE e.run_id = '${RUN}' AND m.sampled = 1`,
  );
  const exact =
    finalCosts.sampled_tokens === Number(raw?.sampled) &&
    finalCosts.prompt_tokens === Number(raw?.prompt) &&
    finalCosts.generations === Number(raw?.generations) &&
    Math.abs(finalCosts.usd - Number(raw?.usd)) < 1e-6;
  if (!exact)
    problems.push(
      `the final spend ${JSON.stringify(finalCosts)} is not the messages' sums ${JSON.stringify(raw)}`,
    );
  const groups = Number(sql(`SELECT COUNT(*) AS n FROM groups WHERE run_id = '${RUN}'`)[0]?.n);
  if (groups !== EXAMPLES) problems.push(`${groups} groups for ${EXAMPLES} examples`);

  const result = {
    date: new Date().toISOString(),
    short,
    examples: EXAMPLES,
    budget,
    kills,
    stoppedAt: {
      groups: groupsAtStop,
      sampled: stopped.spent.max_sampled_tokens,
      overshoot,
      inFlightBound,
      waiting,
      refused,
      unchangedAcrossKill: changedAtStop.length === 0,
    },
    final: { groups, sampled: finalCosts.sampled_tokens, usd: finalCosts.usd, exact },
    seconds: (Date.now() - started) / 1000,
    ok: problems.length === 0,
    problems,
  };
  writeResult("budget-crash", result);
  renderReport();
  console.log(JSON.stringify(result, null, 2));
  for (const problem of problems) console.error(`budget-crash: ${problem}`);
  process.exitCode = result.ok ? 0 : 1;
} finally {
  await stopProcessGroup(process_);
  await simulator.close();
  rmSync(state, { recursive: true, force: true });
}
