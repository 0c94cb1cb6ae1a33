/**
 * `edgeroll run --server`: the run produces itself on the Worker. The dataset is checked with
 * the Worker row by row, uploaded (`POST /v1/datasets/:name`), and handed to the run's producer
 * (`POST /v1/runs/:id/producer`); the command then follows the producer until it is done. Closing
 * it stops nothing: the producer goes on, and `edgeroll run --server` with the same flags follows
 * it again.
 */
import { existsSync, readFileSync } from "node:fs";
import { basename, extname } from "node:path";
import Table from "cli-table3";
import type { ProducerInput, ProducerView } from "../client/edgeroll-client";
import { parseDatasetJsonl } from "../sdk";
import { apiClient } from "./api-client";
import { checkDataset } from "./dataset-check";
import { COMPACT } from "./progress";
import { CliError } from "./project";
import { defaultRunId, groupRequest, int, type RunFlags } from "./run";

export interface ServerRunFlags extends RunFlags {
  epochs: string;
  shuffleSeed?: string;
  maxResamples?: string;
  sampler: string;
  skipSolvedAfter?: string;
  skipUnsolvedAfter?: string;
  retryAfter?: string;
  datasetName?: string;
}

const optionalInt = (flag: string, value: string | undefined, min: number, max: number) =>
  value === undefined ? undefined : int(flag, value, min, max);

/** The producer's request from the flags: its own fields and the groups'. */
export function producerRequest(flags: ServerRunFlags, dataset: string): ProducerInput {
  if (flags.limit !== undefined)
    throw new CliError("--limit does not go with --server: the producer covers the whole dataset");
  if (flags.sampler !== "uniform" && flags.sampler !== "pool")
    throw new CliError(`--sampler must be uniform or pool, got "${flags.sampler}"`);
  const pool = {
    skip_solved_after: optionalInt("skip-solved-after", flags.skipSolvedAfter, 1, 1000),
    skip_unsolved_after: optionalInt("skip-unsolved-after", flags.skipUnsolvedAfter, 1, 1000),
    retry_after: optionalInt("retry-after", flags.retryAfter, 1, 1000),
  };
  const given = Object.fromEntries(Object.entries(pool).filter(([, v]) => v !== undefined));
  if (
    flags.sampler === "pool" &&
    given.skip_solved_after === undefined &&
    given.skip_unsolved_after === undefined
  )
    throw new CliError(
      "--sampler pool skips by --skip-solved-after n, --skip-unsolved-after m, or both",
    );
  if (flags.sampler !== "pool" && Object.keys(given).length > 0)
    throw new CliError(
      "--skip-solved-after, --skip-unsolved-after and --retry-after go with --sampler pool",
    );
  const maxResamples = optionalInt("max-resamples", flags.maxResamples, 0, 64);
  const shuffleSeed = optionalInt("shuffle-seed", flags.shuffleSeed, 0, 2 ** 31 - 1);
  const maxAhead = optionalInt("max-ahead", flags.maxAhead, 1, 1_000_000);
  return {
    ...groupRequest(flags),
    env: flags.env,
    dataset,
    group_size: int("group-size", flags.groupSize, 1, 256),
    epochs: int("epochs", flags.epochs, 1, 1000),
    max_in_flight: int("concurrency", flags.concurrency, 1, 1024),
    ...(shuffleSeed === undefined ? {} : { shuffle_seed: shuffleSeed }),
    ...(maxAhead === undefined ? {} : { max_ahead: maxAhead }),
    ...(maxResamples === undefined ? {} : { dynamic_sampling: { max_resamples: maxResamples } }),
    ...(flags.sampler === "pool" ? { sampler: "pool" as const, pool: given } : {}),
  };
}

/** What the producer did, as a table: examples per epoch, groups, resamples, skips. */
export function producerTable(view: ProducerView): string {
  const table = new Table({
    head: ["epoch", "examples done", "with signal", "of"],
    style: { head: [], border: [] },
    chars: COMPACT,
  });
  for (const e of view.epochs)
    table.push([e.epoch, e.examples_done, e.examples_with_signal, e.examples]);
  const lines = [
    table.toString(),
    `groups: ${view.groups_landed} landed (${view.groups_uniform} uniform), ${view.groups_failed} failed, ${view.groups_in_flight} in flight; ${view.resampled} resampled, ${view.skipped} skipped, ${view.rejected} refused`,
  ];
  for (const r of view.rejections)
    lines.push(`refused ${r.example_id} (epoch ${r.epoch}): ${r.message}`);
  return lines.join("\n");
}

const progressLine = (view: ProducerView) => {
  const done = view.epochs.reduce((n, e) => n + e.examples_done, 0);
  const of = view.examples * view.epochs.length;
  return `${done}/${of} example-epochs, ${view.groups_in_flight} groups in flight, ${view.groups_landed} landed, ${view.resampled} resampled, ${view.skipped} skipped`;
};

export async function runOnServer(flags: ServerRunFlags): Promise<void> {
  if (!existsSync(flags.dataset)) throw new CliError(`no dataset at ${flags.dataset}`);
  const text = readFileSync(flags.dataset, "utf8");
  const name = flags.datasetName ?? basename(flags.dataset, extname(flags.dataset));
  const runId = flags.run ?? defaultRunId(flags.env, flags.dataset);
  const request = producerRequest(flags, name);
  const client = await apiClient(flags);
  const parsed = parseDatasetJsonl(text, flags.dataset);
  await checkDataset(client, {
    env: flags.env,
    source: flags.dataset,
    parsed,
    examples: parsed.examples,
    promptText: flags.promptText ?? "",
  });
  const pushed = await client.pushDataset(name, text);
  console.log(
    `dataset ${pushed.name}: ${pushed.examples} examples, sha256 ${pushed.sha256.slice(0, 12)}`,
  );
  const started = await client.startProducer(runId, request);
  console.log(
    `run ${runId} produces itself on ${flags.url}: ${started.examples} examples x ${started.epochs.length} epochs, groups of ${request.group_size} of ${flags.env} (version ${started.env_version}); closing this stops nothing`,
  );
  let last = "";
  const view = await client.waitForProducer(runId, {
    intervalMs: 1000,
    timeoutMs: Number.POSITIVE_INFINITY,
    onProgress: (v) => {
      const line = progressLine(v);
      if (line !== last) console.log(line);
      last = line;
    },
  });
  console.log(producerTable(view));
  if (view.state === "stopped")
    throw new CliError(`run ${runId}'s producer stopped: ${view.reason}`);
}
