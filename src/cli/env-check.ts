/** `edgeroll env check`: offline validation of a registered environment against its dataset. */
import { existsSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import {
  environmentNames,
  isRegisteredEnvironment,
  loadEnvironment,
} from "../environments/registry";
import { RemoteEnvironment, remoteInfo } from "../environments/remote/remote-environment";
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

/** The limits a deployment's defaults give remote calls (STEP_TIMEOUT_S, SCORE_TIMEOUT_S). */
const REMOTE_LIMITS = { stepTimeoutMs: 60_000, scoreTimeoutMs: 300_000 };

export interface EnvCheckOptions {
  dataset?: string;
  promptText: string;
  /** A remote environment server; `name` is then what its `/info` says unless given. */
  url?: string;
}

export async function envCheck(
  name: string | undefined,
  options: EnvCheckOptions,
): Promise<boolean> {
  if (options.url !== undefined) {
    // The same checks, with every hook answered over HTTP (REMOTE_ENV_TOKEN as the bearer).
    const target = {
      name: name ?? options.url,
      baseUrl: options.url,
      token: process.env.REMOTE_ENV_TOKEN,
    };
    const info = await remoteInfo(target, REMOTE_LIMITS.stepTimeoutMs).catch((error: Error) => {
      throw new CliError(`${options.url}/info: ${error.message}`);
    });
    // No episode id: the checks replay the same turns on purpose, so their calls carry no key.
    const remote = new RemoteEnvironment({ ...target, name: info.name }, REMOTE_LIMITS);
    return checkWith(name ?? info.name, remote, options);
  }
  if (name === undefined) throw new CliError("name an environment, or pass --url");
  if (!isRegisteredEnvironment(name))
    throw new CliError(new UnknownEnvironmentError(name, environmentNames()).message);
  return checkWith(name, loadEnvironment(name), options);
}

async function checkWith(
  name: string,
  env: ReturnType<typeof loadEnvironment>,
  options: EnvCheckOptions,
): Promise<boolean> {
  const file = options.dataset ? resolve(options.dataset) : join(PROJECT_ROOT, paths.dataset(name));
  if (!existsSync(file)) throw new CliError(`no dataset at ${file}; pass --dataset <file.jsonl>`);
  const source = relative(process.cwd(), file);
  const { examples, problems } = parseDatasetJsonl(readFileSync(file, "utf8"), source);
  console.log(`edgeroll env check ${name}: ${examples.length} examples from ${source}`);
  const report = await checkEnvironment(env, examples, {
    promptText: options.promptText,
    datasetProblems: problems,
  });
  console.log(formatReport(name, report));
  return report.ok;
}
