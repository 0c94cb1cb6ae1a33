/**
 * `edgeroll dataset push | list`: datasets in the Worker's R2 bucket. A push checks the file here
 * first, line by line with the Worker's own checker, so a bad file is named before any byte is
 * sent; then it streams the file as it is, and prints what the Worker stored.
 */
import { createReadStream, existsSync, statSync } from "node:fs";
import { basename } from "node:path";
import { Readable } from "node:stream";
import type { DatasetView, PushedDataset } from "../client/edgeroll-client";
import {
  DatasetNameSchema,
  MAX_DATASET_BYTES,
  MAX_DATASET_EXAMPLES,
} from "../datasets/dataset-wire";
import { LineChecker } from "../datasets/line-checker";
import { describeLineProblem } from "../sdk";
import { type ApiFlags, apiClient } from "./api-client";
import { CliError } from "./project";
import { renderTable } from "./sql";

export interface PushFlags extends ApiFlags {
  name?: string;
  replace?: boolean;
}

/** `datasets/math-train.jsonl` is pushed as `math-train`. */
export function defaultDatasetName(file: string): string {
  return basename(file).replace(/\.(jsonl|ndjson)$/i, "");
}

/** Refuses the file as the Worker would, naming the first bad lines; nothing is sent. */
async function checkLocally(file: string): Promise<void> {
  const checker = new LineChecker();
  for await (const chunk of createReadStream(file)) {
    checker.push(chunk as Buffer);
    if (checker.settled) break;
  }
  if (!checker.settled) checker.end();
  if (checker.tooManyExamples)
    throw new CliError(
      `${file} has over ${MAX_DATASET_EXAMPLES} examples, the most one push may carry: split it`,
    );
  const problems = checker.problems.map((p) => describeLineProblem(file, p));
  if (problems.length > 0)
    throw new CliError(
      `${file} has ${checker.settled ? "at least these bad lines" : problems.length === 1 ? "1 bad line" : `${problems.length} bad lines`}, so nothing was pushed:\n  ${problems.join("\n  ")}`,
    );
  if (checker.examples === 0)
    throw new CliError(`${file} has no examples (every line is blank), so nothing was pushed`);
}

function pushedLines(pushed: PushedDataset): string[] {
  const what = {
    created: `pushed dataset "${pushed.name}"`,
    replaced: `replaced dataset "${pushed.name}"`,
    unchanged: `dataset "${pushed.name}" already holds these bytes (pushed ${pushed.uploaded_at}); nothing changed`,
  }[pushed.result];
  return [
    what,
    `  examples  ${pushed.examples}`,
    `  bytes     ${pushed.bytes}`,
    `  sha256    ${pushed.sha256}`,
  ];
}

export async function datasetPush(file: string, flags: PushFlags): Promise<void> {
  if (!existsSync(file) || !statSync(file).isFile()) throw new CliError(`no file ${file}`);
  const name = flags.name ?? defaultDatasetName(file);
  const named = DatasetNameSchema.safeParse(name);
  if (!named.success)
    throw new CliError(
      `"${name}" is not a dataset name: ${named.error.issues[0]?.message}; pass --name`,
    );
  const bytes = statSync(file).size;
  if (bytes > MAX_DATASET_BYTES)
    throw new CliError(
      `${file} is ${bytes} bytes, over ${MAX_DATASET_BYTES}, the most one push may carry: split it`,
    );
  await checkLocally(file);
  const api = await apiClient(flags);
  const stream = Readable.toWeb(createReadStream(file)) as ReadableStream<Uint8Array>;
  const pushed = await api.pushDataset(name, stream, { replace: flags.replace === true });
  for (const line of pushedLines(pushed)) console.log(line);
}

export async function datasetList(flags: ApiFlags & { json?: boolean }): Promise<void> {
  const datasets: DatasetView[] = await (await apiClient(flags)).listDatasets();
  if (flags.json) console.log(JSON.stringify(datasets, null, 2));
  else if (datasets.length === 0) console.log("no datasets yet: `edgeroll dataset push F.jsonl`");
  else console.log(renderTable(datasets.map((d) => ({ ...d }))));
}
