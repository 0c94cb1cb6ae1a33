/**
 * `npm run test:crash [-- --short]`: runs groups through `wrangler dev` in waves, one wave
 * started before each of several SIGKILLs of the workerd process tree (at a random point
 * shortly after, so the kill lands mid-episode), restarts it on the same state directory after
 * each, and checks that every group started lands exactly once, none as failed, with every
 * episode there once, whole and completed, and that every kill interrupted something
 * (`crashVerdict`). Writes reliability/results/crash.json and docs/reliability.md.
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
import { startSimulator } from "../src/sim/server";
import { brokenTranscripts, flag, guessRequest, writeResult } from "./harness";
import { renderReport } from "./report";
import { type CrashResult, crashVerdict, type Kill } from "./verdicts";

const short = flag("short");
const GROUPS = short ? 16 : 48;
const SIZE = 4;
const KILLS = short ? 3 : 6;
/** Above the kills: a kill costs an episode at most one re-dispatch, so none can run out. */
const MAX_REDISPATCHES = 20;
const RUN = "crash";

const started = Date.now();
const state = mkdtempSync(join(tmpdir(), "edgeroll-crash-"));
// The host outlives the Worker's crashes, as a real GPU host would.
const simulator = await startSimulator({
  latency: { ttftMs: 150, msPerToken: 8, msPerPromptToken: 0.05 },
});
applyMigrations(state);
const tokens = localTokens(state);
const port = await freePort();
const worker = {
  persistTo: state,
  port,
  inferenceUrl: simulator.url,
  // Wake quickly after a restart, and allow the re-dispatches many kills will cause.
  vars: { HEARTBEAT_S: "1", MAX_REDISPATCHES: String(MAX_REDISPATCHES) },
  secrets: { API_TOKENS: apiTokensVar(tokens) },
};
const client = new EdgerollClient({
  baseUrl: `http://127.0.0.1:${port}`,
  token: tokens.admin,
  attempts: 20,
});
const requests = Array.from({ length: GROUPS }, (_, i) =>
  guessRequest(RUN, i, "sim", {
    sampling: { model: "sim", temperature: 1, seed: 9000 + i, max_completion_tokens: 64 },
  }),
);
const groupIds = new Map<number, string>();

/** Starts (or, by idempotency key, re-finds) the groups in `indexes`; tolerates a dead Worker. */
async function startSome(indexes: readonly number[]): Promise<void> {
  await pMap(
    indexes,
    async (i) => {
      const request = requests[i];
      if (request === undefined) return;
      try {
        const { group_id } = await client.startGroup(request, { idempotencyKey: `${RUN}:${i}` });
        groupIds.set(i, group_id);
      } catch {
        // The Worker was killed mid-call; the next round retries with the same key.
      }
    },
    { concurrency: 16 },
  );
}

/** Where every started group is just before a kill: what the kill will interrupt. */
async function snapshot(): Promise<Omit<Kill, "atSeconds">> {
  const statuses = await pMap(
    [...groupIds.values()],
    (id) =>
      client.getGroup(id).then(
        (g) => g.status,
        () => "unknown",
      ),
    { concurrency: 16 },
  );
  const count = (status: string) => statuses.filter((s) => s === status).length;
  return {
    started: groupIds.size,
    midEpisode: count("running"),
    scoring: count("scoring"),
    landedBefore: count("landed") + count("failed"),
  };
}

let process_: ChildProcess = await startWorker(worker);
const kills: Kill[] = [];
/**
 * Wave `w` holds every (KILLS + 1)-th group, from the w-th: wave k starts just before kill k, the
 * last one after the kills. With it go the groups of earlier waves whose start a kill cut off.
 */
const waveToStart = (w: number) =>
  requests.map((_, i) => i).filter((i) => !groupIds.has(i) && i % (KILLS + 1) <= w);
