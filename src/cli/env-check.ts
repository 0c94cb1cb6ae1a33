/** `edgeroll env check`: offline validation of a registered environment against its dataset. */
import { existsSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import {
  environmentNames,
  isRegisteredEnvironment,
  loadEnvironment,
} from "../environments/registry";
import {
  type CheckReport,
  checkEnvironment,
  parseDatasetJsonl,
  UnknownEnvironmentError,
} from "../sdk";
import { CliError, PROJECT_ROOT, paths } from "./project";

const SHOWN_FAILURES = 5;

export function formatReport(name: string, report: CheckReport): string {
  const width = Math.max(...report.checks.map((c) => c.name.length));
  const lines = report.checks.flatMap((check) => {
    const head = `${check.ok ? "PASS" : "FAIL"}  ${check.name.padEnd(width)}  ${check.detail}`;
    const more = check.failures.slice(1, SHOWN_FAILURES).map((f) => `${" ".repeat(width + 8)}${f}`);
    const rest = check.failures.length - SHOWN_FAILURES;
    return [head, ...more, ...(rest > 0 ? [`${" ".repeat(width + 8)}... and ${rest} more`] : [])];
  });
  const failed = report.checks.filter((c) => !c.ok).length;
  const verdict =
    failed === 0
      ? `PASS (${report.checks.length} checks)`
      : `FAIL (${failed} of ${report.checks.length} checks failed)`;
  return [...lines, `${name}: ${verdict}`].join("\n");
}

export async function envCheck(
  name: string,
  options: { dataset?: string; promptText: string },
): Promise<boolean> {
  if (!isRegisteredEnvironment(name))
    throw new CliError(new UnknownEnvironmentError(name, environmentNames()).message);
  const file = options.dataset ? resolve(options.dataset) : join(PROJECT_ROOT, paths.dataset(name));
  if (!existsSync(file)) throw new CliError(`no dataset at ${file}; pass --dataset <file.jsonl>`);
  const source = relative(process.cwd(), file);
  const { examples, problems } = parseDatasetJsonl(readFileSync(file, "utf8"), source);
  console.log(`edgeroll env check ${name}: ${examples.length} examples from ${source}`);
  const report = await checkEnvironment(loadEnvironment(name), examples, {
    promptText: options.promptText,
    datasetProblems: problems,
  });
  console.log(formatReport(name, report));
  return report.ok;
}
