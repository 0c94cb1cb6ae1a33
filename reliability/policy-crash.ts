/**
 * `npm run test:policy-crash [-- --short]`: the trainer's policy calls, through SIGKILLs of the
 * workerd process tree (`wrangler dev`, restarted on the same state directory each time).
 *
 * - A version bump past `max_lag`: a wave of groups runs at version 0, the process is killed, the
 *   trainer bumps to 2 as it comes back, a second wave starts at 2, and it is killed again. The
 *   first wave's unfinished episodes must end `stale_policy` with their transcripts, the second
 *   wave must complete, and every group must land exactly once.
 * - A pause: groups start in a paused run, the process is killed while they wait, and they keep
 *   waiting past a generation deadline after the restart; resumed, every episode must complete,
 *   with no request reaching the host before the resume.
 * - An interrupted sync of token-in groups: the process is killed right after the interrupt's
 *   answer, and again while the continuations stream. Every token the aborted generations had
 *   received must be kept (none lost, none duplicated), and every continuation must start from
 *   exactly the kept tokens, with an exact sample.
 *
 * Writes reliability/results/policy-crash.json and docs/reliability.md.
 */
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pMap from "p-map";
import { applyMigrations, startWorker, stopProcessGroup } from "../src/cli/local-stack";
import { apiTokensVar, localTokens } from "../src/cli/local-tokens";
import { freePort } from "../src/cli/ports";
import { runSql } from "../src/cli/sql";
import { EdgerollClient, type GroupView } from "../src/client/edgeroll-client";
import { SamplingSchema } from "../src/rollout/group-spec";
import { END } from "../src/rollout/outcomes";
import type { RecordedAnswer } from "../src/sim/host-ledger";
import { startSimulator } from "../src/sim/server";
import { checkContinuations } from "./continuation-check";
import { brokenTranscripts, countBy, flag, guessRequest, writeResult } from "./harness";
import { renderReport } from "./report";
import type { Row } from "./suites";

const short = flag("short");
const WAVE = short ? 6 : 16;
const PAUSED_GROUPS = short ? 4 : 8;
const CUT_GROUPS = short ? 4 : 8;
/** The generation deadline: a paused episode waits past it without timing out. */
const DEADLINE_S = 5;

const started = Date.now();
const state = mkdtempSync(join(tmpdir(), "edgeroll-policy-crash-"));
const simulator = await startSimulator({ latency: { ttftMs: 100, msPerToken: 4 } });
applyMigrations(state);
const tokens = localTokens(state);
const worker = {
  persistTo: state,
  port: await freePort(),
  inferenceUrl: simulator.url,
  vars: {
    HEARTBEAT_S: "1",
    MAX_REDISPATCHES: "20",
    GENERATION_DEADLINE_MIN_S: String(DEADLINE_S),
    GENERATION_DEADLINE_MAX_S: String(DEADLINE_S),
  },
  secrets: { API_TOKENS: apiTokensVar(tokens) },
};
const client = new EdgerollClient({
  baseUrl: `http://127.0.0.1:${worker.port}`,
  token: tokens.admin,
  attempts: 20,
});
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const sql = (query: string) => runSql(query, { persistTo: state });

let process_: ChildProcess = await startWorker(worker);
async function killAndRestart(): Promise<void> {
  await stopProcessGroup(process_, "SIGKILL");
  process_ = await startWorker(worker);
}

async function startAll(run: string, model: string, count: number, from = 0): Promise<string[]> {
  return pMap(
    Array.from({ length: count }, (_, i) => from + i),
    async (i) =>
      (
        await client.startGroup(guessRequest(run, i, model), {
          idempotencyKey: `${run}:${i}`,
        })
      ).group_id,
    { concurrency: 8 },
  );
}

const waitAll = (ids: readonly string[]): Promise<GroupView[]> =>
  pMap(ids, (id) => client.waitForGroup(id, { timeoutMs: 300_000, intervalMs: 300 }), {
    concurrency: 16,
  });

/** What D1 holds for a run, read with the Worker stopped: rows, duplicates, broken transcripts. */
function landed(run: string) {
  const episodes =
    sql(`SELECT COUNT(*) AS n, COUNT(DISTINCT id) AS ids,
      SUM(status NOT IN ('completed', 'truncated', 'failed')) AS unaccounted
      FROM episodes WHERE run_id = '${run}'`)[0] ?? {};
  const broken = brokenTranscripts(sql, run);
  return {
    groups: Number(sql(`SELECT COUNT(*) AS n FROM groups WHERE run_id = '${run}'`)[0]?.n ?? 0),
    episodes: Number(episodes.n ?? 0),
    duplicated: Number(episodes.n ?? 0) - Number(episodes.ids ?? 0),
    unaccounted: Number(episodes.unaccounted ?? 0),
    broken,
  };
}

const endOf = (e: GroupView["episodes"][number]) =>
  e.failure_reason === null ? e.state : `failed: ${e.failure_reason}`;
