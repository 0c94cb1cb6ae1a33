/**
 * `edgeroll env check`: offline validation of an environment against its dataset. A name this
 * checkout registers is checked in-process; any other is asked of the Worker (EDGEROLL_URL, by
 * default the local stack), and a remote environment it serves is checked over HTTP where it
 * runs, as `--url` does.
 */
import { existsSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { EdgerollConnectionError, EdgerollError } from "../client/edgeroll-client";
import {
  environmentNames,
  isRegisteredEnvironment,
  loadEnvironment,
} from "../environments/registry";
import { RemoteEnvironment, remoteInfo } from "../environments/remote/remote-environment";
import { HostJudge } from "../judges/host-judge";
import {
  type CheckReport,
  checkEnvironment,
  type EnvironmentMultiTurn,
  type Judge,
  parseDatasetJsonl,
} from "../sdk";
import { apiClient, DEFAULT_URL } from "./api-client";
import { CliError, PROJECT_ROOT, paths } from "./project";

const SHOWN_FAILURES = 5;

export function formatReport(name: string, report: CheckReport): string {
  const width = Math.max(...report.checks.map((c) => c.name.length));
  const lines = report.checks.flatMap((check) => {
    const label = !check.ok ? "FAIL" : check.skipped ? "SKIP" : "PASS";
    const head = `${label}  ${check.name.padEnd(width)}  ${check.detail}`;
    const more = check.failures.slice(1, SHOWN_FAILURES).map((f) => `${" ".repeat(width + 8)}${f}`);
    const rest = check.failures.length - SHOWN_FAILURES;
    return [head, ...more, ...(rest > 0 ? [`${" ".repeat(width + 8)}... and ${rest} more`] : [])];
  });
  const failed = report.checks.filter((c) => !c.ok).length;
  const skipped = report.checks.filter((c) => c.skipped).length;
  const verdict =
    failed === 0
      ? `PASS (${report.checks.length} checks${skipped > 0 ? `, ${skipped} skipped` : ""})`
      : `FAIL (${failed} of ${report.checks.length} checks failed)`;
  return [...lines, `${name}: ${verdict}`].join("\n");
}

/** The limits a deployment's defaults give remote calls (STEP_TIMEOUT_S, SCORE_TIMEOUT_S). */
const REMOTE_LIMITS = { stepTimeoutMs: 60_000, scoreTimeoutMs: 300_000 };

/** Over HTTP the gold answers are the rows' outputs: the protocol has no sftCompletion. */
const REMOTE_GOLD =
  "and over HTTP that is the only gold answer there is (the protocol has no sftCompletion); give rows an output to check that gold answers earn reward";

export interface EnvCheckOptions {
  dataset?: string;
  promptText: string;
  /** A remote environment server; `name` is then what its `/info` says unless given. */
  url?: string;
  /** The judge a judged environment's score hooks ask (an OpenAI-compatible base URL). */
  judgeUrl?: string;
  judgeModel?: string;
}

/** The judge of `--judge-url`: the Worker's, one call at a time, each with a minute. */
function cliJudge(baseUrl: string, model: string | undefined): Judge {
  const settings = {
    baseUrl,
    apiKey: process.env.JUDGE_API_KEY,
    model,
    timeoutMs: 60_000,
    maxAttempts: 3,
    slots: { hold: <T>(_deadlineAt: number, call: () => Promise<T>) => call() },
  };
  // One judge for the whole check: its deadline is far past any call's.
  return new HostJudge(settings, Number.POSITIVE_INFINITY);
}

/** The same checks, with every hook answered over HTTP (REMOTE_ENV_TOKEN as the bearer). */
async function remoteEnvironment(
  name: string | undefined,
  baseUrl: string,
): Promise<{ name: string; env: EnvironmentMultiTurn }> {
  const target = { name: name ?? baseUrl, baseUrl, token: process.env.REMOTE_ENV_TOKEN };
  const info = await remoteInfo(target, REMOTE_LIMITS.stepTimeoutMs).catch((error: Error) => {
    throw new CliError(`${baseUrl}/info: ${error.message}`);
  });
  // No episode id: the checks replay the same turns on purpose, so their calls carry no key.
  return {
    name: name ?? info.name,
    env: new RemoteEnvironment({ ...target, name: info.name }, REMOTE_LIMITS),
  };
}

/** Where the Worker serves an environment this checkout does not register, if it does. */
async function servedRemotely(name: string): Promise<string> {
  const url = process.env.EDGEROLL_URL ?? DEFAULT_URL;
  const local = `unknown environment "${name}" (registered here: ${environmentNames().join(", ")})`;
  try {
    const found = await (await apiClient({ url })).getEnvironment(name);
    if (found.base_url === null)
      throw new CliError(
        `${local}; the Worker at ${url} has it built in, but this checkout does not: is it another version?`,
      );
    return found.base_url;
  } catch (error) {
    if (error instanceof EdgerollConnectionError)
      throw new CliError(
        `${local}; nothing answered at ${url} to ask for its remote environments (start it with \`npm run dev\`, or set EDGEROLL_URL; \`--url <server>\` checks a remote environment directly)`,
      );
    if (error instanceof EdgerollError && error.status === 404)
      throw new CliError(`${local}; the Worker at ${url} says: ${error.apiMessage}`);
    throw error;
  }
}

export async function envCheck(
  name: string | undefined,
  options: EnvCheckOptions,
): Promise<boolean> {
  if (options.url !== undefined) {
    const remote = await remoteEnvironment(name, options.url);
    return checkWith(remote.name, remote.env, options, REMOTE_GOLD);
  }
  if (name === undefined) throw new CliError("name an environment, or pass --url");
  if (isRegisteredEnvironment(name)) return checkWith(name, loadEnvironment(name), options);
  const baseUrl = await servedRemotely(name);
  console.log(`edgeroll env check ${name}: a remote environment of the Worker, at ${baseUrl}`);
  const remote = await remoteEnvironment(name, baseUrl);
  return checkWith(name, remote.env, options, REMOTE_GOLD);
}

async function checkWith(
  name: string,
  env: EnvironmentMultiTurn,
  options: EnvCheckOptions,
  goldOnlyFromRows?: string,
): Promise<boolean> {
  const file = options.dataset ? resolve(options.dataset) : join(PROJECT_ROOT, paths.dataset(name));
  if (!existsSync(file)) throw new CliError(`no dataset at ${file}; pass --dataset <file.jsonl>`);
  const source = relative(process.cwd(), file);
  const { examples, problems } = parseDatasetJsonl(readFileSync(file, "utf8"), source);
  console.log(`edgeroll env check ${name}: ${examples.length} examples from ${source}`);
  const report = await checkEnvironment(env, examples, {
    promptText: options.promptText,
    datasetProblems: problems,
    ...(goldOnlyFromRows === undefined ? {} : { goldOnlyFromRows }),
    ...(options.judgeUrl === undefined
      ? {}
      : { judge: cliJudge(options.judgeUrl, options.judgeModel) }),
  });
  console.log(formatReport(name, report));
  return report.ok;
}
