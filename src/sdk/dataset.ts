/**
 * Reads dataset JSONL into task examples, line by line; runtime-neutral (the caller reads the
 * file). `parseDatasetJsonl` reads a whole text (the CLI); `readDatasetLine` is the one rule a
 * line is held to, for readers that see a file a line at a time (an upload streamed into R2).
 */
import { describeZodError } from "./errors";
import { type TaskExample, TaskExampleSchema } from "./types";

export interface ParsedDataset {
  examples: TaskExample[];
  /** The line (from 1) each example came from, in the same order. */
  lines: number[];
  /** One line per unusable row, naming the line and the problem. */
  problems: string[];
}

/** Why one line is not an example; `id` when the row named one and that helps find it. */
export interface LineProblem {
  line: number;
  id?: string;
  message: string;
}

/** What one line of a dataset holds. */
export type DatasetLine =
  | { kind: "blank" }
  | { kind: "example"; example: TaskExample }
  | { kind: "problem"; problem: LineProblem };

/** `datasets/x.jsonl:3 (id "x-3"): input: Invalid input: ...`, as editors and compilers say it. */
export function describeLineProblem(source: string, problem: LineProblem): string {
  const named = problem.id === undefined ? "" : ` (id "${problem.id}")`;
  return `${source}:${problem.line}${named}: ${problem.message}`;
}

/**
 * One line (`line` counts from 1). A row without an `id` gets `line-<n>`, which stays stable as
 * long as the file does, so reruns of the same file find the same groups. `seen` holds the ids
 * of the lines before, so a duplicate is named where it repeats.
 */
export function readDatasetLine(text: string, line: number, seen: Set<string>): DatasetLine {
  if (text.trim() === "") return { kind: "blank" };
  let row: unknown;
  try {
    row = JSON.parse(text);
  } catch (error) {
    return {
      kind: "problem",
      problem: { line, message: `not valid JSON (${(error as Error).message})` },
    };
  }
  if (typeof row === "object" && row !== null && !("id" in row)) {
    row = { id: `line-${line}`, ...row };
  }
  const parsed = TaskExampleSchema.safeParse(row);
  if (!parsed.success) {
    const id = (row as { id?: unknown } | null)?.id;
    const message = describeZodError(parsed.error);
    return {
      kind: "problem",
      problem: typeof id === "string" ? { line, id, message } : { line, message },
    };
  }
  if (seen.has(parsed.data.id))
    return { kind: "problem", problem: { line, message: `duplicate id "${parsed.data.id}"` } };
  seen.add(parsed.data.id);
  return { kind: "example", example: parsed.data };
}

/** One example per non-blank line of `text`; every unusable line named in `problems`. */
export function parseDatasetJsonl(text: string, source = "dataset"): ParsedDataset {
  const examples: TaskExample[] = [];
  const lines: number[] = [];
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const [i, line] of text.split("\n").entries()) {
    const read = readDatasetLine(line, i + 1, seen);
    if (read.kind === "problem") problems.push(describeLineProblem(source, read.problem));
    else if (read.kind === "example") {
      examples.push(read.example);
      lines.push(i + 1);
    }
  }
  return { examples, lines, problems };
}
