/** `edgeroll run`: one rollout group per dataset example, with progress, resumable. */
import { existsSync, readFileSync } from "node:fs";
import { basename, extname } from "node:path";
import { isRegisteredEnvironment } from "../environments/registry";
import { parseDatasetJsonl } from "../sdk";
import { parseModel } from "../sim/directives";
import { PLAYERS } from "../sim/policies";
import { apiClient } from "./api-client";
import { JobProgressBar, summaryTable } from "./progress";
import { CliError } from "./project";
import { type JobProgress, meanReward, runJob } from "./run-job";

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
  /** Absent: the run's current version (POST /v1/runs/:id/policy), else 0. */
  policyVersion?: string;
  /** Keep at most this many of the run's groups in flight and landed but unleased. */
  maxAhead?: string;
  creditAssignment: string;
  tokens: string;
  generation: string;
  algorithm: string;
  teacher?: string;
  limit?: string;
}

function int(flag: string, value: string, min: number, max: number): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max)
    throw new CliError(`--${flag} must be an integer from ${min} to ${max}, got "${value}"`);
  return n;
}

/** The dataset's name, prefixed with the environment's unless it already starts with it. */
export function defaultRunId(env: string, dataset: string): string {
  const name = basename(dataset, extname(dataset));
  return name.startsWith(env) ? name : `${env}-${name}`;
}

/** What the summary table cannot say: why data may not reach a trainer, or score nothing. */
export function runNotes(progress: JobProgress, env: string, model: string): string[] {
  const notes: string[] = [];
  const landed = progress.done - progress.failedGroups;
  if (progress.uniformGroups > 0) {
    notes.push(
      `${progress.uniformGroups} of ${landed} landed groups are uniform (every episode scored the same): they carry no GRPO signal, so trainer leases skip them by default (skip_uniform_groups; \`edgeroll pull --include-uniform\` takes them).`,
    );
  }
  const simulated = parseModel(model).name === "sim";
  const reward = meanReward(progress);
  if (simulated && !PLAYERS.some((p) => p.env === env) && (reward === null || reward === 0)) {
    notes.push(
      `The model is edgeroll's simulator, which plays only ${PLAYERS.map((p) => p.env).join(", ")} and environments whose prompts look like theirs; to other tasks it answers that it has no player. Teach it ${env} (README, "Simulating your own environment") or run against a real model: \`npm run dev -- --inference-url <url>\` and --model <name>.`,
    );
  }
  return notes;
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
  if (!["auto", "required", "off"].includes(flags.tokens))
    throw new CliError(`--tokens must be auto, required or off, got "${flags.tokens}"`);
  if (flags.generation !== "chat" && flags.generation !== "tokens")
    throw new CliError(`--generation must be chat or tokens, got "${flags.generation}"`);
  if (flags.algorithm !== "grpo" && flags.algorithm !== "opd")
    throw new CliError(`--algorithm must be grpo or opd, got "${flags.algorithm}"`);
  if ((flags.algorithm === "opd") !== (flags.teacher !== undefined))
    throw new CliError("--algorithm opd and --teacher <model> go together");
  const runId = flags.run ?? defaultRunId(flags.env, flags.dataset);
  const client = apiClient(flags);
  const job = {
    env: flags.env,
    examples: examples.slice(0, limit),
    groupSize: int("group-size", flags.groupSize, 1, 256),
    runId,
    concurrency: int("concurrency", flags.concurrency, 1, 1024),
    ...(flags.maxAhead === undefined
      ? {}
      : { maxAhead: int("max-ahead", flags.maxAhead, 1, 1_000_000) }),
    request: {
      ...(flags.policyVersion === undefined
        ? {}
        : { policy_version: int("policy-version", flags.policyVersion, 0, 2 ** 31 - 1) }),
      credit_assignment: flags.creditAssignment as "per_episode" | "per_turn",
      tokens: flags.tokens as "auto" | "required" | "off",
      generation: flags.generation as "chat" | "tokens",
      algorithm: flags.algorithm as "grpo" | "opd",
      ...(flags.teacher === undefined ? {} : { teacher: { model: flags.teacher } }),
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
    for (const note of runNotes(progress, flags.env, flags.model)) console.log(note);
  } finally {
    bar.stop();
  }
}
