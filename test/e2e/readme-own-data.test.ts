// The README's "Your own data" block, run exactly as a new user runs it: in a fresh copy of
// the checkout (no state, no tokens), with no EDGEROLL_TOKEN in the environment, line by line
// in bash, `npm run dev &` in the background on its default ports. Then what a refused CLI call
// prints: one line, never a stack trace.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, portIsFree } from "../../src/cli/ports";
import { ProjectCopy } from "../cli/project-copy";

const README = resolve(import.meta.dirname, "../../README.md");
const MARKER = "<!-- test/e2e/readme-own-data.test.ts runs the next block exactly as written";

/** The block's command lines, comments stripped. */
function ownDataBlock(): string[] {
  const readme = readFileSync(README, "utf8");
  const after = readme.slice(readme.indexOf(MARKER));
  const block = /```sh\n([\s\S]*?)```/.exec(after)?.[1] ?? "";
  return block
    .split("\n")
    .map((line) => line.replace(/\s+#.*$/, "").trim())
    .filter(Boolean);
}

/** The user's shell: nothing edgeroll-specific set. */
function userEnv(): NodeJS.ProcessEnv {
  const { EDGEROLL_TOKEN: _t, EDGEROLL_URL: _u, ...rest } = process.env;
  return { ...rest, NO_COLOR: "1", FORCE_COLOR: "0" };
}

let project: ProjectCopy;
let dev: ChildProcess | null = null;
let devOutput = "";

function shell(line: string, env = userEnv()) {
  return spawnSync("bash", ["-c", line], {
    cwd: project.dir,
    encoding: "utf8",
    env,
    timeout: 180_000,
  });
}

/**
 * Starts a `... &` line as an interactive shell would, in a process group of its own that a
 * Ctrl-C (SIGINT) reaches, and waits until the stack says it is up.
 */
async function background(line: string): Promise<void> {
  const command = line.replace(/\s*&$/, "");
  dev = spawn("bash", ["-c", `exec ${command}`], {
    cwd: project.dir,
    env: userEnv(),
    detached: true,
  });
  for (const stream of [dev.stdout, dev.stderr]) {
    stream?.setEncoding("utf8");
    stream?.on("data", (chunk: string) => {
      devOutput += chunk;
    });
  }
  const until = Date.now() + 150_000;
  while (!devOutput.includes("edgeroll is up")) {
    if (dev.exitCode !== null) throw new Error(`\`${line}\` exited:\n${devOutput}`);
    if (Date.now() > until) throw new Error(`\`${line}\` did not come up:\n${devOutput}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

beforeAll(async () => {
  // The block names the default ports; a stack already on them would answer instead.
  for (const port of [8787, 8000]) {
    if (!(await portIsFree(port)))
      throw new Error(`port ${port} is busy: this test runs the README's commands as written`);
  }
  project = new ProjectCopy();
}, 60_000);

afterAll(async () => {
  if (dev?.pid !== undefined && dev.exitCode === null && dev.signalCode === null) {
    const exited = new Promise((r) => dev?.once("exit", r));
    process.kill(-dev.pid, "SIGINT"); // Ctrl-C: `npm run dev` stops the Worker and simulator
    await exited;
  }
  project?.remove();
}, 60_000);

describe("the README's own-data commands, from a fresh copy with no token set", () => {
  let lines: string[] = [];
  /** What each command after `npm run dev &` did, by its line. */
  const results = new Map<string, ReturnType<typeof shell>>();
  const resultOf = (command: number) => results.get(lines[command] ?? "");

  beforeAll(async () => {
    lines = ownDataBlock();
    // Only the block the test knows: its first line starts the stack the others use.
    if (lines[0] !== "npm run dev &") return;
    await background(lines[0]);
    for (const line of lines.slice(1)) results.set(line, shell(line));
  }, 300_000);

  it("start the stack with `npm run dev &`, then use it", () => {
    expect(lines[0]).toBe("npm run dev &");
    expect(lines.length).toBeGreaterThanOrEqual(5);
  });

  it("all work as written: each exits 0, with no stack trace and no refusal", () => {
    expect(results.size).toBe(lines.length - 1);
    for (const [line, result] of results) {
      expect(result.status, `${line}\n${result.stdout}\n${result.stderr}`).toBe(0);
      expect(result.stderr, line).not.toMatch(/\n\s+at |Traceback|unauthorized|forbidden/);
    }
  });

  it("run twelve groups of eight episodes, all landed", () => {
    expect(resultOf(1)?.stdout).toMatch(/run guess-number: 12 groups x 8 episodes/);
    expect(resultOf(1)?.stdout).toMatch(/groups +│ 12 \(12 landed, 0 failed\)/);
  });

  it("pull a batch of four groups, ack it and write it as JSON lines", () => {
    expect(resultOf(2)?.stderr).toMatch(/leased b_\w+: 4 groups, 32 episodes/);
    expect(resultOf(2)?.stderr).toMatch(/acked 4 groups/);
    expect(readFileSync(join(project.dir, "batch.jsonl"), "utf8").trim().split("\n")).toHaveLength(
      4,
    );
  });

  it("train two steps with the stdlib Python trainer", () => {
    expect(resultOf(3)?.stdout).toMatch(/step 0: batch b_\w+ acked/);
    expect(resultOf(3)?.stdout).toMatch(/step 1: batch b_\w+ acked/);
  });

  it("read the run's progress with curl", () => {
    expect(JSON.parse(resultOf(4)?.stdout ?? "")).toMatchObject({
      run_id: "guess-number",
      groups: { total: 12, landed: 12 },
    });
  });

  it("print a dashboard link that opens the dashboard, with the run on it", async () => {
    const link = /dashboard +(http\S+\?token=\S+)/.exec(devOutput)?.[1];
    expect(link, devOutput).toBeDefined();
    const handoff = await fetch(link as string, { redirect: "manual" });
    expect(handoff.status).toBe(303);
    const cookie = (handoff.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
    const page = await fetch(new URL(handoff.headers.get("location") ?? "/", link), {
      headers: { cookie },
    });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("guess-number");
  });

  it("hand wrangler the tokens in an owner-only file, not on a command line `ps` shows", () => {
    const ps = spawnSync("ps", ["-eo", "args"], { encoding: "utf8" }).stdout;
    expect(ps).toMatch(/wrangler\.js dev/);
    expect(ps).not.toMatch(/API_TOKENS/);
    const tokens = JSON.parse(
      readFileSync(join(project.dir, ".wrangler/state/edgeroll-tokens.json"), "utf8"),
    );
    expect(ps).not.toContain(tokens.admin);
  });

  it("a second stack on the same state directory is refused, naming the first", () => {
    const second = shell("npm run dev -- --port 8788 --sim-port 8001");
    expect(second.status).toBe(1);
    expect(second.stderr).toMatch(
      /^edgeroll: cannot start: the state directory \.wrangler\/state is in use by another edgeroll stack \(process \d+, serving http:\/\/127\.0\.0\.1:8787\)\. Stop what holds it, or run `npm run dev -- --persist-to \.wrangler\/state-2`$/m,
    );
    expect(second.stderr).not.toMatch(/\n\s+at /);
  }, 120_000);

  it("busy ports and a held state directory are named together, with one command that fixes all", () => {
    const demo = shell("npm run demo");
    expect(demo.status).toBe(1);
    expect(demo.stderr).toMatch(
      /cannot start: ports 8787 \(the Worker, --port\), 8000 \(the simulator, --sim-port\) are busy, and the state directory \.wrangler\/state is in use by another edgeroll stack \(process \d+, serving http:\/\/127\.0\.0\.1:8787\)\. Stop what holds them, or run `npm run demo -- --port 8788 --sim-port 8001 --persist-to \.wrangler\/state-2`/,
    );
  }, 60_000);

  describe("a call the server refuses prints one line, with what to do, and no stack trace", () => {
    it("for a token it does not know: where to get one", () => {
      const refused = shell("npx edgeroll pull --max-groups 1 --token not-a-real-token");
      expect(refused.status).toBe(1);
      expect(refused.stderr.trim().split("\n")).toEqual([
        "edgeroll: POST http://127.0.0.1:8787/v1/batches/lease answered 401 unauthorized: unknown bearer token",
        "  the token from --token was refused. Pass --token or set EDGEROLL_TOKEN; for a local stack, `npx edgeroll token` prints one",
      ]);
    });

    it("for a token without the role: the role it lacks", () => {
      // A producer cannot lease.
      const producer = shell(
        "npx edgeroll pull --max-groups 1 --token $(npx edgeroll token --role producer)",
      );
      expect(producer.status).toBe(1);
      expect(producer.stderr).toMatch(
        /^edgeroll: .* answered 403 forbidden: this token lacks the trainer role/,
      );
      expect(producer.stderr).not.toMatch(/\n\s+at /);
    });

    it("for a request refused in the middle of a job: the API's code and message", () => {
      // An example the environment rejects.
      writeFileSync(join(project.dir, "bad.jsonl"), '{"id": "no-secret", "input": "Find it."}\n');
      const rejected = shell(
        "npx edgeroll run --env guess-number --dataset bad.jsonl --group-size 2",
      );
      expect(rejected.status).toBe(1);
      expect(rejected.stderr).toMatch(
        /^edgeroll: POST http:\/\/127\.0\.0\.1:8787\/v1\/groups answered 422 example_rejected: environment "guess-number" rejected the example: example\.metadata\.secret: /m,
      );
      expect(rejected.stderr).not.toMatch(/\n\s+at /);
    });

    it("for a URL nothing answers at: what to start, or where else to point", async () => {
      const port = await freePort();
      const nobody = shell(`npx edgeroll pull --max-groups 1 --url http://127.0.0.1:${port}`);
      expect(nobody.status).toBe(1);
      expect(
        nobody.stderr.startsWith(`edgeroll: nothing answered at http://127.0.0.1:${port} (`),
      ).toBe(true);
      expect(nobody.stderr).toMatch(/ECONNREFUSED/);
      expect(nobody.stderr).toMatch(/start edgeroll with `npm run dev`/);
      expect(nobody.stderr).not.toMatch(/\n\s+at /);
    });

    it("with the stack for whoever asks for it with --verbose", async () => {
      const port = await freePort();
      const verbose = shell(
        `npx edgeroll --verbose pull --max-groups 1 --url http://127.0.0.1:${port}`,
      );
      expect(verbose.stderr).toMatch(/\n\s+at /);
    });
  });

  it("Ctrl-C stops the stack and frees its state directory", async () => {
    expect(existsSync(join(project.dir, ".wrangler/state/edgeroll-stack.json"))).toBe(true);
    const exited = new Promise((r) => dev?.once("exit", r));
    process.kill(-(dev?.pid as number), "SIGINT");
    await exited;
    expect(existsSync(join(project.dir, ".wrangler/state/edgeroll-stack.json"))).toBe(false);
    for (const port of [8787, 8000]) expect(await portIsFree(port)).toBe(true);
  }, 60_000);
});
