// One `vitest run` for everything: Workers-facing tests in workerd, CLI tests in Node. The SDK
// and environment suites run in both, which proves environment code is runtime-neutral.
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";
import { REMOTE_ENV_TOKEN } from "./test/setup/remote-env-token.ts";
import { hideBenignRuntimeLogs } from "./test/setup/runtime-log-filter.ts";

hideBenignRuntimeLogs();

const portable = [
  "test/sdk/**/*.test.ts",
  "test/environments/**/*.test.ts",
  "test/tokens/**/*.test.ts",
];

/** Tokens the Worker under test accepts; test/worker/helpers.ts sends the one with every role. */
const TEST_TOKENS = {
  "test-token-all-roles": ["producer", "trainer", "reader"],
  "test-token-producer": ["producer"],
  "test-token-trainer": ["trainer"],
  "test-token-trainer-2": ["trainer"],
  "test-token-reader": ["reader"],
  // A token with a quota: one group in flight at a time (test/worker/run-costs.test.ts).
  "test-token-quota": { roles: ["producer", "reader"], max_inflight_groups: 1 },
};

export default defineConfig({
  test: {
    // Two files at a time, where vitest's default on a 2-core machine is one: most of the suite
    // waits (on deadlines, servers starting, subprocesses), so two keep both cores busy. Measured
    // here: 4m17s instead of 6m20s for npm test. Each workerd runner is a runtime of its own.
    maxWorkers: 2,
    projects: [
      {
        plugins: [
          cloudflareTest(async ({ inject }) => ({
            wrangler: { configPath: "./wrangler.toml" },
            // The deployed Worker plus the test-only environments (chaos, marathon).
            main: "./fixtures/worker.ts",
            // workerd's verbose log prints every error it catches for a caller, with native
            // stacks: here, mostly the connections the fault tests break on purpose. Failures
            // reach the tests either way; EDGEROLL_WORKERD_VERBOSE=1 prints the log again.
            verbose: process.env.EDGEROLL_WORKERD_VERBOSE === "1",
            miniflare: {
              bindings: {
                INFERENCE_BASE_URL: inject("inferenceUrl"),
                REMOTE_ENVS: inject("remoteEnvs"),
                REMOTE_ENV_TOKEN,
                // For the tests to read the fixture's own counters.
                TEST_REMOTE_ENV_URL: inject("remoteEnvUrl"),
                // Seconds, not minutes, so deadline behaviour is testable.
                GENERATION_DEADLINE_MIN_S: "2",
                GENERATION_DEADLINE_MAX_S: "2",
                HEARTBEAT_S: "1",
                STEP_TIMEOUT_S: "5",
                SCORE_TIMEOUT_S: "2",
                TEACHER_TIMEOUT_S: "10",
                MAX_DELIVERIES: "3",
                // Every call priced, so a run's bill has money in it (test/worker/run-costs.test.ts).
                INFERENCE_PRICE: JSON.stringify({ prompt: 1, cached: 0.25, completion: 4 }),
                JUDGE_PRICE: JSON.stringify({ prompt: 2, completion: 8 }),
                API_TOKENS: JSON.stringify(TEST_TOKENS),
                TEST_MIGRATIONS: await readD1Migrations("./migrations"),
              },
            },
          })),
        ],
        test: {
          name: "workerd",
          include: [...portable, "test/worker/**/*.test.ts"],
          globalSetup: ["test/setup/inference-host.ts", "test/setup/remote-env-host.ts"],
          // Each worker's files share its runtime (its D1, objects and module state) instead of
          // starting Miniflare each: that start was 2-4 s a file on this 2-core machine, more than
          // most files' tests. A file ends once its groups have (test/setup/quiet-at-file-end.ts).
          isolate: false,
          setupFiles: ["test/setup/d1-migrations.ts", "test/setup/quiet-at-file-end.ts"],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        // The fleet: the same Worker over four simulated hosts (test/setup/inference-fleet.ts).
        plugins: [
          cloudflareTest(async ({ inject }) => ({
            wrangler: { configPath: "./wrangler.toml" },
            main: "./fixtures/worker.ts",
            verbose: process.env.EDGEROLL_WORKERD_VERBOSE === "1",
            miniflare: {
              bindings: {
                INFERENCE_BASE_URL: inject("fleetUrl"),
                TEST_FLEET_CONTROL_URL: inject("fleetControlUrl"),
                GENERATION_DEADLINE_MIN_S: "3",
                GENERATION_DEADLINE_MAX_S: "3",
                HEARTBEAT_S: "1",
                HOST_PROBE_S: "0.5",
                STEP_TIMEOUT_S: "5",
                SCORE_TIMEOUT_S: "2",
                API_TOKENS: JSON.stringify(TEST_TOKENS),
                TEST_MIGRATIONS: await readD1Migrations("./migrations"),
              },
            },
          })),
        ],
        test: {
          name: "workerd-fleet",
          include: ["test/fleet/**/*.test.ts"],
          globalSetup: ["test/setup/inference-fleet.ts"],
          // The fleet scheduler and the simulated hosts are shared: fleet tests restore both.
          isolate: false,
          setupFiles: ["test/setup/d1-migrations.ts", "test/setup/quiet-at-file-end.ts"],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: "node",
          environment: "node",
          include: [
            ...portable,
            "test/sim/**/*.test.ts",
            "test/cli/**/*.test.ts",
            "test/e2e/**/*.test.ts",
            "test/browser/**/*.test.ts",
            "test/structure/**/*.test.ts",
            "test/reliability/**/*.test.ts",
            "test/bench/**/*.test.ts",
          ],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});
