// The README's "Your own data" block, run exactly as a new user runs it: in a fresh copy of
// the checkout (no state, no tokens), with no EDGEROLL_TOKEN in the environment, after the demo
// (`npm run demo`, whose run must stay out of the block's way), and pasted into bash as one
// piece: `npm run dev &` in the background on its default ports and the next lines at once,
// while the stack is still starting. Then a second stack and its token, and what a refused CLI
// call prints: one line, never a stack trace.
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, portIsFree } from "../../src/cli/ports";
import { ProjectCopy } from "../cli/project-copy";

const ROOT = resolve(import.meta.dirname, "../..");
const README = join(ROOT, "README.md");
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
/** The background job of the pasted block: `npm run dev`. */
let devPid = 0;

function shell(line: string, env = userEnv(), timeout = 180_000) {
  return spawnSync("bash", ["-c", line], { cwd: project.dir, encoding: "utf8", env, timeout });
}

/**
 * Pastes the block into bash, as one piece: `set -m` is what an interactive shell has (job
 * control: the background job gets a process group of its own, which a Ctrl-C reaches), and the
 * only change to the lines is where their output goes (a file per line, the background job's
 * to dev.log) and that the background job's process id is noted.
 */
function paste(lines: readonly string[]): Map<string, ReturnType<typeof shell>> {
  const script = [
    "set -m",
    ...lines.map((line, i) =>
      line.endsWith("&")
        ? `${line.replace(/\s*&$/, "")} >dev.log 2>&1 & echo $! >dev.pid`
        : `${line} >out.${i} 2>err.${i}; echo $? >rc.${i}`,
    ),
  ].join("\n");
  const pasted = shell(script, userEnv(), 480_000);
  if (pasted.error) throw pasted.error;
  const read = (file: string) =>
    existsSync(join(project.dir, file)) ? readFileSync(join(project.dir, file), "utf8") : "";
  devPid = Number(read("dev.pid"));
  const results = new Map<string, ReturnType<typeof shell>>();
  for (const [i, line] of lines.entries()) {
    if (line.endsWith("&")) continue;
    results.set(line, {
      ...pasted,
      status: Number(read(`rc.${i}`).trim() || "-1"),
      stdout: read(`out.${i}`),
      stderr: read(`err.${i}`),
    });
  }
  return results;
}

/** What `npm run dev &` has printed so far. */
const devOutput = () => readFileSync(join(project.dir, "dev.log"), "utf8");