try {
  for (let k = 0; k < KILLS; k++) {
    await startSome(waveToStart(k));
    // Shorter than a group's episodes (several turns of a few hundred ms each): mid-episode.
    await new Promise((resolve) => setTimeout(resolve, 300 + Math.random() * 900));
    const before = await snapshot();
    await stopProcessGroup(process_, "SIGKILL");
    kills.push({ atSeconds: (Date.now() - started) / 1000, ...before });
    console.log(
      `kill ${k + 1}/${KILLS} at ${kills.at(-1)?.atSeconds.toFixed(1)} s: ${before.started} groups started, ${before.midEpisode} mid-episode, ${before.scoring} scoring, ${before.landedBefore} landed; restarting`,
    );
    process_ = await startWorker(worker);
  }
  await startSome(waveToStart(KILLS));
  if (groupIds.size !== GROUPS)
    throw new Error(`only ${groupIds.size} of ${GROUPS} groups could be started`);

  const finished: GroupView[] = await pMap(
    [...groupIds.values()],
    (id) => client.waitForGroup(id, { timeoutMs: 300_000, intervalMs: 500 }),
    {
      concurrency: 16,
    },
  );
  // Read the database directly, with the Worker stopped so nothing else holds it.
  await stopProcessGroup(process_);
  const sql = (query: string) => runSql(query, { persistTo: state });
  const episodes =
    sql(`SELECT COUNT(*) AS n, COUNT(DISTINCT id) AS distinct_ids, SUM(redispatches) AS redispatches,
    SUM(status = 'completed') AS completed, SUM(status = 'truncated') AS truncated,
    SUM(status = 'failed') AS failed,
    SUM(status NOT IN ('completed', 'truncated', 'failed')) AS unaccounted FROM episodes WHERE run_id = '${RUN}'`)[0] ??
    {};
  const wrongSize =
    sql(`SELECT COUNT(*) AS n FROM (SELECT group_id, COUNT(*) AS c FROM episodes WHERE run_id = '${RUN}'
    GROUP BY group_id HAVING c != ${SIZE})`)[0]?.n;
  const broken = brokenTranscripts(sql, RUN);
  const reasons = sql(`SELECT failure_reason AS reason, COUNT(*) AS n FROM episodes
    WHERE run_id = '${RUN}' AND status = 'failed' GROUP BY failure_reason`);
  const groupRows = Number(
    sql(`SELECT COUNT(*) AS n FROM groups WHERE run_id = '${RUN}'`)[0]?.n ?? 0,
  );

  const figures = {
    date: new Date().toISOString(),
    short,
    groups: GROUPS,
    groupSize: SIZE,
    maxRedispatches: MAX_REDISPATCHES,
    kills,
    seconds: (Date.now() - started) / 1000,
    groupRows,
    landedGroups: finished.filter((g) => g.status === "landed").length,
    failedGroups: finished.filter((g) => g.status === "failed").length,
    episodes: Number(episodes.n ?? 0),
    expectedEpisodes: GROUPS * SIZE,
    duplicatedEpisodes: Number(episodes.n ?? 0) - Number(episodes.distinct_ids ?? 0),
    brokenTranscripts: broken,
    unaccountedEpisodes: Number(episodes.unaccounted ?? 0) + Number(wrongSize ?? 0),
    episodeEnds: {
      completed: Number(episodes.completed ?? 0),
      truncated: Number(episodes.truncated ?? 0),
      failed: Number(episodes.failed ?? 0),
    },
    redispatches: Number(episodes.redispatches ?? 0),
    failureReasons: Object.fromEntries(reasons.map((r) => [String(r.reason), Number(r.n)])),
  };
  const result: CrashResult = { ...figures, ...crashVerdict(figures) };
  writeResult("crash", result);
  renderReport();
  console.log(JSON.stringify({ ...result, kills: result.kills.length }, null, 2));
  for (const problem of result.problems) console.error(`crash: ${problem}`);
  process.exitCode = result.ok ? 0 : 1;
} finally {
  await stopProcessGroup(process_);
  await simulator.close();
  rmSync(state, { recursive: true, force: true });
}
