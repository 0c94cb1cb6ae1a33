/**
 * What the CLI prints when a command fails: one line naming the problem, and the command that
 * fixes the usual ones (a refused token, a token without the role, nothing listening, source
 * that does not compile). The stack only with --verbose.
 */
import { relative } from "node:path";
import { EdgerollConnectionError, EdgerollError } from "../client/edgeroll-client";
import { isLoopbackUrl } from "../client/local-token";
import { lastTokenChoice, type TokenChoice } from "./api-client";
import { describeProblem, transformProblems } from "./build-problems";
import { CliError, PROJECT_ROOT, resolveStateDir } from "./project";

/** `npx edgeroll token [--role R] [--persist-to D]` for the stack serving the refused URL. */
function tokenCommand(choice: TokenChoice | null, role: string | null): string {
  const stack = choice?.stack;
  const dir = stack ? relative(PROJECT_ROOT, stack.state_dir) || stack.state_dir : null;
  const persistTo =
    dir === null || resolveStateDir(dir) === resolveStateDir(".wrangler/state")
      ? ""
      : ` --persist-to ${dir}`;
  return `npx edgeroll token${role ? ` --role ${role}` : ""}${persistTo}`;
}

function unauthorizedHint(error: EdgerollError, choice: TokenChoice | null): string {
  const source = choice?.source ?? null;
  const local = isLoopbackUrl(error.url);
  const origin = new URL(error.url).origin;
  if (source === "EDGEROLL_TOKEN") {
    return local
      ? `EDGEROLL_TOKEN is set, but ${origin} does not know that token (another stack's?): \`unset EDGEROLL_TOKEN\` and the CLI finds this stack's, or \`export EDGEROLL_TOKEN=$(${tokenCommand(choice, null)})\``
      : `EDGEROLL_TOKEN is set, but ${origin} does not know that token: set it to one of the deployment's API_TOKENS`;
  }
  if (source === "--token") {
    return local
      ? `${origin} does not know the token given with --token: \`--token $(${tokenCommand(choice, null)})\` gives this stack's, or leave --token out and the CLI finds it`
      : `${origin} does not know the token given with --token: pass one of the deployment's API_TOKENS`;
  }
  if (source !== null) {
    return `${origin} does not know the token in ${relative(process.cwd(), source) || source} (the file of another stack?): pass --token, or restart the stack that serves ${origin}`;
  }
  return local
    ? `no token was sent: no local stack's token file was found for ${origin}. \`npm run dev\` makes them; or pass --token`
    : `no token was sent: pass --token or set EDGEROLL_TOKEN to one of the deployment's API_TOKENS`;
}

/** For a token without the role (the 403's details name them); null for other refusals. */
function forbiddenHint(error: EdgerollError, choice: TokenChoice | null): string | null {
  const details = error.details as { needs_one_of?: unknown } | undefined;
  if (!Array.isArray(details?.needs_one_of)) return null;
  const needs = details.needs_one_of as string[];
  const role = needs[0] ?? null;
  const source = choice?.source ?? "nowhere";
  const needed = `the ${needs.join(" or ")} role`;
  if (!isLoopbackUrl(error.url))
    return `the token (from ${source}) lacks ${needed}: use a token of the deployment's API_TOKENS that has it`;
  return `the token (from ${source}) lacks ${needed}: \`--token $(${tokenCommand(choice, role)})\` has it, as does the stack's admin token (\`${tokenCommand(choice, null)}\`, what the CLI uses when given no token)`;
}

/** The lines to print for `error`: the problem, then what to do, if anything is known. */
export function describeError(
  error: unknown,
  verbose: boolean,
  /** Which token the failed command sent, and from where (its client's, by default). */
  choice: TokenChoice | null = lastTokenChoice(),
): string[] {
  const stack = verbose && error instanceof Error && error.stack ? [error.stack] : [];
  if (error instanceof CliError) return [`edgeroll: ${error.message}`, ...stack];
  const problems = transformProblems(error);
  if (problems !== null) {
    return [
      ...problems.map((p) => `edgeroll: ${describeProblem(p)}`),
      "  this command loads the environments registered in src/environments/registry.ts, and this file does not compile: fix it (commands that need no environment code, like `edgeroll token` and `edgeroll pull`, still work)",
      ...stack,
    ];
  }
  if (error instanceof EdgerollError) {
    const lines = [
      `edgeroll: ${error.method} ${error.url} answered ${error.status} ${error.code}: ${error.apiMessage}`,
    ];
    if (error.status === 401) lines.push(`  ${unauthorizedHint(error, choice)}`);
    const forbidden = error.status === 403 ? forbiddenHint(error, choice) : null;
    if (forbidden !== null) lines.push(`  ${forbidden}`);
    return [...lines, ...stack];
  }
  if (error instanceof EdgerollConnectionError) {
    const origin = new URL(error.url).origin;
    return [
      `edgeroll: nothing answered at ${origin} (${error.message})`,
      `  start edgeroll with \`npm run dev\`, or point at another with --url or EDGEROLL_URL`,
      ...stack,
    ];
  }
  const message = error instanceof Error ? error.message : String(error);
  return [
    `edgeroll: ${message}`,
    ...(verbose ? stack : ["  (run again with --verbose for the stack trace)"]),
  ];
}