/** Ctrl-C to a background job's process group, and wait until its process is gone. */
async function interrupt(pid: number): Promise<void> {
  try {
    process.kill(-pid, "SIGINT");
  } catch {
    return; // already gone
  }
  const until = Date.now() + 60_000;
  for (;;) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    if (Date.now() > until) throw new Error(`process ${pid} did not stop on SIGINT`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

beforeAll(async () => {
  // The block names the default ports; a stack already on them would answer instead.
  for (const port of [8787, 8000, 8788, 8001]) {
    if (!(await portIsFree(port)))
      throw new Error(`port ${port} is busy: this test runs the README's commands as written`);
  }
  project = new ProjectCopy();
}, 60_000);

afterAll(async () => {
  if (devPid > 0) await interrupt(devPid); // Ctrl-C: `npm run dev` stops the Worker and simulator
  project?.remove();
}, 60_000);

describe("the README's own-data commands, from a fresh copy after the demo, with no token set", () => {
  let lines: string[] = [];
  let demo: ReturnType<typeof shell>;
  /** What each command after `npm run dev &` did, by its line. */
  let results = new Map<string, ReturnType<typeof shell>>();
  const resultOf = (command: number) => results.get(lines[command] ?? "");

  beforeAll(async () => {
    demo = shell("npm run demo");
    lines = ownDataBlock();
    // Only the block the test knows: its first line starts the stack the others use.
    if (lines[0] !== "npm run dev &") return;
    results = paste(lines);
  }, 600_000);

  it("the demo ran first, and left its run beside the block's", () => {
    expect(demo.status, `${demo.stdout}\n${demo.stderr}`).toBe(0);
  });

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

  it("while the stack is still starting, the first command says so and waits for it", () => {
    expect(resultOf(1)?.stderr).toMatch(
      /^edgeroll: the local stack at http:\/\/127\.0\.0\.1:8787 is starting \(process \d+\); waiting for it/m,
    );
    expect(resultOf(1)?.stderr).toMatch(
      /^edgeroll: http:\/\/127\.0\.0\.1:8787 is up after \d+ s$/m,
    );
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
    // Written into the checkout, where git does not offer it to be committed.
    const ignored = spawnSync("git", ["check-ignore", "-q", "batch.jsonl"], { cwd: ROOT });
    expect(ignored.status, "batch.jsonl is not in .gitignore").toBe(0);
  });

  it("train two steps with the stdlib Python trainer", () => {
    expect(resultOf(3)?.stdout).toMatch(/step 0: batch b_\w+ acked/);
    expect(resultOf(3)?.stdout).toMatch(/step 1: batch b_\w+ acked/);
  });

  it("read the run's progress with curl: the block's batches came from its own run", () => {
    // Twelve groups, eight of them leased and acked (four by pull, two batches of two by the
    // trainer); the rest wait, but for uniform ones, which leases skip and pacing leaves out.
    // Had a command leased the demo's groups instead, more of the block's would be waiting.
    const uniform = Number(/uniform groups +│ (\d+) /.exec(resultOf(1)?.stdout ?? "")?.[1]);
    expect(uniform, resultOf(1)?.stdout).toBeLessThanOrEqual(4);
    expect(JSON.parse(resultOf(4)?.stdout ?? "")).toMatchObject({
      run_id: "guess-number",
      groups: { total: 12, landed: 12 },
      pacing: { ahead: 4 - uniform },
    });
  });

  it("evaluate the trainer's version on held-out questions: pass@k and maj@k, and nothing leased", () => {
    const out = resultOf(5)?.stdout ?? "";
    expect(out).toMatch(
      /eval guess-number: 16 groups x 8 episodes of exact-answer at policy version 2/,
    );
    expect(out).toMatch(/exact-answer at policy version 2 \(run guess-number, eval_results\):/);
    // One row per k asked for: 16 examples, 128 episodes, pass@k, maj@k and the mean reward.
    const rows = out.split("\n").filter((l) => /^│ (1|8) +│ 16 +│ 128 +│/.test(l));
    expect(rows, out).toHaveLength(2);
    const passAt = (row: string) => Number(row.split("│")[4]);
    expect(passAt(rows[1] as string)).toBeGreaterThanOrEqual(passAt(rows[0] as string));
  });

  it("produce a run on the Worker: the dataset handed over, two epochs, uniform groups resampled", () => {
    const out = resultOf(6)?.stdout ?? "";
    expect(out).toMatch(/dataset exact-answer: 16 examples, sha256 [0-9a-f]{12}/);
    expect(out).toMatch(/run exact-answer-server produces itself on .*: 16 examples x 2 epochs/);
    // Each epoch's 16 examples done; every one a group, more where groups landed uniform.
    const epochs = out.split("\n").filter((l) => /^│ [01] +│ 16 +│ \d+ +│ 16 +│$/.test(l));
    expect(epochs, out).toHaveLength(2);
    const summary =
      /groups: (\d+) landed \((\d+) uniform\), 0 failed, 0 in flight; (\d+) resampled/.exec(out);
    expect(summary, out).not.toBeNull();
    const [landed, uniform, resampled] = (summary ?? []).slice(1).map(Number);
    expect(landed).toBe(32 + (resampled as number));
    expect(resampled).toBeLessThanOrEqual(uniform as number);
  });

  it("print a dashboard link that opens the dashboard, with the run on it", async () => {
    const link = /dashboard +(http\S+\?token=\S+)/.exec(devOutput())?.[1];
    expect(link, devOutput()).toBeDefined();
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
        "  http://127.0.0.1:8787 does not know the token given with --token: `--token $(npx edgeroll token)` gives this stack's, or leave --token out and the CLI finds it",
      ]);
    });

    it("for an EDGEROLL_TOKEN that is set but wrong: not 'set it', but what to do instead", () => {
      const refused = shell("npx edgeroll pull --max-groups 1", {
        ...userEnv(),
        EDGEROLL_TOKEN: "another-stacks-token",
      });
      expect(refused.status).toBe(1);
      expect(refused.stderr.trim().split("\n")[1]).toBe(
        "  EDGEROLL_TOKEN is set, but http://127.0.0.1:8787 does not know that token (another stack's?): `unset EDGEROLL_TOKEN` and the CLI finds this stack's, or `export EDGEROLL_TOKEN=$(npx edgeroll token)`",
      );
    });

    it("for a token without the role: the role it lacks, and the command that prints one with it", () => {
      // A producer cannot lease.
      const producer = shell(
        "npx edgeroll pull --max-groups 1 --token $(npx edgeroll token --role producer)",
      );
      expect(producer.status).toBe(1);
      expect(producer.stderr.trim().split("\n")).toEqual([
        expect.stringMatching(
          /^edgeroll: .* answered 403 forbidden: this token lacks the trainer role/,
        ),
        "  the token (from --token) lacks the trainer role: `--token $(npx edgeroll token --role trainer)` has it, as does the stack's admin token (`npx edgeroll token`, what the CLI uses when given no token)",
      ]);
    });

    it("for a dataset with a row the environment refuses: the row, and nothing started", () => {
      writeFileSync(
        join(project.dir, "bad.jsonl"),
        '{"id": "fine", "input": "Find it.", "metadata": {"secret": 5}}\n{"id": "no-secret", "input": "Find it."}\n',
      );
      const rejected = shell(
        "npx edgeroll run --env guess-number --dataset bad.jsonl --group-size 2 --run bad-rows",
      );
      expect(rejected.status).toBe(1);
      expect(rejected.stderr.trim().split("\n")).toEqual([
        "edgeroll: bad.jsonl: 1 row that guess-number cannot play, so nothing was started:",
        expect.stringMatching(/^ {2}bad\.jsonl:2 \(id "no-secret"\): example\.metadata\.secret: /),
        "Fix or remove it, then run again.",
      ]);
      const pulled = shell("npx edgeroll pull --run bad-rows --max-groups 1");
      expect(pulled.status).toBe(1);
      expect(pulled.stderr).toMatch(
        /^edgeroll: unknown run "bad-rows": no group was ever started in it/,
      );
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

  describe("a second stack, on its own state directory (docs/local-stack.md)", () => {
    let second = 0;
    let said = "";
    beforeAll(async () => {
      shell(
        "set -m; npm run dev -- --port 8788 --sim-port 8001 --persist-to .wrangler/state-2 >dev-2.log 2>&1 & echo $! >dev-2.pid",
      );
      second = Number(readFileSync(join(project.dir, "dev-2.pid"), "utf8"));
      const until = Date.now() + 180_000;
      while (!said.includes("edgeroll is up")) {
        if (Date.now() > until) throw new Error(`the second stack did not come up:\n${said}`);
        await new Promise((r) => setTimeout(r, 500));
        said = readFileSync(join(project.dir, "dev-2.log"), "utf8");
      }
    }, 200_000);
    afterAll(async () => {
      if (second > 0) await interrupt(second);
    }, 60_000);

    it("hands its clients its own token, not the first stack's", () => {
      const cli = shell("npx edgeroll pull --url http://127.0.0.1:8788 --max-groups 1");
      expect(cli.status, cli.stderr).toBe(0);
      expect(cli.stderr).toMatch(/^nothing to lease/);
      const python = shell(
        `PYTHONPATH=python python3 -c "from edgeroll_client import EdgerollClient; print(EdgerollClient('http://127.0.0.1:8788').lease(max_groups=1).batch_id)"`,
      );
      expect(python.stderr).toBe("");
      expect(python.stdout.trim()).toBe("None");
    });

    it("prints a curl line whose token is its own", () => {
      const curl = /curl: (-H "authorization: Bearer \$\(npx edgeroll token [^"]+\)")/.exec(
        said,
      )?.[1];
      expect(curl, said).toBe(
        '-H "authorization: Bearer $(npx edgeroll token --persist-to .wrangler/state-2)"',
      );
      const answer = shell(
        `curl -s -o /dev/null -w '%{http_code}' localhost:8788/v1/environments ${curl}`,
      );
      expect(answer.stdout).toBe("200");
      // The first stack's token is refused there, which is why it must not be sent.
      const first = shell(
        `curl -s -o /dev/null -w '%{http_code}' localhost:8788/v1/environments -H "authorization: Bearer $(npx edgeroll token)"`,
      );
      expect(first.stdout).toBe("401");
    });
  });

  it("Ctrl-C stops the stack and frees its state directory", async () => {
    expect(existsSync(join(project.dir, ".wrangler/state/edgeroll-stack.json"))).toBe(true);
    await interrupt(devPid);
    expect(existsSync(join(project.dir, ".wrangler/state/edgeroll-stack.json"))).toBe(false);
    for (const port of [8787, 8000]) expect(await portIsFree(port)).toBe(true);
  }, 60_000);
});
