/** Shared pieces of the reliability runs: a local stack, landing groups, checking transcripts. */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import pMap from "p-map";
import { type LocalStack, type LocalStackOptions, startLocalStack } from "../src/cli/local-stack";
import type {
  EdgerollClient,
  EpisodePage,
  GroupView,
  StartGroupInput,
} from "../src/client/edgeroll-client";

export const RESULTS = resolve(import.meta.dirname, "results");
/** edgeroll's Worker with the test-only environments registered. */
export const FIXTURES_WORKER = resolve(import.meta.dirname, "../fixtures/worker.ts");

export type Episode = EpisodePage["episodes"][number];

/** Starts a stack on a fresh state directory, runs `body`, and always cleans up. */
export async function withStack<T>(
  options: Omit<LocalStackOptions, "persistTo">,
  body: (stack: LocalStack) => Promise<T>,
): Promise<T> {
  const state = mkdtempSync(join(tmpdir(), "edgeroll-reliability-"));
  // The suites and the benchmarks need the test-only environments (chaos, marathon).
  const stack = await startLocalStack({ entry: FIXTURES_WORKER, ...options, persistTo: state });
  try {
    return await body(stack);
  } finally {
    await stack.stop();
    rmSync(state, { recursive: true, force: true });
  }
}

/** Starts every group (idempotently) and waits for all of them to land or fail. */
export async function landGroups(
  client: EdgerollClient,
  requests: readonly StartGroupInput[],
  concurrency = 32,
  timeoutMs = 300_000,
): Promise<GroupView[]> {
  return pMap(
    requests,
    async (request) => {
      const key = `${request.run_id}:${request.example.id}`;
      const started = await client.startGroup(request, { idempotencyKey: key });
      return client.waitForGroup(started.group_id, { timeoutMs, intervalMs: 200 });
    },
    { concurrency },
  );
}

/** Leases and acks everything a run has landed, as trainers would: the groups and episodes served. */
export async function serveEverything(client: EdgerollClient, runId: string) {
  const groups = new Set<string>();
  const episodeIds: string[] = [];
  for (;;) {
    const batch = await client.lease({
      max_groups: 50,
      run_id: runId,
      skip_uniform_groups: false,
      include: [],
    });
    if (batch.batch_id === null) break;
    for (const group of batch.groups) {
      groups.add(group.group_id);
      episodeIds.push(...group.episodes.map((e) => e.episode_id));
    }
    await client.ack(batch.batch_id);
  }
  return { groups, episodeIds };
}

/** Every landed episode of a run, with transcripts. */
export async function episodesOf(client: EdgerollClient, runId: string): Promise<Episode[]> {
  const all: Episode[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listEpisodes({
      run_id: runId,
      include: ["messages"],
      limit: 500,
      ...(cursor ? { cursor } : {}),
    });
    all.push(...page.episodes);
    cursor = page.next_cursor ?? undefined;
  } while (cursor !== undefined);
  return all;
}

/** What landing should guarantee: every episode there once, each transcript whole. */
export function integrity(groups: readonly GroupView[], episodes: readonly Episode[]) {
  const expected = groups.reduce((n, g) => n + g.episodes.length, 0);
  const ids = new Set(episodes.map((e) => e.episode_id));
  const broken = episodes.filter((e) => {
    const sampled = (e.messages ?? []).filter((m) => m.sampled).length;
    return sampled !== e.turns;
  });
  return {
    expected,
    landed: ids.size,
    lost: expected - ids.size,
    duplicated: episodes.length - ids.size,
    brokenTranscripts: broken.length,
    unaccounted: episodes.filter((e) => !["completed", "truncated", "failed"].includes(e.status))
      .length,
  };
}

/**
 * Episodes of a run whose landed transcript has a gap in its message sequence, or a number of
 * sampled messages other than its turns: read straight from D1 with `sql`.
 */
export function brokenTranscripts(
  sql: (query: string) => Record<string, unknown>[],
  run: string,
): number {
  const rows = sql(`SELECT COUNT(*) AS n FROM (
      SELECT e.id, e.turns, COUNT(m.seq) AS rows, MAX(m.seq) AS top, SUM(m.sampled) AS sampled
      FROM episodes e JOIN messages m ON m.episode_id = e.id WHERE e.run_id = '${run}' GROUP BY e.id)
    WHERE top + 1 != rows OR sampled != turns`);
  return Number(rows[0]?.n ?? 0);
}

export function countBy<T>(items: readonly T[], key: (item: T) => string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const item of items) out[key(item)] = (out[key(item)] ?? 0) + 1;
  return out;
}

const git = (...args: string[]) =>
  spawnSync("git", args, {
    cwd: resolve(import.meta.dirname, ".."),
    encoding: "utf8",
  }).stdout?.trim() ?? "";

/**
 * The code a run ran, read as it starts (a run takes minutes; the tree may move on): the commit,
 * `-dirty` when the code it runs differs from it. The results and the report are not code: one
 * run's outputs must not make the next run's commit dirty. The report dates its tables by it.
 */
const RUN_COMMIT = `${git("rev-parse", "--short", "HEAD") || "unknown"}${
  git(
    "status",
    "--porcelain",
    "--untracked-files=no",
    "--",
    "src",
    "fixtures",
    "reliability",
    ":!reliability/results",
  ) === ""
    ? ""
    : "-dirty"
}`;

/** Writes a run's result, with the commit it ran. */
export function writeResult(name: string, data: object): string {
  mkdirSync(RESULTS, { recursive: true });
  const file = join(RESULTS, `${name}.json`);
  writeFileSync(file, `${JSON.stringify({ ...data, commit: RUN_COMMIT }, null, 2)}\n`);
  return file;
}

export function flag(name: string): boolean {
  return process.argv.includes(`--${name}`);
}

export function option(name: string, fallback: string): string {
  const at = process.argv.indexOf(`--${name}`);
  return at === -1 ? fallback : (process.argv[at + 1] ?? fallback);
}

export async function simStats(stack: LocalStack) {
  return stack.simulator?.stats();
}

export const guessRequest = (
  runId: string,
  i: number,
  model: string,
  extra: Partial<StartGroupInput> = {},
): StartGroupInput => ({
  env: "guess-number",
  example: {
    id: `${runId}-${i}`,
    input: "Find the number.",
    metadata: { secret: 1 + ((i * 37) % 100) },
  },
  group_size: 4,
  run_id: runId,
  sampling: { model, temperature: 0.5, seed: 1000 + i, max_completion_tokens: 64 },
  ...extra,
});
