/** `edgeroll sql`: runs SQL on the episode logs through `wrangler d1 execute`, printed as a table. */
import { spawnSync } from "node:child_process";
import Table from "cli-table3";
import { wranglerCommand } from "./local-stack";
import { COMPACT } from "./progress";
import { CliError, PROJECT_ROOT } from "./project";

export interface SqlFlags {
  remote?: boolean;
  json?: boolean;
  persistTo?: string;
}

type Row = Record<string, unknown>;

export function renderTable(rows: readonly Row[]): string {
  if (rows.length === 0) return "(no rows)";
  const head = Object.keys(rows[0] as Row);
  const table = new Table({ head, style: { head: [], border: [] }, chars: COMPACT });
  for (const row of rows) {
    table.push(
      head.map((k) => {
        const v = row[k];
        return v === null || v === undefined
          ? ""
          : typeof v === "object"
            ? JSON.stringify(v)
            : String(v);
      }),
    );
  }
  return `${table.toString()}\n${rows.length} row${rows.length === 1 ? "" : "s"}`;
}

/** Runs `query` (one statement or several); the rows of all of them, in order. */
export function runSql(query: string, flags: SqlFlags): Row[] {
  return runStatements(query, flags).flat();
}

/**
 * Runs `query`'s statements in one `wrangler d1 execute` (a start of wrangler each costs about
 * two seconds); each statement's rows, in order.
 */
export function runStatements(query: string, flags: SqlFlags): Row[][] {
  const where = flags.remote
    ? ["--remote"]
    : ["--local", ...(flags.persistTo ? ["--persist-to", flags.persistTo] : [])];
  const [command, args] = wranglerCommand(
    "d1",
    "execute",
    "edgeroll",
    ...where,
    "--json",
    "--command",
    query,
  );
  const result = spawnSync(command, args, {
    cwd: PROJECT_ROOT,
    encoding: "utf8",
    maxBuffer: 256 * 1024 * 1024,
  });
  let parsed: unknown;
  try {
    parsed = JSON.parse(result.stdout);
  } catch {
    throw new CliError(`wrangler d1 execute failed:\n${(result.stderr || result.stdout).trim()}`);
  }
  if (result.status !== 0 || !Array.isArray(parsed)) {
    const error = (parsed as { error?: { text?: string } }).error?.text;
    throw new CliError(`query failed: ${error ?? result.stderr.trim()}`);
  }
  return parsed.map((statement: { results?: Row[] }) => statement.results ?? []);
}

export function sql(query: string, flags: SqlFlags): void {
  const rows = runSql(query, flags);
  console.log(flags.json ? JSON.stringify(rows, null, 2) : renderTable(rows));
}
