/**
 * `npm run demo`: the whole pipeline on a laptop in about a minute. Applies the local D1
 * migrations, starts the simulator and `wrangler dev`, runs a small job with live progress,
 * leases a batch as a trainer would, prints SQL summaries and the dashboard URL, and stops
 * what it started (Ctrl-C too). Data stays in .wrangler/state.
 */

import { readFileSync } from "node:fs";
import { join } from "node:path";
import Table from "cli-table3";
import { EdgerollClient } from "../client/edgeroll-client";
import type { TaskExample } from "../sdk";
import { parseDatasetJsonl } from "../sdk";
import { seededRandom } from "../utils/random";
import { type LocalStack, startLocalStack } from "./local-stack";
import { DEFAULT_STATE_DIR } from "./local-tokens";
import { ensureCanStart } from "./preflight";
import { COMPACT, JobProgressBar, summaryTable } from "./progress";
import { PROJECT_ROOT, paths, resolveStateDir } from "./project";
import { type Job, runJob } from "./run-job";
import { renderTable, runSql } from "./sql";

export interface DemoFlags {
  port: string;
  simPort: string;
  persistTo: string;
  keep?: boolean;
  groups: string;
}

function dataset(name: string): TaskExample[] {
  return parseDatasetJsonl(readFileSync(join(PROJECT_ROOT, paths.dataset(name)), "utf8"), name)
    .examples;
}

/**
 * The demo's jobs. Guess-number groups are spread over four policy versions, each sampled a
 * little less noisily (lower temperature), so the dashboard's reward-by-version plot shows a
 * policy that improves. One exact-answer group talks to a host whose first try at every request
 * fails (each episode's retry succeeds, and scores), two to a host that answers garbage, so the
 * failure views have something to show. Judged-answer groups are graded by the simulator's judge,
 * so the episode pages show a rubric's components and the judge's calls.
 */
export function demoJobs(runId: string, guessGroups: number): { label: string; job: Job }[] {
  const random = seededRandom(Date.now());
  const versions = [0, 1, 2, 3];
  const guess = versions.map((version) => ({
    label: `guess-number v${version}`,
    job: {
      env: "guess-number",
      examples: Array.from({ length: Math.ceil(guessGroups / versions.length) }, (_, i) => ({
        id: `demo-gn-v${version}-${i}`,
        input: "I'm thinking of a whole number between 1 and 100. Find it.",
        metadata: { secret: 1 + Math.floor(random() * 100) },
      })),
      groupSize: 8,
      runId,
      concurrency: 8,
      request: {
        policy_version: version,
        credit_assignment: "per_turn" as const,
        sampling: { model: "sim", temperature: 1.2 - 0.3 * version, max_completion_tokens: 64 },
      },
    },
  }));
  return [
    ...guess,
    {
      label: "tool-agent",
      job: {
        env: "tool-agent",
        examples: dataset("tool-agent").slice(0, 4),
        groupSize: 8,
        runId,
        concurrency: 4,
        request: {
          policy_version: 3,
          sampling: { model: "sim", temperature: 0.8, max_completion_tokens: 128 },
        },
      },
    },
    {
      label: "exact-answer",
      job: {
        env: "exact-answer",
        examples: dataset("exact-answer").slice(0, 6),
        groupSize: 4,
        runId,
        concurrency: 6,
        request: {
          policy_version: 3,
          sampling: { model: "sim", temperature: 1, max_completion_tokens: 64 },
        },
      },
    },
    {
      label: "judged-answer",
      job: {
        env: "judged-answer",
        // Graded by the simulator's judge (`JUDGE_MODEL` "judge"): the episode pages show each
        // answer's rubric (correctness, and length as a metric) and the judge's calls.
        examples: dataset("judged-answer").slice(0, 6),
        groupSize: 4,
        runId,
        concurrency: 6,
        request: {
          policy_version: 3,
          sampling: { model: "sim", temperature: 1, max_completion_tokens: 64 },
        },
      },
    },
    {
      label: "guess-number, Qwen3 template",
      job: {
        env: "guess-number",
        examples: Array.from({ length: 2 }, (_, i) => ({
          id: `demo-gn-think-${i}`,
          input: "I'm thinking of a whole number between 1 and 100. Find it.",
          metadata: { secret: 1 + Math.floor(random() * 100) },
        })),
        groupSize: 8,
        runId,
        concurrency: 2,
        // The model thinks aloud, and its chat template drops that reasoning from earlier turns
        // (as Qwen3's does): the token-drift view and the episode pages show the prefix breaks.
        request: {
          policy_version: 3,
          sampling: { model: "sim+think", temperature: 1, max_completion_tokens: 96 },
        },
      },
    },
    {
      label: "exact-answer, flaky host",
      job: {
        env: "exact-answer",
        examples: dataset("exact-answer").slice(6, 7),
        groupSize: 4,
        runId,
        concurrency: 1,
        // A directive to the simulator: the first try of every distinct request gets a 503, and
        // the client's retry succeeds (docs/querying.md, query 10, finds these generations). The
        // seed makes each episode's request distinct (each generation gets its own seed), so
        // every episode's first try fails, not only the first of four identical requests.
        request: {
          policy_version: 3,
          sampling: { model: "sim+fail:503:1", seed: 7, max_completion_tokens: 64 },
        },
      },
    },
    {
      label: "exact-answer, broken host",
      job: {
        env: "exact-answer",
        examples: dataset("exact-answer").slice(7, 9),
        groupSize: 4,
        runId,
        concurrency: 2,
        // Every response is malformed: the client retries, then gives up.
        request: {
          policy_version: 3,
          sampling: { model: "sim+malformed", max_completion_tokens: 64 },
        },
      },
    },
  ];
}

