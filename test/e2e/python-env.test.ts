// End to end, as a user runs it: a Python environment (the guess-number starter, written against
// the seed's `freesolo.*` imports) served by `python3 -m edgeroll_env serve`, registered with
// REMOTE_ENVS only, rolled out by the Worker under `wrangler dev` against the simulator. Its
// episodes must land as the TypeScript guess-number's do for the same samples.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
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
let remote: Record<string, string>;

/**
 * `npx edgeroll <args>` against the stack, as a user with the stack's admin token runs it. Not
 * spawnSync: the Python servers write to pipes this process reads, and must not block on them.
 */
function edgeroll(
  ...args: string[]
): Promise<{ status: number | null; stdout: string; stderr: string; said: string }> {
  const child = spawn(process.execPath, [join(ROOT, "bin/edgeroll.mjs"), ...args], {
    cwd: ROOT,
    env: {
      ...process.env,
      NO_COLOR: "1",
      EDGEROLL_URL: stack.apiUrl,
      EDGEROLL_TOKEN: stack.tokens.admin,
      REMOTE_ENV_TOKEN: TOKEN,
    },
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((done) =>
    child.on("close", (status) => done({ status, stdout, stderr, said: `${stdout}\n${stderr}` })),
  );
}

/** A Python server the test stops at the end, with the test's bearer token. */
async function servePython(file: string, name: string): Promise<string> {
  const { url, child } = await servePythonEnvironment(file, name, { token: TOKEN, detached: true });
  servers.push(child);
  return url;
}

beforeAll(async () => {
  remote = {
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
    // Seconds, so the hanging environment's episodes (SLOW_S, 20 s) time out within the test;
    // enough that a healthy step on a loaded machine does not: CI once saw a /start of the
    // AgentEnv (433 ms for the whole test here) pass 6 s with two test files running.
    vars: { REMOTE_ENVS: JSON.stringify(remote), STEP_TIMEOUT_S: "15" },
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

describe("a remote environment through the CLI, which asks the Worker", () => {
  it("`edgeroll run --env guess-number-py` starts its groups and they land", async () => {
    const ran = await edgeroll(
      ...["run", "--url", stack.apiUrl, "--env", "guess-number-py"],
      ...["--dataset", "datasets/guess-number.jsonl", "--limit", "2", "--group-size", "2"],
      ...["--run", "cli-remote"],
    );
    expect(ran.status, ran.said).toBe(0);
    expect(ran.stdout).toMatch(/run cli-remote: 2 groups x 2 episodes of guess-number-py/);
    expect(ran.stdout).toMatch(/groups +│ 2 \(2 landed, 0 failed\)/);
    // And its episodes are exported by the environment's name, which the Worker knows.
    const exported = await edgeroll("export", "--run", "cli-remote", "--env", "guess-number-py");
    expect(exported.status, exported.said).toBe(0);
    expect(exported.stdout.trim().split("\n")).toHaveLength(4);
    expect(exported.stdout).toContain('"env":"guess-number-py"');
  }, 240_000);

  it("an unknown name is refused with the Worker's environments, remote ones included", async () => {
    const ran = await edgeroll(
      ...["run", "--url", stack.apiUrl, "--env", "guess-numbr-py"],
      ...["--dataset", "datasets/guess-number.jsonl", "--group-size", "2", "--run", "cli-typo"],
    );
    expect(ran.status).toBe(1);
    expect(ran.stderr).toMatch(
      /^edgeroll: unknown environment "guess-numbr-py" \(registered: .*guess-number, guess-number-py.*\); nothing was started$/m,
    );
    const pulled = await edgeroll("pull", "--env", "guess-numbr-py", "--max-groups", "1");
    expect(pulled.status).toBe(1);
    expect(pulled.stderr).toMatch(
      /unknown environment "guess-numbr-py" \(registered: .*guess-number-py/,
    );
    await expect(api.getRun("cli-typo")).rejects.toMatchObject({ status: 404 });
  }, 120_000);

  it("a dataset with bad rows: every one named by line and id, and nothing started", async () => {
    const dir = mkdtempSync(join(tmpdir(), "edgeroll-bad-rows-"));
    const file = join(dir, "bad.jsonl");
    const good = (id: string, secret: number) =>
      JSON.stringify({ id, input: "Find the number.", metadata: { secret } });
    writeFileSync(
      file,
      [
        good("ok-1", 20),
        JSON.stringify({ id: "too-big", input: "Find the number.", metadata: { secret: 500 } }),
        good("ok-2", 30),
        JSON.stringify({ id: "no-input", metadata: { secret: 3 } }),
        "{oops",
        good("ok-3", 40),
      ].join("\n"),
    );
    try {
      // Twice: which rows are named does not depend on which start happened to fail first.
      const said: string[] = [];
      for (const _ of [1, 2]) {
        const ran = await edgeroll(
          ...["run", "--url", stack.apiUrl, "--env", "guess-number-py", "--dataset", file],
          ...["--group-size", "2", "--run", "cli-bad-rows"],
        );
        expect(ran.status).toBe(1);
        expect(ran.stderr).not.toMatch(/\n\s+at /);
        said.push(ran.stderr);
      }
      expect(said[1]).toBe(said[0]);
      const lines = (said[0] as string).trim().split("\n");
      expect(lines[0]).toBe(
        `edgeroll: ${file}: 3 rows that guess-number-py cannot play, so nothing was started:`,
      );
      expect(lines[1]).toMatch(
        new RegExp(`^  ${file}:2 \\(id "too-big"\\): example\\.metadata\\.secret`),
      );
      expect(lines[2]).toMatch(new RegExp(`^  ${file}:4 \\(id "no-input"\\): .*input`));
      expect(lines[3]).toMatch(new RegExp(`^  ${file}:5: not valid JSON`));
      expect(lines[4]).toBe("Fix or remove them, then run again.");
      await expect(api.getRun("cli-bad-rows")).rejects.toMatchObject({ status: 404 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it("`env check` of the Python starter passes, by name through the Worker and by --url", async () => {
    for (const how of [["guess-number-py"], ["--url", remote["guess-number-py"] as string]]) {
      const checked = await edgeroll(
        ...["env", "check", ...how, "--dataset", "datasets/guess-number.jsonl"],
      );
      expect(checked.status, checked.said).toBe(0);
      // Its rows have no output, and over HTTP that is the only gold answer there is.
      expect(checked.stdout).toMatch(
        /^SKIP {2}gold answers earn reward +skipped: no row has an output/m,
      );
      expect(checked.stdout).toMatch(/guess-number-py: PASS \(12 checks, 1 skipped\)/);
    }
  }, 120_000);
});
