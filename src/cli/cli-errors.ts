/**
 * What the CLI prints when a command fails: one line naming the problem, and what to do about
 * the usual ones (a refused token, nothing listening). The stack only with --verbose.
 */
import { EdgerollConnectionError, EdgerollError } from "../client/edgeroll-client";
import { lastTokenSource } from "./api-client";
import { CliError } from "./project";

function authHint(error: EdgerollError): string {
  const source = lastTokenSource();
  if (error.status === 403) {
    return `the token (from ${source ?? "nowhere"}) lacks the role this needs: use one that has it`;
  }
  const sent = source ? `the token from ${source} was refused` : "no token was sent";
  return `${sent}. Pass --token or set EDGEROLL_TOKEN; for a local stack, \`npx edgeroll token\` prints one`;
}

/** The lines to print for `error`: the problem, then what to do, if anything is known. */
export function describeError(error: unknown, verbose: boolean): string[] {
  const stack = verbose && error instanceof Error && error.stack ? [error.stack] : [];
  if (error instanceof CliError) return [`edgeroll: ${error.message}`, ...stack];
  if (error instanceof EdgerollError) {
    const lines = [
      `edgeroll: ${error.method} ${error.url} answered ${error.status} ${error.code}: ${error.apiMessage}`,
    ];
    if (error.status === 401 || error.status === 403) lines.push(`  ${authHint(error)}`);
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