const describeEnds = (groups: readonly GroupView[]) =>
  Object.entries(
    countBy(
      groups.flatMap((g) => g.episodes),
      endOf,
    ),
  )
    .map(([end, n]) => `${n} ${end}`)
    .join(", ");

const rows: Row[] = [];
try {
  // A version bump past max_lag, with a kill before it and one after.
  const bumpRun = "policy-bump";
  const bumpModel = "sim+latency:300";
  await client.setPolicy(bumpRun, { version: 0, max_lag: 1 });
  const first = await startAll(bumpRun, bumpModel, WAVE);
  await sleep(1500);
  await killAndRestart();
  const bumped = await client.setPolicy(bumpRun, { version: 2 });
  const second = await startAll(bumpRun, bumpModel, WAVE, WAVE);
  await sleep(1500);
  await killAndRestart();
  const firstWave = await waitAll(first);
  const secondWave = await waitAll(second);

  // A pause, a kill while paused, a wait past the deadline, then the resume.
  const pauseRun = "policy-pause";
  const pauseModel = "sim+tag:paused";
  const requestsFor = (model: string) => simulator.stats().byModel[model]?.requests ?? 0;
  await client.setPolicy(pauseRun, { version: 0, paused: true });
  const held = await startAll(pauseRun, pauseModel, PAUSED_GROUPS);
  await sleep(3000);
  const sentBeforeKill = requestsFor(pauseModel);
  await killAndRestart();
  await sleep((DEADLINE_S + 1) * 1000);
  const sentWhilePaused = requestsFor(pauseModel);
  const stillRunning = Number((await client.getRun(pauseRun)).groups.running ?? 0);
  await client.setPolicy(pauseRun, { version: 1, paused: false });
  const resumed = await waitAll(held);

  // An interrupted sync of token-in groups, a SIGKILL right after its answer, and another while
  // the continuations stream (60-token generations at a token every 40 ms).
  const cutRun = "policy-interrupt";
  const cutModel = "sim+tag:interrupt+trickle:40+pad:60+record";
  const cutExtra = { generation: "tokens" as const, tokens: "required" as const };
  const cutRequest = (i: number) => guessRequest(cutRun, i, cutModel, cutExtra);
  await client.setPolicy(cutRun, { version: 0 });
  const cutIds = await pMap(
    Array.from({ length: CUT_GROUPS }, (_, i) => i),
    async (i) =>
      (await client.startGroup(cutRequest(i), { idempotencyKey: `${cutRun}:${i}` })).group_id,
    { concurrency: 8 },
  );
  while ((await client.getRun(cutRun)).in_flight_generations !== CUT_GROUPS * 4) await sleep(50);
  await sleep(1000);
  const abandonedBefore = simulator.stats().abandonedTokens;
  const interrupted = await client.setPolicy(cutRun, { version: 1, paused: true, interrupt: true });
  // The simulator sees each close within moments; what it streamed before is what was cut.
  await sleep(300);
  const streamedToCut = simulator.stats().abandonedTokens - abandonedBefore;
  await killAndRestart();
  await client.setPolicy(cutRun, { version: 1, paused: false });
  await sleep(1000);
  await killAndRestart();
  const cutGroups = await waitAll(cutIds);
  const cutEpisodes = cutGroups.flatMap((g) => g.episodes);
  const keptOf = new Map<string, number>();
  let discardedAtCut = 0;
  for (const e of cutEpisodes) {
    const view = await client.getEpisode(e.episode_id);
    keptOf.set(e.episode_id, view.kept_tokens);
    discardedAtCut += view.discarded_tokens;
  }
  const keptAtCut = [...keptOf.values()].reduce((a, n) => a + n, 0);
  const simBase = simulator.url.replace(/\/v1$/, "");
  const check = await checkContinuations(
    await client.lease({
      run_id: cutRun,
      max_groups: CUT_GROUPS,
      skip_uniform_groups: false,
      include: ["tokens"],
    }),
    (exampleId) =>
      SamplingSchema.parse(cutRequest(Number(exampleId.slice(cutRun.length + 1))).sampling),
    async (id) => keptOf.get(id) ?? 0,
    async (seed) =>
      (await (
        await fetch(`${simBase}/sim/answers?model=${encodeURIComponent(cutModel)}&seed=${seed}`)
      ).json()) as RecordedAnswer,
  );

  await stopProcessGroup(process_);
  const cutRows = landed(cutRun);
  const bumpRows = landed(bumpRun);
  const pauseRows = landed(pauseRun);
  const spans = sql(
    `SELECT COUNT(*) AS n FROM groups WHERE run_id = '${pauseRun}' AND policy_version_min = 1 AND policy_version_max = 1`,
  )[0]?.n;

  const stale = firstWave
    .flatMap((g) => g.episodes)
    .filter((e) => e.failure_reason === END.stale_policy);
  const firstOk = firstWave
    .flatMap((g) => g.episodes)
    .every((e) => e.state === "completed" || e.failure_reason === END.stale_policy);
  const secondOk = secondWave.flatMap((g) => g.episodes).every((e) => e.state === "completed");
  const bumpTotal = 2 * WAVE;
  rows.push({
    fault: "trainer: version bump past max_lag between two SIGKILLs",
    tried: `${WAVE} groups of 4 at v0 (max_lag 1), SIGKILL, bump to v2 as the Worker came back (${bumped.groups_notified} of ${bumped.groups_running} running groups told at once, the rest on their heartbeat), ${WAVE} more at v2, SIGKILL again`,
    outcome: `first wave: ${describeEnds(firstWave)}; second wave: ${describeEnds(secondWave)}; ${bumpRows.groups}/${bumpTotal} groups in D1, ${bumpRows.broken} broken transcripts`,
    expected:
      "the first wave's unfinished episodes end stale_policy with their transcripts; the second wave completes; every group lands once",
    lost: bumpTotal * 4 - bumpRows.episodes,
    duplicated: bumpRows.duplicated,
    ok:
      stale.length > 0 &&
      firstOk &&
      secondOk &&
      bumpRows.groups === bumpTotal &&
      bumpRows.episodes === bumpTotal * 4 &&
      bumpRows.duplicated === 0 &&
      bumpRows.broken === 0 &&
      bumpRows.unaccounted === 0,
  });
  const resumedOk = resumed.every(
    (g) => g.status === "landed" && g.episodes.every((e) => e.state === "completed"),
  );
  rows.push({
    fault: "trainer: pause, SIGKILL while paused, then resume",
    tried: `${PAUSED_GROUPS} groups of 4 started paused; 3 s paused, SIGKILL, restart, ${DEADLINE_S + 1} s more paused (past the ${DEADLINE_S} s generation deadline); resumed at v1`,
    outcome: `host requests while paused: ${sentBeforeKill} before the kill, ${sentWhilePaused} after; ${stillRunning} groups still running at the resume; then ${describeEnds(resumed)}; ${spans}/${PAUSED_GROUPS} groups sampled only by v1`,
    expected:
      "nothing sent while paused; nothing fails or is lost; all complete once resumed, at the new version",
    lost: PAUSED_GROUPS * 4 - pauseRows.episodes,
    duplicated: pauseRows.duplicated,
    ok:
      sentWhilePaused === 0 &&
      stillRunning === PAUSED_GROUPS &&
      resumedOk &&
      Number(spans) === PAUSED_GROUPS &&
      pauseRows.episodes === PAUSED_GROUPS * 4 &&
      pauseRows.duplicated === 0 &&
      pauseRows.broken === 0,
  });
  const lostAtCut = streamedToCut - keptAtCut - discardedAtCut;
  rows.push({
    fault:
      "trainer: interrupted sync of token-in groups, SIGKILL after its answer and during the continuations",
    tried: `${CUT_GROUPS} token-in groups of 4 streaming 60-token turns; 1 s in, a pause with interrupt to v1 (answered with ${interrupted.in_flight_generations} in flight), SIGKILL, restart, resume, SIGKILL 1 s into the continuations, restart`,
    outcome: `${describeEnds(cutGroups)}; ${streamedToCut} tokens streamed to the cut generations: ${keptAtCut} kept, ${discardedAtCut} discarded, ${lostAtCut} in transit (sent by the host, not yet read when the connection closed); ${check.exact} of ${check.continued} continued episodes started from exactly their kept tokens with an exact sample${check.problem === null ? "" : ` (${check.problem})`}; ${cutRows.groups}/${CUT_GROUPS} groups in D1`,
    expected:
      "every token the cut generations had read is kept (none discarded), none duplicated; every continuation, also one re-sent after the second kill, starts from exactly the kept tokens; all complete",
    lost: CUT_GROUPS * 4 - cutRows.episodes,
    duplicated: cutRows.duplicated,
    ok:
      cutEpisodes.every((e) => e.state === "completed") &&
      check.continued > 0 &&
      check.exact === check.continued &&
      discardedAtCut === 0 &&
      cutRows.groups === CUT_GROUPS &&
      cutRows.episodes === CUT_GROUPS * 4 &&
      cutRows.duplicated === 0 &&
      cutRows.broken === 0,
  });
  const seconds = (Date.now() - started) / 1000;
  writeResult("policy-crash", { date: new Date().toISOString(), short, seconds, rows });
  renderReport();
  for (const row of rows)
    console.log(`${row.ok ? "as expected" : "NOT AS EXPECTED"}: ${row.fault}: ${row.outcome}`);
  process.exitCode = rows.every((r) => r.ok) ? 0 : 1;
} finally {
  await stopProcessGroup(process_);
  await simulator.close();
  rmSync(state, { recursive: true, force: true });
}
