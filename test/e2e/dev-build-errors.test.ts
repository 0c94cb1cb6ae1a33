// An environment file that does not compile, as a user meets it: in a fresh copy, their own
// environment (`env new mult`) with one broken line. The CLI commands that need no environment
// code still work; the ones that do name the file, line and message; `npm run dev` prints the
// build error at once, answers every request with a 503 naming it instead of holding it, and
// serves again once the file is fixed (and stops serving when it breaks again).
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../src/cli/ports";
import type { ErrorBody } from "../../src/views/error-body";
import { ProjectCopy } from "../cli/project-copy";

const FILE = "src/environments/mult.ts";
/** The line the break goes on (1-based): just above the environment's class. */
let brokenLine = 0;
let project: ProjectCopy;
let original = "";
let dev: ChildProcess | null = null;
let output = "";
let apiUrl = "";

function breakIt(): void {
  const lines = original.split("\n");
  brokenLine = lines.findIndex((l) => l.includes("extends EnvironmentSingleTurn")) + 1;
  lines.splice(brokenLine - 1, 0, "  const broken = ;");
  writeFileSync(join(project.dir, FILE), lines.join("\n"));
}

const fixIt = () => writeFileSync(join(project.dir, FILE), original);

async function until(what: string, ok: () => boolean, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (dev?.exitCode !== null && dev?.exitCode !== undefined)
      throw new Error(`npm run dev exited before ${what}:\n${output}`);
    if (Date.now() > end) throw new Error(`no ${what} within ${ms} ms:\n${output}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** GET /healthz, answered within a few seconds either way (never held). */
async function health(): Promise<{ status: number; body: unknown }> {
  const answer = await fetch(`${apiUrl}/healthz`, { signal: AbortSignal.timeout(5000) });
  return { status: answer.status, body: await answer.json() };
}

beforeAll(async () => {
  project = new ProjectCopy();
  expect(project.edgeroll("env", "new", "mult", "--single-turn").status).toBe(0);
  original = readFileSync(join(project.dir, FILE), "utf8");
  breakIt();
}, 60_000);

afterAll(async () => {
  if (dev?.pid !== undefined && dev.exitCode === null && dev.signalCode === null) {
    const exited = new Promise((r) => dev?.once("exit", r));
    process.kill(-dev.pid, "SIGINT");
    await exited;
  }
  project?.remove();
}, 60_000);

describe("an environment file that does not compile", () => {
  it("leaves the commands that need no environment code working", async () => {
    // No stack has made tokens yet: the token command's own message, not an esbuild trace.
    const token = project.edgeroll("token");
    expect(token.stderr).toMatch(/^edgeroll: no local tokens at .*`npm run dev` or `npm run demo`/);
    const nobody = `http://127.0.0.1:${await freePort()}`;
    const pull = project.edgeroll("pull", "--max-groups", "1", "--url", nobody);
    expect(pull.stderr).toMatch(/^edgeroll: nothing answered at/);
    for (const result of [token, pull]) {
      expect(result.stderr).not.toMatch(/TransformError|Transform failed|\n\s+at /);
      expect(result.stderr).not.toContain("mult.ts");
    }
  });

  it("makes a command that loads it name the file, line and message", () => {
    const check = project.edgeroll("env", "check", "mult");
    expect(check.status).toBe(1);
    expect(check.stderr).toMatch(
      new RegExp(`^edgeroll: ${FILE}:${brokenLine}:\\d+: Unexpected ";"$`, "m"),
    );
    expect(check.stderr).toMatch(/`edgeroll token` and `edgeroll pull`, still work/);
    expect(check.stderr).not.toMatch(/\n\s+at /);
  });

  describe("under npm run dev", () => {
    beforeAll(async () => {
      const [port, simPort] = [await freePort(), await freePort()];
      apiUrl = `http://127.0.0.1:${port}`;
      dev = spawn(
        process.execPath,
        [
          join(project.dir, "bin/edgeroll.mjs"),
          "dev",
          "--port",
          `${port}`,
          "--sim-port",
          `${simPort}`,
        ],
        { cwd: project.dir, env: { ...process.env, NO_COLOR: "1" }, detached: true },
      );
      for (const stream of [dev.stdout, dev.stderr]) {
        stream?.setEncoding("utf8");
        stream?.on("data", (chunk: string) => (output += chunk));
      }
      await until("build error", () => output.includes("the Worker does not build"), 150_000);
    }, 180_000);

    it("prints the build error at once: file, line and message", () => {
      expect(output).toMatch(
        new RegExp(
          `edgeroll: the Worker does not build: ${FILE}:${brokenLine}:\\d+: Unexpected ";"\\n  every request is answered 503 build_failed`,
        ),
      );
      expect(output).not.toContain("edgeroll is up");
    });

    it("answers every request at once with a 503 naming it", async () => {
      for (const path of ["/healthz", "/v1/environments"]) {
        const answer = await fetch(`${apiUrl}${path}`, { signal: AbortSignal.timeout(5000) });
        expect(answer.status, path).toBe(503);
        const { error } = (await answer.json()) as ErrorBody;
        expect(error.code).toBe("build_failed");
        expect(error.message).toMatch(
          new RegExp(
            `^the Worker does not build: ${FILE}:${brokenLine}:\\d+: Unexpected ";"; fix it`,
          ),
        );
      }
      // Meanwhile the stack's tokens exist, and the token command prints one.
      const token = project.edgeroll("token");
      expect(token.status).toBe(0);
      expect(token.stdout.trim()).toMatch(/^\S{20,}$/);
    });

    it("serves again once the file is fixed", async () => {
      fixIt();
      await until("recovery", () => output.includes("edgeroll is up"), 150_000);
      expect(output).toMatch(/edgeroll: the Worker builds again; serving requests/);
      expect(await health()).toMatchObject({ status: 200 });
    }, 180_000);

    it("and answers 503 again when it breaks again, then recovers", async () => {
      const before = output.length;
      breakIt();
      await until("second failure", () => output.slice(before).includes("does not build"), 60_000);
      expect(await health()).toMatchObject({
        status: 503,
        body: { error: { code: "build_failed" } },
      });
      const broken = output.length;
      fixIt();
      await until("second recovery", () => output.slice(broken).includes("builds again"), 60_000);
      expect(await health()).toMatchObject({ status: 200 });
    }, 150_000);
  });
});
