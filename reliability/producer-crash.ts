/**
 * `npm run test:producer-crash [-- --short]`: a run that produces itself on `wrangler dev`,
 * SIGKILLed (the whole workerd process tree) several times mid-run at random points and
 * restarted on the same state directory each time. The producer must finish `done` with exactly
 * one group per example and epoch: none lost to a kill between writing a start down and sending
 * it, none doubled by sending it again. Writes reliability/results/producer-crash.json and
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
import { EdgerollClient, type ProducerView } from "../src/client/edgeroll-client";
import { startSimulator } from "../src/sim/server";
import { flag, writeResult } from "./harness";
import { renderReport } from "./report";

const short = flag("short");
const EXAMPLES = short ? 24 : 64;
const EPOCHS = 2;
const KILLS = short ? 3 : 6;
const RUN = "producer-crash";
const DATASET = "producer-crash";

const started = Date.now();
const state = mkdtempSync(join(tmpdir(), "edgeroll-producer-crash-"));
// The host outlives the Worker's crashes, as a real GPU host would.
const simulator = await startSimulator({
  latency: { ttftMs: 100, msPerToken: 5, msPerPromptToken: 0.05 },
});
applyMigrations(state);
const tokens = localTokens(state);
const port = await freePort();
const worker = {
  persistTo: state,
  port,
  inferenceUrl: simulator.url,
  vars: { HEARTBEAT_S: "1", MAX_REDISPATCHES: "20" },
  secrets: { API_TOKENS: apiTokensVar(tokens) },
};
const client = new EdgerollClient({
  baseUrl: `http://127.0.0.1:${port}`,
  token: tokens.admin,
  attempts: 20,
});
const dataset = Array.from({ length: EXAMPLES }, (_, i) =>
  JSON.stringify({ id: `q-${i}`, input: `What is ${i} + ${2 * i}?`, output: String(3 * i) }),
).join("\n");

/** The producer's view, or null while the Worker is down. */
const viewNow = () => client.getProducer(RUN).catch(() => null);

let process_: ChildProcess = await startWorker(worker);
const kills: { atSeconds: number; started: number; inFlight: number }[] = [];
try {
  await client.pushDataset(DATASET, dataset);
  await client.startProducer(RUN, {
    env: "exact-answer",
    dataset: DATASET,
    group_size: 4,
    epochs: EPOCHS,
    shuffle_seed: 3,
    max_in_flight: 6,
    sampling: { model: "sim", temperature: 1, max_completion_tokens: 32 },
  });
  for (let k = 0; k < KILLS; k++) {
    // A random while into the run: the producer is between ticks, mid-start or mid-landing.
    await new Promise((resolve) => setTimeout(resolve, 800 + Math.random() * 1500));
    const before: ProducerView | null = await viewNow();
    await stopProcessGroup(process_, "SIGKILL");
    kills.push({
      atSeconds: (Date.now() - started) / 1000,
      started: before?.groups_started ?? -1,
      inFlight: before?.groups_in_flight ?? -1,
    });
    console.log(
      `kill ${k + 1}/${KILLS}: ${before?.groups_started} groups started, ${before?.groups_in_flight} in flight; restarting`,
    );
    process_ = await startWorker(worker);
  }
  const view = await client.waitForProducer(RUN, { intervalMs: 500, timeoutMs: 600_000 });
  await stopProcessGroup(process_);
  const sql = (query: string) => runSql(query, { persistTo: state });
  const perExample = sql(
    `SELECT example_id, COUNT(*) AS n FROM groups WHERE run_id = '${RUN}' GROUP BY example_id`,
  );
  const groups = Number(sql(`SELECT COUNT(*) AS n FROM groups WHERE run_id = '${RUN}'`)[0]?.n);
  const failed = Number(
    sql(`SELECT COUNT(*) AS n FROM groups WHERE run_id = '${RUN}' AND status != 'landed'`)[0]?.n,
  );
  const problems: string[] = [];
  if (view.state !== "done") problems.push(`the producer ended ${view.state}: ${view.reason}`);
  if (groups !== EXAMPLES * EPOCHS)
    problems.push(`${groups} groups for ${EXAMPLES} examples x ${EPOCHS} epochs`);
  const wrong = perExample.filter((r) => Number(r.n) !== EPOCHS);
  if (perExample.length !== EXAMPLES || wrong.length > 0)
    problems.push(
      `${perExample.length} examples had groups; not ${EPOCHS} each: ${wrong.map((r) => `${r.example_id} x${r.n}`).join(", ")}`,
    );
  if (failed > 0) problems.push(`${failed} groups did not land`);
  // Per example and epoch: a group missing is lost, a second one is a duplicate.
  const had = new Map(perExample.map((r) => [String(r.example_id), Number(r.n)]));
  const ids = Array.from({ length: EXAMPLES }, (_, i) => `q-${i}`);
  const lost = ids.reduce((sum, id) => sum + Math.max(0, EPOCHS - (had.get(id) ?? 0)), 0);
  const duplicated = ids.reduce((sum, id) => sum + Math.max(0, (had.get(id) ?? 0) - EPOCHS), 0);
  const midRun = kills.filter((k) => k.inFlight > 0).length;
  if (midRun === 0) problems.push("no kill found the producer with groups in flight");
  const result = {
    date: new Date().toISOString(),
    short,
    examples: EXAMPLES,
    epochs: EPOCHS,
    kills,
    killsMidRun: midRun,
    seconds: (Date.now() - started) / 1000,
    groups,
    failed,
    lost,
    duplicated,
    state: view.state,
    ok: problems.length === 0,
    problems,
  };
  writeResult("producer-crash", result);
  renderReport();
  console.log(JSON.stringify(result, null, 2));
  for (const problem of problems) console.error(`producer-crash: ${problem}`);
  process.exitCode = result.ok ? 0 : 1;
} finally {
  await stopProcessGroup(process_);
  await simulator.close();
  rmSync(state, { recursive: true, force: true });
}
