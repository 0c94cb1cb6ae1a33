/** `edgeroll run`: one rollout group per dataset example, with progress, resumable. */
import { existsSync, readFileSync } from "node:fs";
import { basename, extname } from "node:path";
import type { EdgerollClient } from "../client/edgeroll-client";
import { parseDatasetJsonl } from "../sdk";
import { parseModel } from "../sim/directives";
import { PLAYERS } from "../sim/policies";
import { apiClient } from "./api-client";
import { checkDataset } from "./dataset-check";
import { JobProgressBar, summaryTable } from "./progress";
import { CliError } from "./project";
import { type Job, type JobProgress, meanReward, runJob } from "./run-job";

export interface RunFlags {
  env: string;
  dataset: string;
  groupSize: string;
  concurrency: string;
  url: string;
  token?: string;
  run?: string;
  promptText?: string;
  model: string;
  temperature: string;
  topP: string;
  /** Commander collects each `--stop`. */
  stop?: string[];
  maxCompletionTokens?: string;
  maxContextTokens?: string;
  seed?: string;
  /** Absent: the run's current version (POST /v1/runs/:id/policy), else 0. */
  policyVersion?: string;
  /** Keep at most this many of the run's groups in flight and landed but unleased. */
  maxAhead?: string;
  creditAssignment: string;
  advantage: string;
  tokens: string;
  generation: string;
  algorithm: string;
  teacher?: string;
  /** What becomes of episodes whose last action hit its token cap: keep, mask or filter. */
  overlong: string;
  /** `train`, or `eval` (needs --policy-version). */
  kind: string;
  /** Pins the environment's version: a 409 if it declares another. */
  envVersion?: string;
  limit?: string;
}