async function printBatch(client: EdgerollClient, runId: string): Promise<void> {
  const batch = await client.lease({
    max_groups: 4,
    run_id: runId,
    include: ["messages", "per_turn"],
  });
  if (batch.batch_id === null) {
    console.log("\nNo batch to lease: every group came out uniform (no GRPO signal). Try again.");
    return;
  }
  console.log(`\nA trainer leases batch ${batch.batch_id} (expires ${batch.lease_expires_at}):`);
  const table = new Table({
    head: ["group", "env", "policy", "rewards", "advantages", "sampled turns"],
    style: { head: [], border: [] },
    chars: COMPACT,
  });
  for (const group of batch.groups) {
    table.push([
      group.group_id,
      group.env,
      `v${group.policy_version}`,
      group.episodes.map((e) => (e.reward === null ? "x" : e.reward.toFixed(1))).join(" "),
      group.episodes.map((e) => (e.advantage === null ? "x" : e.advantage.toFixed(2))).join(" "),
      String(group.episodes.reduce((n, e) => n + e.turns, 0)),
    ]);
  }
  console.log(table.toString());
  const acked = await client.ack(batch.batch_id);
  console.log(`The trainer acks it: ${acked.acked_groups} groups consumed.`);
}

function printSql(persistTo: string, runId: string): void {
  const run = runId.replaceAll("'", "''");
  const byEnv = runSql(
    `SELECT env, groups, episodes, mean_reward, success_rate, mean_turns, failed FROM run_summary WHERE run_id = '${run}' ORDER BY env`,
    { persistTo },
  );
  console.log("\nSQL: SELECT ... FROM run_summary (reward by environment)");
  console.log(renderTable(byEnv));
  const failures = runSql(
    `SELECT env, failure_reason AS reason, COUNT(*) AS episodes FROM episodes
     WHERE run_id = '${run}' AND status = 'failed' GROUP BY env, failure_reason ORDER BY episodes DESC`,
    { persistTo },
  );
  console.log("\nSQL: failures by reason");
  console.log(renderTable(failures));
}

/** The `npm run dev` that serves this demo's state on this demo's port again. */
function devCommand(flags: DemoFlags): string {
  const args = [
    ...(flags.port === "8787" ? [] : ["--port", flags.port]),
    ...(resolveStateDir(flags.persistTo) === resolveStateDir(DEFAULT_STATE_DIR)
      ? []
      : ["--persist-to", flags.persistTo]),
  ];
  return args.length === 0 ? "npm run dev" : `npm run dev -- ${args.join(" ")}`;
}

export async function demo(flags: DemoFlags): Promise<void> {
  const port = Number(flags.port);
  const simPort = Number(flags.simPort);
  await ensureCanStart(
    "npm run demo",
    [
      { port, what: "the Worker", flag: "--port" },
      { port: simPort, what: "the simulator", flag: "--sim-port" },
    ],
    flags.persistTo,
  );
  const persistTo = resolveStateDir(flags.persistTo);
  const runId = `demo-${new Date().toISOString().slice(0, 19).replace(/[-:]/g, "").replace("T", "-")}`;
  console.log(`edgeroll demo: run ${runId}`);
  console.log(
    `  starting the simulator on :${simPort} and the Worker (wrangler dev) on :${port}; state in ${flags.persistTo}`,
  );
  let stack: LocalStack | null = null;
  const stop = async () => {
    await stack?.stop();
    stack = null;
  };
  const interrupted = () => {
    console.log("\ninterrupted: stopping the simulator and the Worker");
    void stop().then(() => process.exit(130));
  };
  process.once("SIGINT", interrupted);
  process.once("SIGTERM", interrupted);
  try {
    stack = await startLocalStack({
      persistTo,
      apiPort: port,
      // A small, fast model: 40 ms to the first token, then 3 ms a token.
      sim: { port: simPort, latency: { ttftMs: 40, msPerToken: 3, msPerPromptToken: 0.01 } },
    });
    console.log(`  ready: ${stack.apiUrl}\n`);
    const client = new EdgerollClient({ baseUrl: stack.apiUrl, token: stack.tokens.admin });
    for (const { label, job } of demoJobs(runId, Number(flags.groups))) {
      const bar = new JobProgressBar(label.padEnd(26), job.examples.length);
      const { progress } = await runJob(client, job, (p) => bar.update(p));
      bar.stop();
      if (label === "exact-answer, broken host") console.log(summaryTable(label, progress));
    }
    await printBatch(client, runId);
    printSql(persistTo, runId);
    // The reader token goes in the link once; the dashboard keeps it in a cookie.
    console.log(`\nDashboard: ${stack.apiUrl}/?run=${runId}&token=${stack.tokens.reader}`);
    if (flags.keep) {
      console.log("Serving until Ctrl-C.");
      await new Promise(() => {});
    }
    console.log(
      `Stopping. To browse the dashboard later: \`${devCommand(flags)}\`, then open the URL above.`,
    );
  } finally {
    process.removeListener("SIGINT", interrupted);
    process.removeListener("SIGTERM", interrupted);
    await stop();
  }
}
