/**
 * One local stack per state directory. Two `wrangler dev`s on one directory would share D1 and
 * the objects' SQLite files behind each other's backs, so a stack claims its directory with a
 * file naming its process and URL, and a second one is refused with both. A claim whose
 * process is gone (killed, crashed) is stale and taken over.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CliError } from "./project";

const LOCK_FILE = "edgeroll-stack.json";

export interface Claim {
  pid: number;
  api_url: string;
  started_at: string;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but is not ours.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** The live stack that holds `persistTo`, or null when it is free (or its holder is gone). */
export function stateDirHolder(persistTo: string): Claim | null {
  return currentClaim(join(persistTo, LOCK_FILE));
}

function currentClaim(file: string): Claim | null {
  if (!existsSync(file)) return null;
  try {
    const claim = JSON.parse(readFileSync(file, "utf8")) as Claim;
    return Number.isInteger(claim.pid) && alive(claim.pid) ? claim : null;
  } catch {
    return null; // half-written by a process that died: stale
  }
}

/** Claims `persistTo` for a stack serving `apiUrl`; returns the release. */
export function claimStateDir(persistTo: string, apiUrl: string): () => void {
  const file = join(persistTo, LOCK_FILE);
  const other = currentClaim(file);
  if (other !== null) {
    throw new CliError(
      `the state directory ${persistTo} is in use by another edgeroll stack (process ${other.pid}, serving ${other.api_url} since ${other.started_at}): use that one, stop it, or give this one its own state with --persist-to <dir>`,
    );
  }
  mkdirSync(persistTo, { recursive: true });
  const claim: Claim = { pid: process.pid, api_url: apiUrl, started_at: new Date().toISOString() };
  writeFileSync(file, `${JSON.stringify(claim)}\n`);
  return () => {
    try {
      const now = JSON.parse(readFileSync(file, "utf8")) as Claim;
      if (now.pid === claim.pid && now.started_at === claim.started_at) rmSync(file);
    } catch {
      // already gone
    }
  };
}
