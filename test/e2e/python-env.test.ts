// End to end, as a user runs it: a Python environment (the guess-number starter, written against
// the seed's `freesolo.*` imports) served by `python3 -m edgeroll_env serve`, registered with
// REMOTE_ENVS only, rolled out by the Worker under `wrangler dev` against the simulator. Its
// episodes must land as the TypeScript guess-number's do for the same samples.
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LocalStack, startLocalStack, stopProcessGroup } from "../../src/cli/local-stack";
import { EdgerollClient, EdgerollError } from "../../src/client/edgeroll-client";
import { END } from "../../src/rollout/outcomes";
import { servePythonEnvironment } from "../setup/python-env-server";
import { deadUrl } from "../setup/remote-env-server";

const ROOT = resolve(import.meta.dirname, "../..");
const TOKEN = "python-env-e2e-secret";
const servers: ChildProcess[] = [];
let stack: LocalStack;
let state: string;
let api: EdgerollClient;

/** A Python server the test stops at the end, with the test's bearer token. */
async function servePython(file: string, name: string): Promise<string> {
  const { url, child } = await servePythonEnvironment(file, name, { token: TOKEN, detached: true });
  servers.push(child);
  return url;
}

beforeAll(async () => {
  const remote = {
    "guess-number-py": await servePython(
      "python/edgeroll_env/starters/guess_number.py",
      "guess-number-py",
    ),
    // The seed's tool-calling AgentEnv, imports and all, with a real run_tool.
    "agent-env-py": await servePython("examples/python/agent_env.py", "agent-env-py"),
    // guess-number that hangs or answers garbage on demand (metadata.fault).
    "faulty-py": await servePython("python/tests/fixtures/faulty_guess.py", "faulty-py"),
    // Registered, and nothing listens there.
    "down-py": await deadUrl(),
  };
  state = mkdtempSync(join(tmpdir(), "edgeroll-python-env-"));
  stack = await startLocalStack({
    persistTo: state,
    // Seconds, so the hanging environment's episodes time out within the test; enough that a
    // healthy step on a loaded machine (two test files at a time) does not.
    vars: { REMOTE_ENVS: JSON.stringify(remote), STEP_TIMEOUT_S: "6" },
    secrets: { REMOTE_ENV_TOKEN: TOKEN },
  });
  api = new EdgerollClient({ baseUrl: stack.apiUrl, token: stack.tokens.admin });
}, 180_000);

afterAll(async () => {
  await stack?.stop();
  for (const child of servers) await stopProcessGroup(child);
  if (state) rmSync(state, { recursive: true, force: true });
});

async function land(env: string, secret: number) {
  const { group_id } = await api.startGroup({
    env,
    example: { id: `py-e2e-${secret}`, input: "Find the number.", metadata: { secret } },
    group_size: 4,
    run_id: `python-env-${env}`,
    sampling: { model: "sim", temperature: 1, seed: secret },
  });
  const group = await api.waitForGroup(group_id, { timeoutMs: 90_000, intervalMs: 200 });
  expect(group.status).toBe("landed");
  return Promise.all(group.episodes.map((e) => api.getEpisode(e.episode_id)));
}

describe("a Python environment over HTTP, under wrangler dev", () => {
  it("lands the same transcripts and rewards as the TypeScript guess-number", async () => {
    for (const secret of [7, 64]) {
      const [ts, py] = await Promise.all([
        land("guess-number", secret),
        land("guess-number-py", secret),
      ]);
      expect(py.map((e) => e.status)).toEqual(ts.map((e) => e.status));
      for (const [i, episode] of py.entries()) {
        const twin = ts[i];
        expect(episode.messages.map((m) => [m.role, m.content])).toEqual(
          twin?.messages.map((m) => [m.role, m.content]),
        );
        expect(episode.score).toBe(twin?.score);
        expect(episode.per_turn_rewards).toEqual(twin?.per_turn_rewards);
      }
    }
  }, 240_000);

  it("fails only the episodes of a Python environment that hangs, answers garbage or is down, naming why", async () => {
    const cases = [
      ["slow", END.step_timeout],
      ["garbage", END.env_error],
      ["none", null],
    ] as const;
    const groups = await Promise.all(
      cases.map(async ([fault]) => {
        const { group_id } = await api.startGroup({
          env: "faulty-py",
          example: {
            id: `py-fault-${fault}`,
            input: "Find the number.",
            metadata: { secret: 40, fault },
          },
          group_size: 2,
          run_id: "python-faults",
          sampling: { model: "sim", temperature: 1, seed: 5 },
        });
        return api.waitForGroup(group_id, { timeoutMs: 90_000, intervalMs: 200 });
      }),
    );
    for (const [i, [fault, reason]] of cases.entries()) {
      for (const e of groups[i]?.episodes ?? []) {
        const episode = await api.getEpisode(e.episode_id);
        expect([fault, episode.status, episode.failure_reason]).toEqual(
          reason === null ? [fault, "completed", null] : [fault, "failed", reason],
        );
      }
    }
    // Down when a group starts: refused with a 503, and nothing stored.
    const refused = await api
      .startGroup({
        env: "down-py",
        example: { id: "py-down", input: "Find the number.", metadata: { secret: 3 } },
        group_size: 1,
        run_id: "python-faults",
        sampling: { model: "sim" },
      })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(EdgerollError);
    expect((refused as EdgerollError).status).toBe(503);
    expect((refused as EdgerollError).code).toBe("environment_unavailable");
    expect(
      (await api.getRun("python-faults")).groups.landed +
        (await api.getRun("python-faults")).groups.failed,
    ).toBe(3);
  }, 240_000);

  it("lands the seed's AgentEnv, played by the simulator's tool-calling player", async () => {
    const rows = readFileSync(join(ROOT, "examples/python/agent_env.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    const groups = await Promise.all(
      rows.slice(0, 3).map(async (example) => {
        const { group_id } = await api.startGroup({
          env: "agent-env-py",
          example,
          group_size: 2,
          run_id: "python-agent-env",
          sampling: { model: "sim", temperature: 0 },
        });
        return api.waitForGroup(group_id, { timeoutMs: 90_000, intervalMs: 200 });
      }),
    );
    for (const group of groups) {
      // Failures named, so a run that fails says why.
      expect({ status: group.status, failures: group.failures }).toEqual({
        status: "landed",
        failures: [],
      });
      for (const e of group.episodes) {
        const episode = await api.getEpisode(e.episode_id);
        expect(episode.status).toBe("completed");
        expect(episode.success).toBe(true);
        // Its tools ran: the environment answered tool calls with their results.
        expect(episode.messages.some((m) => m.content.includes("<tool_result>"))).toBe(true);
      }
    }
  }, 240_000);
});
