/**
 * `npm run reliability [-- --short] [--suites host,env,remote,trainer,input,judge]`: runs the fault suites
 * against a real local stack and rewrites docs/reliability.md from every result on file.
 */
import { EdgerollClient } from "../src/client/edgeroll-client";
import { startRemoteEnvFixture } from "../test/setup/remote-env-server";
import { flag, option, withStack, writeResult } from "./harness";
import { HOST_MAX_RETRIES, hostFaults } from "./host-faults";
import { JUDGE_VARS, judgeFaults } from "./judge-faults";
import { remoteEnvFaults } from "./remote-faults";
import { renderReport } from "./report";
import { badInput, envFaults, type Row, trainerFaults } from "./suites";

const short = flag("short");
const suites = option("suites", "host,env,remote,trainer,input,judge").split(",");
// A remote environment server with faults on demand (guess-number over HTTP), for the remote suite.
const REMOTE_TOKEN = "reliability-remote-env";
const remote = await startRemoteEnvFixture(REMOTE_TOKEN);
const started = Date.now();

const rows = await withStack(
  {
    // Deadlines of seconds, not minutes, so deadline faults finish quickly.
    vars: {
      GENERATION_DEADLINE_MIN_S: "10",
      GENERATION_DEADLINE_MAX_S: "10",
      STEP_TIMEOUT_S: "2",
      HEARTBEAT_S: "2",
      MAX_INFLIGHT_GENERATIONS: "512",
      // What the host suite's expected attempts assume (a generation's retries).
      INFERENCE_MAX_RETRIES: String(HOST_MAX_RETRIES),
      REMOTE_ENVS: JSON.stringify({ "guess-number-remote": remote.url }),
      ...JUDGE_VARS,
    },
    secrets: { REMOTE_ENV_TOKEN: REMOTE_TOKEN },
    sim: { latency: { ttftMs: 20, msPerToken: 2, msPerPromptToken: 0 } },
  },
  async (stack) => {
    const client = new EdgerollClient({ baseUrl: stack.apiUrl, token: stack.tokens.admin });
    const all: Row[] = [];
    const run = async (name: string, suite: () => Promise<Row[]>) => {
      if (!suites.includes(name)) return;
      const t = Date.now();
      const result = await suite();
      const seconds = (Date.now() - t) / 1000;
      const good = result.filter((r) => r.ok).length;
      console.log(`${name}: ${good}/${result.length} rows as expected (${seconds.toFixed(1)} s)`);
      // One file per suite, so rerunning one suite keeps the others' figures.
      writeResult(`faults-${name}`, {
        date: new Date().toISOString(),
        short,
        seconds,
        rows: result,
      });
      all.push(...result);
    };
    await run("host", () => hostFaults(stack, client, short ? 2 : 6));
    await run("env", () => envFaults(client, short ? 2 : 4));
    await run("remote", () => remoteEnvFaults(client, short ? 2 : 4, remote.stats));
    await run("trainer", () => trainerFaults(stack, client, short ? 12 : 24));
    await run("input", () => badInput(stack, short ? 3 : 10));
    await run("judge", () => judgeFaults(stack, client, short ? 3 : 8));
    return all;
  },
);

remote.server.closeAllConnections();
remote.server.close();
renderReport();
const failed = rows.filter((r) => !r.ok);
for (const row of failed) console.error(`NOT AS EXPECTED: ${row.fault}: ${row.outcome}`);
const seconds = ((Date.now() - started) / 1000).toFixed(0);
console.log(
  `${rows.length - failed.length}/${rows.length} rows as expected in ${seconds} s; docs/reliability.md updated`,
);
process.exitCode = failed.length === 0 ? 0 : 1;
