/** Reads dataset JSONL text into task examples; runtime-neutral (the caller reads the file). */
import { describeZodError } from "./errors";
import { type TaskExample, TaskExampleSchema } from "./types";

export interface ParsedDataset {
  examples: TaskExample[];
  /** The line (from 1) each example came from, in the same order. */
  lines: number[];
  /** One line per unusable row, naming the line and the problem. */
  problems: string[];
}

/**
 * One example per non-blank line. A row without an `id` gets `line-<n>`, which stays stable
 * as long as the file does, so reruns of the same file find the same groups.
 */
export function parseDatasetJsonl(text: string, source = "dataset"): ParsedDataset {
  const examples: TaskExample[] = [];
  const lines: number[] = [];
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const [i, line] of text.split("\n").entries()) {
    if (line.trim() === "") continue;
    const where = `${source}:${i + 1}`;
    let row: unknown;
    try {
      row = JSON.parse(line);
    } catch (error) {
      problems.push(`${where}: not valid JSON (${(error as Error).message})`);
      continue;
    }
    if (typeof row === "object" && row !== null && !("id" in row)) {
      row = { id: `line-${i + 1}`, ...row };
    }
    const parsed = TaskExampleSchema.safeParse(row);
    if (!parsed.success) {
      const id = (row as { id?: unknown } | null)?.id;
      const named = typeof id === "string" ? ` (id "${id}")` : "";
      problems.push(`${where}${named}: ${describeZodError(parsed.error)}`);
    } else if (seen.has(parsed.data.id)) {
      problems.push(`${where}: duplicate id "${parsed.data.id}"`);
    } else {
      seen.add(parsed.data.id);
      examples.push(parsed.data);
      lines.push(i + 1);
    }
  }
  return { examples, lines, problems };
}
