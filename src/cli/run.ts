/** `edgeroll run`: one rollout group per dataset example, with progress, resumable. */
import { existsSync, readFileSync } from "node:fs";
import { basename, extname } from "node:path";
import { EdgerollClient } from "../client/edgeroll-client";
import { isRegisteredEnvironment } from "../environments/registry";
import { parseDatasetJsonl } from "../sdk";
import { JobProgressBar, summaryTable } from "./progress";
import { CliError } from "./project";
import { runJob } from "./run-job";

export interface RunFlags {
  env: string;
  dataset: string;
  groupSize: string;
  concurrency: string;
  url: string;
  token?: string;
  run?: string;
  model: string;
  temperature: string;
  maxCompletionTokens?: string;
  maxContextTokens?: string;
  seed?: string;
  policyVersion: string;
  creditAssignment: string;
  limit?: string;
}

function int(flag: string, value: string, min: number, max: number): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max)
    throw new CliError(`--${flag} must be an integer from ${min} to ${max}, got "${value}"`);
  return n;
}

export async function run(flags: RunFlags): Promise<void> {
  if (!isRegisteredEnvironment(flags.env)) throw new CliError(`unknown environment "${flags.env}"`);
  if (!existsSync(flags.dataset)) throw new CliError(`no dataset at ${flags.dataset}`);
  const { examples, problems } = parseDatasetJsonl(
    readFileSync(flags.dataset, "utf8"),
    flags.dataset,
  );
  if (problems.length > 0)
    throw new CliError(`the dataset has bad rows:\n  ${problems.join("\n  ")}`);
  const limit =
    flags.limit === undefined ? examples.length : int("limit", flags.limit, 1, 1_000_000);
  const temperature = Number(flags.temperature);
  if (!(temperature >= 0))
    throw new CliError(`--temperature must be a number >= 0, got "${flags.temperature}"`);
  if (flags.creditAssignment !== "per_episode" && flags.creditAssignment !== "per_turn") {
    throw new CliError(`--credit-assignment must be per_episode or per_turn`);
  }
  const runId = flags.run ?? `${flags.env}-${basename(flags.dataset, extname(flags.dataset))}`;
  const client = new EdgerollClient({
    baseUrl: flags.url,
    ...(flags.token ? { token: flags.token } : {}),
  });
  const job = {
    env: flags.env,
    examples: examples.slice(0, limit),
    groupSize: int("group-size", flags.groupSize, 1, 256),
    runId,
    concurrency: int("concurrency", flags.concurrency, 1, 1024),
    request: {
      policy_version: int("policy-version", flags.policyVersion, 0, 2 ** 31 - 1),
      credit_assignment: flags.creditAssignment as "per_episode" | "per_turn",
      ...(flags.maxContextTokens
        ? { max_context_tokens: int("max-context-tokens", flags.maxContextTokens, 64, 2_097_152) }
        : {}),
      sampling: {
        model: flags.model,
        temperature,
        ...(flags.maxCompletionTokens
          ? {
              max_completion_tokens: int(
                "max-completion-tokens",
                flags.maxCompletionTokens,
                1,
                262_144,
              ),
            }
          : {}),
        ...(flags.seed ? { seed: int("seed", flags.seed, 0, 2 ** 31 - 1) } : {}),
      },
    },
  };
  console.log(
    `run ${runId}: ${job.examples.length} groups x ${job.groupSize} episodes of ${flags.env} on ${flags.url}`,
  );
  const bar = new JobProgressBar(flags.env, job.examples.length);
  try {
    const { progress } = await runJob(client, job, (p) => bar.update(p));
    bar.stop();
    console.log(summaryTable(`run ${runId}`, progress));
  } finally {
    bar.stop();
  }
}
