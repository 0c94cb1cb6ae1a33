import { spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../src/cli/ports";
import { ProjectCopy } from "./project-copy";

let project: ProjectCopy;
const read = (file: string) => readFileSync(join(project.dir, file), "utf8");

beforeAll(() => {
  project = new ProjectCopy();
});
afterAll(() => project.remove());

describe("edgeroll env check", () => {
  it("passes the starter environment", () => {
    const result = project.edgeroll("env", "check", "guess-number");
    expect(result.stderr).toBe("");
    expect(result.stdout).toMatch(/^PASS {2}steps deterministic under replay/m);
    expect(result.stdout).toMatch(/guess-number: PASS \(12 checks\)/);
    expect(result.status).toBe(0);
  });

  it("refuses an unknown environment, naming the registered ones", async () => {
    // No Worker there (another test's stack may hold the default port).
    const url = `http://127.0.0.1:${await freePort()}`;
    const result = project.edgerollWith({ EDGEROLL_URL: url }, "env", "check", "no-such-env");
    expect(result.status).toBe(1);
    // Not registered here, so the Worker is asked for its remote ones; none answers in the copy.
    expect(result.stderr).toMatch(
      /unknown environment "no-such-env" \(registered here: .*guess-number.*\); nothing answered at http:\/\/127\.0\.0\.1:\d+ to ask for its remote environments \(start it with `npm run dev`/,
    );
  });

  it("checks a judged environment against a judge host (--judge-url), and says none is there without one", async () => {
    const alone = project.edgeroll("env", "check", "judged-answer");
    expect(alone.status).toBe(1);
    expect(alone.stdout).toMatch(/no judge is configured here \(component "correctness"\)/);
    // The simulator, in a process of its own (the check blocks this one), as the judge.
    const port = await freePort();
    const sim = spawn(
      process.execPath,
      [join(project.dir, "bin/edgeroll.mjs"), "sim", "--port", String(port)],
      { cwd: project.dir, stdio: "ignore" },
    );
    try {
      for (let tries = 0; ; tries++) {
        const up = await fetch(`http://127.0.0.1:${port}/v1/models`).then(
          (r) => r.ok,
          () => false,
        );
        if (up) break;
        if (tries > 100) throw new Error("the simulator did not start");
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const judged = project.edgeroll(
        "env",
        "check",
        "judged-answer",
        "--judge-url",
        `http://127.0.0.1:${port}/v1`,
      );
      expect(judged.stdout).toMatch(/judged-answer: PASS/);
      expect(judged.status).toBe(0);
    } finally {
      sim.kill();
    }
  }, 60_000);

  it("reads another dataset with --dataset and reports its bad rows", () => {
    const file = join(project.dir, "bad.jsonl");
    writeFileSync(file, '{"id": "x", "input": "find it", "metadata": {"secret": 12}}\n{nope\n');
    const result = project.edgeroll("env", "check", "guess-number", "--dataset", file);
    expect(result.status).toBe(1);
    expect(result.stdout).toMatch(/^FAIL {2}dataset rows valid +bad\.jsonl:2: not valid JSON/m);
  });
});

describe("edgeroll env new", () => {
  it("writes a multi-turn starter, its dataset and test, registers it, and it passes check", () => {
    const registryBefore = read("src/environments/registry.ts");
    const created = project.edgeroll("env", "new", "my-env", "--multi-turn");
    expect(created.stderr).toBe("");
    expect(created.status).toBe(0);
    for (const file of [
      "src/environments/my-env.ts",
      "datasets/my-env.jsonl",
      "test/environments/my-env.test.ts",
    ]) {
      expect(existsSync(join(project.dir, file)), file).toBe(true);
    }
    // Two lines added, nothing else moved: every other entry keeps its place and its comment.
    const registry = read("src/environments/registry.ts").split("\n");
    const added = ['import { MyEnv } from "./my-env";', '  "my-env": () => new MyEnv(),'];
    for (const line of added) expect(registry).toContain(line);
    expect(registry.filter((l) => !added.includes(l)).join("\n")).toBe(registryBefore);
    expect(registry.indexOf('  "my-env": () => new MyEnv(),')).toBe(
      registry.indexOf("  // edgeroll:env-entries") - 1,
    );

    const checked = project.edgeroll("env", "check", "my-env");
    expect(checked.stdout).toMatch(/my-env: PASS/);
    expect(checked.status).toBe(0);
  }, 60_000);

  it("writes a Python starter, its dataset and a test that serves and plays it over HTTP", () => {
    const created = project.edgeroll("env", "new", "py-game", "--python");
    expect(created.status).toBe(0);
    expect(created.stdout).toMatch(/REMOTE_ENVS = \{ "py-game" = "http:\/\/127\.0\.0\.1:9100" \}/);
    // The command that checks it, which it passes (test/e2e/python-env.test.ts runs it).
    expect(created.stdout).toMatch(
      /^Check it: {2}npx edgeroll env check py-game --url http:\/\/127\.0\.0\.1:9100$/m,
    );
    expect(read("python/environments/py_game.py")).toContain("from freesolo.environments import");
    const tested = spawnSync("python3", ["-m", "unittest", "python/tests/test_py_game.py"], {
      cwd: project.dir,
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(tested.stderr).toMatch(/Ran 1 test[\s\S]*OK/);
    expect(tested.status).toBe(0);
    // Python environments are served, not compiled in: the registry is untouched.
    expect(read("src/environments/registry.ts")).not.toContain("py-game");
  }, 60_000);

  it("writes a single-turn starter that passes check", () => {
    expect(project.edgeroll("env", "new", "quiz", "--single-turn").status).toBe(0);
    expect(read("src/environments/quiz.ts")).toContain("extends EnvironmentSingleTurn");
    const checked = project.edgeroll("env", "check", "quiz");
    expect(checked.stdout).toMatch(/quiz: PASS/);
  }, 60_000);

  it("leaves the project formatted, type-correct and with passing generated tests", () => {
    const lint = project.bin("biome", "check", "--vcs-enabled=false", ".");
    expect(lint.stdout + lint.stderr).not.toMatch(/error/i);
    expect(lint.status).toBe(0);
    for (const config of ["tsconfig.json", "tsconfig.node.json"]) {
      const types = project.bin("tsc", "-p", config);
      expect(types.stdout, config).toBe("");
      expect(types.status).toBe(0);
    }
    const tests = project.bin(
      "vitest",
      "run",
      "--project",
      "node",
      "test/environments/my-env.test.ts",
      "test/environments/quiz.test.ts",
    );
    expect(tests.stdout).toMatch(/Tests +4 passed/);
    expect(tests.status).toBe(0);
  }, 120_000);

  it("never overwrites: a taken name or an existing file stops it before it writes anything", () => {
    const registry = read("src/environments/registry.ts");
    const again = project.edgeroll("env", "new", "my-env");
    expect(again.status).toBe(1);
    expect(again.stderr).toMatch(/an environment named "my-env" is already registered/);

    writeFileSync(join(project.dir, "datasets/taken.jsonl"), "keep me\n");
    const clash = project.edgeroll("env", "new", "taken");
    expect(clash.status).toBe(1);
    expect(clash.stderr).toMatch(/refusing to overwrite datasets\/taken\.jsonl/);
    expect(read("datasets/taken.jsonl")).toBe("keep me\n");
    expect(existsSync(join(project.dir, "src/environments/taken.ts"))).toBe(false);
    expect(read("src/environments/registry.ts")).toBe(registry);
  });

  it("rejects names that are not kebab-case", () => {
    const result = project.edgeroll("env", "new", "My_Env");
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/"My_Env" is not a valid environment name/);
  });

  it("check fails a deliberately broken environment, naming each problem", () => {
    expect(project.edgeroll("env", "new", "broken-env").status).toBe(0);
    const file = join(project.dir, "src/environments/broken-env.ts");
    const source = readFileSync(file, "utf8")
      .replace(
        'return { done: false, messages: reply("Reply with',
        'return { done: false, metadata: { roll: Math.random() }, messages: reply("Reply with',
      )
      .replace("score: perTurn.includes(1) ? 1 : 0,", "score: Number.NaN,");
    writeFileSync(file, source);
    const result = project.edgeroll("env", "check", "broken-env");
    expect(result.status).toBe(1);
    expect(result.stdout).toMatch(
      /^FAIL {2}steps deterministic under replay +example broken-env-1, turn 0: stepEpisode gave different results/m,
    );
    expect(result.stdout).toMatch(
      /^FAIL {2}rewards finite +example broken-env-1, gold episode: scoreEpisode: score: .*NaN/m,
    );
    expect(result.stdout).toMatch(/broken-env: FAIL \(\d+ of 12 checks failed\)/);
  }, 60_000);
});

describe("edgeroll env check --url", () => {
  it("passes a TypeScript environment served by `env serve`, skipping the gold answers HTTP has not", async () => {
    const server = spawn(
      process.execPath,
      [join(project.dir, "bin/edgeroll.mjs"), "env", "serve", "guess-number", "--port", "0"],
      { cwd: project.dir, env: { ...process.env, NO_COLOR: "1" } },
    );
    try {
      const url = await new Promise<string>((done, fail) => {
        let out = "";
        server.stdout.on("data", (chunk: Buffer) => {
          out += chunk.toString();
          const found = /serving guess-number on (http:\/\/\S+)/.exec(out)?.[1];
          if (found) done(found);
        });
        server.on("exit", (code) => fail(new Error(`env serve exited ${code}: ${out}`)));
      });
      const checked = project.edgeroll(
        "env",
        "check",
        "--url",
        url,
        "--dataset",
        "datasets/guess-number.jsonl",
      );
      expect(checked.status, checked.stdout + checked.stderr).toBe(0);
      expect(checked.stdout).toMatch(
        /^SKIP {2}gold answers earn reward +skipped: no row has an output/m,
      );
      expect(checked.stdout).toMatch(/guess-number: PASS \(12 checks, 1 skipped\)/);
    } finally {
      server.kill();
    }
  }, 60_000);
});
