/**
 * Before `edgeroll run` starts anything: every row of its dataset read, and checked by the
 * Worker's own environment (POST /v1/environments/:name/validate, which asks what POST
 * /v1/groups would ask), so that one bad row is found before the first group starts, every bad
 * row is named by its line and id at once, and the answer does not depend on which start
 * happened to fail first. The environment may be built in or remote: the Worker knows.
 */
import pMap from "p-map";
import { type EdgerollClient, EdgerollError, type ExampleVerdict } from "../client/edgeroll-client";
import type { ParsedDataset, TaskExample } from "../sdk";
import { CliError } from "./project";

/** Rows per call: what POST /v1/environments/:name/validate takes at most. */
const CHUNK = 40;

export interface DatasetToCheck {
  env: string;
  /** The file as the user named it, for messages. */
  source: string;
  parsed: ParsedDataset;
  /** The examples the job will start (the first `--limit` of them). */
  examples: readonly TaskExample[];
  promptText: string;
}

/** `datasets/x.jsonl:3 (id "x-3"): example.metadata.secret: Too big: ...` */
function rejection(check: DatasetToCheck, verdict: ExampleVerdict, offset: number): string {
  const line = check.parsed.lines[offset + verdict.index];
  const id = verdict.id === null ? "" : ` (id "${verdict.id}")`;
  const why = verdict.message.replace(/^environment "[^"]+" rejected the example: /, "");
  return `${check.source}:${line}${id}: ${why}`;
}

/** Resolves when every row can be played; otherwise throws, naming each row that cannot. */
export async function checkDataset(client: EdgerollClient, check: DatasetToCheck): Promise<void> {
  const chunks = Array.from({ length: Math.ceil(check.examples.length / CHUNK) }, (_, i) =>
    check.examples.slice(i * CHUNK, (i + 1) * CHUNK),
  );
  let answers: ExampleVerdict[][];
  try {
    answers = await pMap(
      chunks,
      async (chunk) => (await client.validateExamples(check.env, chunk, check.promptText)).rejected,
      { concurrency: 4 },
    );
  } catch (error) {
    // The API's message names the environments it has.
    if (error instanceof EdgerollError && error.status === 404 && error.code === "not_found")
      throw new CliError(`${error.apiMessage}; nothing was started`);
    throw error;
  }
  // In file order, rows that are not examples and rows the environment refused alike.
  const lineOf = (problem: string) =>
    Number(/^.*?:(\d+)/.exec(problem.slice(check.source.length))?.[1] ?? 0);
  const problems = [
    ...check.parsed.problems,
    ...answers.flatMap((rejected, i) => rejected.map((v) => rejection(check, v, i * CHUNK))),
  ].sort((a, b) => lineOf(a) - lineOf(b));
  if (problems.length === 0) return;
  const rows = problems.length === 1 ? "1 row" : `${problems.length} rows`;
  throw new CliError(
    `${check.source}: ${rows} that ${check.env} cannot play, so nothing was started:\n  ${problems.join("\n  ")}\nFix or remove ${problems.length === 1 ? "it" : "them"}, then run again.`,
  );
}
