/**
 * Group commit for landings. Finished groups hand their rows to this object, which writes
 * whatever has arrived meanwhile to D1 in one transaction and answers each group only after D1
 * has committed it — so a group still keeps its transcripts until D1 confirmed the landing. D1
 * pays a round trip per batch however small it is; coalescing concurrent landings is what lets
 * many groups land per second. Nothing is stored here: a lander that restarts loses only calls
 * in progress, and their groups retry.
 */
import { DurableObject } from "cloudflare:workers";
import { errorMessage } from "../sdk";
import {
  commitGroup,
  type LanderApi,
  type LandingOutcome,
  type LandingPayload,
  landingStatements,
  payloadChars,
} from "./landing";

interface Pending {
  payload: LandingPayload;
  /** Set once the rows are written (or refused). */
  outcome: LandingOutcome | null;
  /** Wakes the caller: its rows were written, or it is its turn to write a batch. */
  wake: () => void;
  woken: Promise<void>;
}

/**
 * Groups per transaction: enough to amortise D1's round trip. 96 landed about a fifth more
 * groups per second than 32 in the local bench (docs/benchmarks.md).
 */
export const GROUPS_PER_COMMIT = 96;
/**
 * Rows per transaction, in characters. Locally D1 runs in workerd's process, and its memory
 * grew with the size of the transactions it was sent: with 128 groups of 8 twelve-turn episodes
 * (about 65,000 characters of rows each) landing at once, peak RSS was about 20 MB lower at
 * 500,000 than at 8 million; the landing bench's groups (about 22,000 characters) go 22 to a
 * transaction, at about a twentieth fewer groups per second. Measurements: docs/architecture.md.
 */
export const CHARS_PER_COMMIT = 500_000;

/**
 * How many of the waiting groups (their rows' sizes, in order) the next transaction takes: up
 * to GROUPS_PER_COMMIT while their rows fit CHARS_PER_COMMIT, and always the first.
 */
export function groupsForCommit(sizes: readonly number[]): number {
  let chars = 0;
  let taken = 0;
  for (const size of sizes.slice(0, GROUPS_PER_COMMIT)) {
    chars += size;
    if (taken > 0 && chars > CHARS_PER_COMMIT) break;
    taken++;
  }
  return taken;
}

export class Lander extends DurableObject<Env> implements LanderApi {
  private readonly queue: Pending[] = [];
  private writing = false;

  /** Lands one group's rows, together with whichever others are waiting. */
  async land(payload: LandingPayload): Promise<LandingOutcome> {
    let wake = () => {};
    const woken = new Promise<void>((resolve) => {
      wake = resolve;
    });
    const pending: Pending = { payload, outcome: null, wake, woken };
    this.queue.push(pending);
    if (this.writing) await pending.woken;
    // Each call writes at most one batch, so no call runs into D1's per-invocation query limit.
    if (pending.outcome === null) await this.writeBatch();
    return pending.outcome ?? { ok: false, error: "landing did not happen" };
  }

  private async writeBatch(): Promise<void> {
    this.writing = true;
    const waiting = this.queue.slice(0, GROUPS_PER_COMMIT);
    const take = groupsForCommit(waiting.map((p) => payloadChars(p.payload)));
    const batch = this.queue.splice(0, take);
    const statements = landingStatements(
      this.env.DB,
      batch.map((p) => p.payload),
    );
    try {
      await commitGroup(this.env.DB, statements);
      for (const p of batch) p.outcome = { ok: true };
    } catch {
      // One bad group must not sink the others: write each alone to find it.
      for (const p of batch) {
        try {
          await commitGroup(this.env.DB, landingStatements(this.env.DB, [p.payload]));
          p.outcome = { ok: true };
        } catch (error) {
          p.outcome = { ok: false, error: errorMessage(error) };
        }
      }
    } finally {
      for (const p of batch) p.wake();
      this.writing = false;
      // The next waiting call writes the next batch, in its own invocation.
      const next = this.queue[0];
      if (next) {
        this.writing = true;
        next.wake();
      }
    }
  }
}
