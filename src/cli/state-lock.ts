/**
 * One local stack per state directory. Two `wrangler dev`s on one directory would share D1 and
 * the objects' SQLite files behind each other's backs, so a stack claims its directory with a
 * file naming its process and URL, and a second one is refused with both. A claim whose
 * process is gone (killed, crashed) is stale and taken over.
 *
 * The claim is also noted by port in the checkout's stacks directory, so that a client pointed
 * at a local URL finds the state directory (and the tokens) of the stack serving it, and can
 * tell a stack that is still starting from no stack at all.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  LOCAL_STACKS_DIR,
  type LocalStackNote,
  processAlive,
  urlPort,
} from "../client/local-token";
import { CliError, PROJECT_ROOT } from "./project";

const LOCK_FILE = "edgeroll-stack.json";

export interface Claim {
  pid: number;
  api_url: string;
  started_at: string;
}

/** Where this checkout's running stacks note themselves, by port. */
export function stacksDir(): string {
  return join(PROJECT_ROOT, LOCAL_STACKS_DIR);
}

/** The live stack that holds `persistTo`, or null when it is free (or its holder is gone). */
export function stateDirHolder(persistTo: string): Claim | null {
  return currentClaim(join(persistTo, LOCK_FILE));
}

function currentClaim(file: string): Claim | null {
  if (!existsSync(file)) return null;
  try {
    const claim = JSON.parse(readFileSync(file, "utf8")) as Claim;
    return Number.isInteger(claim.pid) && processAlive(claim.pid) ? claim : null;
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
  const note = join(stacksDir(), `${urlPort(apiUrl)}.json`);
  const noted: LocalStackNote = { ...claim, state_dir: persistTo };
  mkdirSync(stacksDir(), { recursive: true });
  writeFileSync(note, `${JSON.stringify(noted)}\n`);
  return () => {
    for (const written of [file, note]) {
      try {
        const now = JSON.parse(readFileSync(written, "utf8")) as Claim;
        if (now.pid === claim.pid && now.started_at === claim.started_at) rmSync(written);
      } catch {
        // already gone
      }
    }
  };
}
