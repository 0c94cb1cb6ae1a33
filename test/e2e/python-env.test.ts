// End to end, as a user runs it: a Python environment (the guess-number starter, written against
// the seed's `freesolo.*` imports) served by `python3 -m edgeroll_env serve`, registered with
// REMOTE_ENVS only, rolled out by the Worker under `wrangler dev` against the simulator. Its
// episodes must land as the TypeScript guess-number's do for the same samples.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LocalStack, startLocalStack, stopProcessGroup } from "../../src/cli/local-stack";
import { EdgerollClient } from "../../src/client/edgeroll-client";

const ROOT = resolve(import.meta.dirname, "../..");
const TOKEN = "python-env-e2e-secret";
let python: ChildProcess;
let stack: LocalStack;
let state: string;
let api: EdgerollClient;

/** Starts the Python server on a free port; resolves with its URL from its "serving" line. */
function servePython(): Promise<string> {
  python = spawn(
    "python3",
    ["-m", "edgeroll_env", "serve", "python/edgeroll_env/starters/guess_number.py"].concat([
      "--port",
      "0",
      "--name",
      "guess-number-py",
      "--token",
      TOKEN,
    ]),
    { cwd: ROOT, env: { ...process.env, PYTHONPATH: join(ROOT, "python") }, detached: true },
  );
  return new Promise((done, fail) => {
    let out = "";
    python.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const url = /serving \S+ on (http:\/\/\S+)/.exec(out)?.[1];
      if (url) done(url);
    });
    python.stderr?.on("data", (chunk: Buffer) => (out += chunk.toString()));
    python.on("exit", (code) => fail(new Error(`the Python server exited (${code}):\n${out}`)));
  });
}

beforeAll(async () => {
  const url = await servePython();
  state = mkdtempSync(join(tmpdir(), "edgeroll-python-env-"));
  stack = await startLocalStack({
    persistTo: state,
    vars: { REMOTE_ENVS: JSON.stringify({ "guess-number-py": url }) },
    secrets: { REMOTE_ENV_TOKEN: TOKEN },
  });
  api = new EdgerollClient({ baseUrl: stack.apiUrl, token: stack.tokens.admin });
}, 180_000);

afterAll(async () => {
  await stack?.stop();
  if (python) await stopProcessGroup(python);
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
});
