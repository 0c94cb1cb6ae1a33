// What `npm run dev` reads from wrangler dev's output: a failed build's problems (file, line,
// message) as wrangler 4 prints them, colours and all, and the reload that means it builds again.
import { describe, expect, it } from "vitest";
import { transformProblems } from "../../src/cli/build-problems";
import { type BuildState, buildFailureMessage, WorkerBuild } from "../../src/cli/worker-build";

const E = "\u001b";
/** wrangler 4.164's report of a syntax error, line by line as its output arrives (blank lines dropped). */
const REPORT = [
  `${E}[31m✘ ${E}[41;31m[${E}[41;97mERROR${E}[41;31m]${E}[0m ${E}[1mBuild failed with 1 error:${E}[0m`,
  `  ${E}[31m✘ ${E}[41;31m[${E}[41;97mERROR${E}[41;31m]${E}[0m ${E}[1mUnexpected "return"${E}[0m`,
  "      src/environments/mult.ts:18:11:",
  `  ${E}[37m      18 │     return ${E}[32mreturn${E}[37m ;;( [{ role: "user", content: ...`,
  `           ╵            ${E}[32m~~~~~~${E}[0m`,
];

function watch() {
  const states: BuildState[] = [];
  const build = new WorkerBuild((state) => states.push(state));
  return { build, states };
}

describe("wrangler dev's build reports", () => {
  it("read as the file, line and message of each problem, as soon as the report is complete", () => {
    const { build, states } = watch();
    for (const line of ["⎔ Starting local server...", "[wrangler:info] Ready on http://x"])
      build.feed(line);
    expect(states).toEqual([]);
    for (const line of REPORT) build.feed(line);
    expect(states).toHaveLength(1);
    const failed = states[0];
    if (failed?.ok !== false) throw new Error("expected a failed build");
    expect(failed.problems).toEqual([
      { file: "src/environments/mult.ts", line: 18, column: 11, message: 'Unexpected "return"' },
    ]);
    expect(buildFailureMessage(failed)).toBe(
      'the Worker does not build: src/environments/mult.ts:18:11: Unexpected "return"',
    );
    build.dispose();
  });

  it("a later reload means the Worker builds again", () => {
    const { build, states } = watch();
    for (const line of REPORT) build.feed(line);
    build.feed(`${E}[2m⎔ Reloading local server...${E}[22m`);
    expect(states.map((s) => s.ok)).toEqual([false, true]);
    expect(build.state.ok).toBe(true);
  });

  it("a report of several errors waits for all of them", () => {
    const { build, states } = watch();
    build.feed("✘ [ERROR] Build failed with 2 errors:");
    build.feed('  ✘ [ERROR] Could not resolve "./nowhere"');
    build.feed("      src/environments/a.ts:1:20:");
    expect(states).toHaveLength(0);
    build.feed('  ✘ [ERROR] Expected ";" but found ")"');
    build.feed("      src/environments/b.ts:4:2:");
    expect(states).toHaveLength(1);
    const failed = states[0];
    expect(failed?.ok === false && failed.problems.map((p) => p.file)).toEqual([
      "src/environments/a.ts",
      "src/environments/b.ts",
    ]);
  });
});

describe("a module the CLI cannot compile", () => {
  it("reads tsx's TransformError as its file, line and message", () => {
    const error = new Error(
      'Transform failed with 1 error:\n/x/src/environments/mult.ts:18:11: ERROR: Unexpected "return"',
    );
    error.name = "TransformError";
    expect(transformProblems(error)).toEqual([
      { file: "/x/src/environments/mult.ts", line: 18, column: 11, message: 'Unexpected "return"' },
    ]);
    expect(transformProblems(new Error("something else"))).toBeNull();
  });
});
