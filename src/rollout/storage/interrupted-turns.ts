/**
 * What interrupting pauses kept of a token-in turn (`generation: "tokens"`): the prompt ids the
 * turn was sent with and every completion token it had received (ids and logprobs), with the
 * version that sampled each stretch. Written in the transaction that puts the generation back
 * in the queue, so a restart continues from exactly the tokens kept; once the continued turn is
 * recorded, its arrays are cleared in that turn's transaction and only its history stays (how
 * many tokens were kept, sampled by which versions) for the landing.
 */
import { bytesOf } from "../../tokens/bytes";
import type { VersionSegment } from "../../tokens/turn-tokens";
import type { GroupDatabase } from "./database";

/** An interrupted turn's kept tokens, waiting for their continuation. */
export interface KeptTurn {
  turn: number;
  /** The prompt the turn was first sent with, whole. */
  prompt: Int32Array;
  completionIds: Int32Array;
  logprobs: Float32Array;
  /** The text the kept tokens streamed as. */
  content: string;
  /** Which version sampled which of `completionIds`, in order. */
  versions: VersionSegment[];
}

/** What the landing reads of a continued turn: how many tokens were kept, sampled by which. */
export interface ContinuedTurn {
  kept: number;
  versions: VersionSegment[];
}

/** Beyond this the kept arrays would not fit one row (2 MB): the turn restarts instead. */
export const MAX_KEPT_BYTES = 1_500_000;

const EMPTY = new Uint8Array(0);

function joined<T extends Int32Array | Float32Array>(
  a: T,
  b: ArrayLike<number>,
  make: (n: number) => T,
): T {
  const out = make(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

export class InterruptedTurnsTable {
  /** Each episode's turn waiting for its continuation; read once per instance. */
  private open: Map<number, KeptTurn> | null = null;
  /** This instance created the group and kept nothing since: the table is empty, unread. */
  private empty = false;

  constructor(private readonly db: GroupDatabase) {
    db.onReset(() => {
      this.open = null;
      this.empty = false;
    });
    db.onCreate(() => {
      this.open = new Map();
      this.empty = true;
    });
  }

  private waiting(): Map<number, KeptTurn> {
    if (this.open === null) {
      this.open = new Map();
      for (const r of this.db.exec("SELECT * FROM interrupted_turns WHERE open = 1"))
        this.open.set(Number(r.idx), {
          turn: Number(r.turn),
          prompt: new Int32Array(r.prompt as ArrayBuffer),
          completionIds: new Int32Array(r.completion as ArrayBuffer),
          logprobs: new Float32Array(r.logprobs as ArrayBuffer),
          content: String(r.content),
          versions: JSON.parse(String(r.versions)) as VersionSegment[],
        });
    }
    return this.open;
  }

  /** The tokens kept of the episode's turn `turn`, if an interrupt cut it; null if none. */
  kept(idx: number, turn: number): KeptTurn | null {
    const open = this.waiting().get(idx);
    return open?.turn === turn ? open : null;
  }

  /**
   * Keeps what an interrupted generation of turn `turn` had received, after what earlier
   * interrupts of the same turn kept; false (nothing written) when it would not fit a row.
   */
  keep(
    idx: number,
    turn: number,
    prompt: Int32Array,
    received: { ids: readonly number[]; logprobs: readonly number[]; content: string },
    version: number,
  ): boolean {
    const before = this.kept(idx, turn);
    const completionIds = joined(
      before?.completionIds ?? new Int32Array(0),
      received.ids,
      (n) => new Int32Array(n),
    );
    const logprobs = joined(
      before?.logprobs ?? new Float32Array(0),
      received.logprobs,
      (n) => new Float32Array(n),
    );
    const original = before?.prompt ?? prompt;
    if (4 * (original.length + 2 * completionIds.length) > MAX_KEPT_BYTES) return false;
    const at = before?.completionIds.length ?? 0;
    const versions = [...(before?.versions ?? [])];
    if (received.ids.length > 0 && versions.at(-1)?.version !== version)
      versions.push({ at, version });
    const kept: KeptTurn = {
      turn,
      prompt: original,
      completionIds,
      logprobs,
      content: (before?.content ?? "") + received.content,
      versions,
    };
    this.db.exec(
      `INSERT OR REPLACE INTO interrupted_turns
         (idx, turn, open, prompt, completion, logprobs, content, versions, kept)
       VALUES (?, ?, 1, ?, ?, ?, ?, ?, ?)`,
      idx,
      turn,
      bytesOf(kept.prompt),
      bytesOf(completionIds),
      bytesOf(logprobs),
      kept.content,
      JSON.stringify(versions),
      completionIds.length,
    );
    this.db.afterCommit(() => {
      this.waiting().set(idx, kept);
      this.empty = false;
    });
    return true;
  }

  /**
   * The continued turn was recorded (inside its transaction): its arrays go, its history stays.
   */
  continued(idx: number, turn: number): void {
    if (this.kept(idx, turn) === null) return;
    this.db.exec(
      `UPDATE interrupted_turns SET open = 0, prompt = ?, completion = ?, logprobs = ?, content = ''
       WHERE idx = ? AND turn = ?`,
      EMPTY,
      EMPTY,
      EMPTY,
      idx,
      turn,
    );
    this.db.afterCommit(() => this.waiting().delete(idx));
  }

  /**
   * The episode ended before its interrupted turn was continued: the kept tokens are dropped,
   * and their count returned (0 when there were none).
   */
  drop(idx: number): number {
    const open = this.waiting().get(idx);
    if (open === undefined) return 0;
    this.db.exec("DELETE FROM interrupted_turns WHERE idx = ? AND open = 1", idx);
    this.db.afterCommit(() => this.waiting().delete(idx));
    return open.completionIds.length;
  }

  /** Every episode's continued turns by turn, for the landing. */
  history(): Map<number, Map<number, ContinuedTurn>> {
    const byEpisode = new Map<number, Map<number, ContinuedTurn>>();
    if (this.empty) return byEpisode;
    for (const r of this.db.exec(
      "SELECT idx, turn, versions, kept FROM interrupted_turns WHERE open = 0",
    )) {
      const idx = Number(r.idx);
      const turns = byEpisode.get(idx) ?? new Map<number, ContinuedTurn>();
      turns.set(Number(r.turn), {
        kept: Number(r.kept),
        versions: JSON.parse(String(r.versions)) as VersionSegment[],
      });
      byEpisode.set(idx, turns);
    }
    return byEpisode;
  }
}
