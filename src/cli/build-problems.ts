/**
 * Source that does not compile, as esbuild reports it: to tsx when the CLI imports a module (a
 * `TransformError`), and in wrangler dev's log when it bundles the Worker. Both come down to a
 * file, a line, a column and a message, which is all a person needs to fix it.
 */
import { isAbsolute, relative } from "node:path";
import { PROJECT_ROOT } from "./project";

export interface BuildProblem {
  file: string;
  line: number;
  column: number;
  message: string;
}

const LOCATED = /^(.+?):(\d+):(\d+): (?:ERROR: )?(.+)$/;

/** `src/environments/mult.ts:18:11: Unexpected "return"`, the path relative to the checkout. */
export function describeProblem(problem: BuildProblem): string {
  const file = isAbsolute(problem.file) ? relative(PROJECT_ROOT, problem.file) : problem.file;
  return `${file}:${problem.line}:${problem.column}: ${problem.message}`;
}

/** The problems of a module tsx could not compile (esbuild's "Transform failed"), else null. */
export function transformProblems(error: unknown): BuildProblem[] | null {
  if (!(error instanceof Error) || error.name !== "TransformError") return null;
  const problems = error.message.split("\n").flatMap((line) => {
    const found = LOCATED.exec(line.trim());
    return found
      ? [
          {
            file: found[1] as string,
            line: Number(found[2]),
            column: Number(found[3]),
            message: found[4] as string,
          },
        ]
      : [];
  });
  return problems.length > 0 ? problems : null;
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI colour codes are what we strip
const ANSI = /\u001b\[[0-9;]*m/g;

export const stripAnsi = (line: string) => line.replace(ANSI, "");

/** wrangler's first line of a failed build: `✘ [ERROR] Build failed with 2 errors:`. */
export const BUILD_FAILED = /\[ERROR\] Build failed with (\d+) errors?/;
const MESSAGE = /^\s*✘ \[ERROR\] (.+)$/;
const LOCATION = /^\s*(\S.*?):(\d+):(\d+):$/;

/**
 * The problems in wrangler's report of a failed build (its lines, colours stripped): esbuild's
 * format, one `✘ [ERROR] <message>` each, then its `<file>:<line>:<column>:` and the source.
 */
export function wranglerBuildProblems(lines: readonly string[]): BuildProblem[] {
  const problems: BuildProblem[] = [];
  let message: string | null = null;
  for (const raw of lines) {
    const line = stripAnsi(raw);
    if (BUILD_FAILED.test(line)) continue;
    const said = MESSAGE.exec(line);
    if (said) {
      message = said[1] as string;
      continue;
    }
    const at = LOCATION.exec(line);
    if (at && message !== null) {
      problems.push({
        file: at[1] as string,
        line: Number(at[2]),
        column: Number(at[3]),
        message,
      });
      message = null;
    }
  }
  return problems;
}