/** A flag that must be an integer in [min, max]; a CliError naming the flag otherwise. */
export function int(flag: string, value: string, min: number, max: number): number {
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

/**
 * A failure's detail as a person reads it: a host's JSON error body (`inference host answered
 * 404: {"error":{"message":...}}`) is shown by its message.
 */
export function readableDetail(detail: string): string {
  const found = /^(.*?answered \d+): (\{[\s\S]*\})\s*$/.exec(detail);
  if (!found) return detail;
  try {
    const body = JSON.parse(found[2] as string) as { error?: { message?: unknown } | string };
    const message = typeof body.error === "string" ? body.error : body.error?.message;
    return typeof message === "string" ? `${found[1]}: ${message}` : detail;
  } catch {
    return detail;
  }
}

/** What the summary table cannot say: why data may not reach a trainer, or score nothing. */
export function runNotes(progress: JobProgress, env: string, model: string): string[] {
  const notes: string[] = [];
  const reasons = Object.entries(progress.failureDetails);
  if (reasons.length > 0) {
    const all = progress.failedEpisodes === progress.episodes ? "Every episode failed. " : "";
    notes.push(
      `${all}What the failures said, one of each: ${reasons.map(([reason, detail]) => `${reason}: ${readableDetail(detail).slice(0, 400)}`).join("; ")}`,
    );
  }
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

function oneOf<T extends string>(flag: string, value: string, allowed: readonly T[]): T {
  if (!allowed.includes(value as T))
    throw new CliError(
      `--${flag} must be ${allowed.join(", ").replace(/, ([^,]+)$/, " or $1")}, got "${value}"`,
    );
  return value as T;
}

function number(flag: string, value: string, min: number, max: number): number {
  const n = Number(value);
  if (value.trim() === "" || !(n >= min && n <= max))
    throw new CliError(`--${flag} must be a number from ${min} to ${max}, got "${value}"`);
  return n;
}

function topP(value: string): number {
  const n = Number(value);
  if (value.trim() === "" || !(n > 0 && n <= 1))
    throw new CliError(`--top-p must be a number above 0 and at most 1, got "${value}"`);
  return n;
}

/** Every group field the API takes, from the flags (test/cli/run-flags.test.ts keeps them equal). */
export function groupRequest(flags: RunFlags): Job["request"] {
  const algorithm = oneOf("algorithm", flags.algorithm, ["grpo", "opd"] as const);
  if ((algorithm === "opd") !== (flags.teacher !== undefined))
    throw new CliError("--algorithm opd and --teacher <model> go together");
  if (flags.stop !== undefined && flags.stop.length > 8)
    throw new CliError(`--stop: at most 8 stop strings, got ${flags.stop.length}`);
  const kind = oneOf("kind", flags.kind, ["train", "eval"] as const);
  if (kind === "eval" && flags.policyVersion === undefined)
    throw new CliError("--kind eval measures one policy version: give --policy-version <n>");
  return {
    kind,
    ...(flags.promptText === undefined ? {} : { prompt_text: flags.promptText }),
    ...(flags.policyVersion === undefined
      ? {}
      : { policy_version: int("policy-version", flags.policyVersion, 0, 2 ** 31 - 1) }),
    credit_assignment: oneOf("credit-assignment", flags.creditAssignment, [
      "per_episode",
      "per_turn",
    ] as const),
    advantage: oneOf("advantage", flags.advantage, ["mean", "mean_std"] as const),
    tokens: oneOf("tokens", flags.tokens, ["auto", "required", "off"] as const),
    generation: oneOf("generation", flags.generation, ["chat", "tokens"] as const),
    algorithm,
    ...(flags.teacher === undefined ? {} : { teacher: { model: flags.teacher } }),
    ...(flags.envVersion === undefined ? {} : { env_version: flags.envVersion }),
    overlong: oneOf("overlong", flags.overlong, ["keep", "mask", "filter"] as const),
    ...(flags.maxContextTokens
      ? { max_context_tokens: int("max-context-tokens", flags.maxContextTokens, 64, 2_097_152) }
      : {}),
    sampling: {
      model: flags.model,
      temperature: number("temperature", flags.temperature, 0, 5),
      top_p: topP(flags.topP),
      ...(flags.stop === undefined ? {} : { stop: flags.stop }),
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
  };
}

/**
 * Starts one group per example of the dataset and waits for them all, showing progress and then
 * the summary; what `run` and `eval` share. `verb` names the job in what it prints.
 */
export async function runDataset(
  flags: RunFlags,
  verb: "run" | "eval",
): Promise<{ client: EdgerollClient; runId: string; progress: JobProgress }> {
  if (!existsSync(flags.dataset)) throw new CliError(`no dataset at ${flags.dataset}`);
  const request = groupRequest(flags);
  const groupSize = int("group-size", flags.groupSize, 1, 256);
  const concurrency = int("concurrency", flags.concurrency, 1, 1024);
  const maxAhead =
    flags.maxAhead === undefined ? undefined : int("max-ahead", flags.maxAhead, 1, 1_000_000);
  const parsed = parseDatasetJsonl(readFileSync(flags.dataset, "utf8"), flags.dataset);
  const limit =
    flags.limit === undefined ? parsed.examples.length : int("limit", flags.limit, 1, 1_000_000);
  const examples = parsed.examples.slice(0, limit);
  const runId = flags.run ?? defaultRunId(flags.env, flags.dataset);
  const client = await apiClient(flags);
  // The Worker knows its environments, remote ones included: it checks every row first.
  await checkDataset(client, {
    env: flags.env,
    source: flags.dataset,
    parsed,
    examples,
    promptText: flags.promptText ?? "",
  });
  const job: Job = {
    env: flags.env,
    examples,
    groupSize,
    runId,
    concurrency,
    ...(maxAhead === undefined ? {} : { maxAhead }),
    request,
  };
  const version = request.kind === "eval" ? ` at policy version ${request.policy_version}` : "";
  console.log(
    `${verb} ${runId}: ${job.examples.length} groups x ${job.groupSize} episodes of ${flags.env}${version} on ${flags.url}`,
  );
  const bar = new JobProgressBar(flags.env, job.examples.length);
  try {
    const { progress } = await runJob(client, job, (p) => bar.update(p));
    bar.stop();
    console.log(summaryTable(`${verb} ${runId}`, progress));
    for (const note of runNotes(progress, flags.env, flags.model)) console.log(note);
    return { client, runId, progress };
  } finally {
    bar.stop();
  }
}

export async function run(flags: RunFlags): Promise<void> {
  await runDataset(flags, "run");
}
