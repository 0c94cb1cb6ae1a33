/**
 * Each sampled turn's tokens as the host sent them, the prompt kept only as its tail after what
 * the previous turn left; the teacher's logprobs once distillation scored them; and why an
 * episode is not token-exact when it is not. Written in the transaction that records the turn's
 * action; the in-memory caches change only once it has committed.
 */
import { bytesOf } from "../../tokens/bytes";
import { type TokenMode, TokenModeSchema } from "../../tokens/token-mode";
import type { EpisodeTokens } from "../../tokens/token-object";
import {
  type HostTokens,
  joinedSequence,
  sequenceAfter,
  type TurnTokens,
  toTurnTokens,
} from "../../tokens/turn-tokens";
import { textOrNull } from "./columns";
import type { GroupDatabase } from "./database";

/**
 * A turn's arrays stay in its row up to this many bytes; larger ones (a 256k-token completion,
 * a huge first prompt) go in parts, since a Durable Object's SQLite row holds at most 2 MB.
 */
const INLINE_BYTES = 1_500_000;
const PART_BYTES = 1_000_000;

interface Cached {
  /** What the last recorded turn left: its prompt, then its completion. */
  sequence: Int32Array;
  turns: number;
}

const EMPTY = new Uint8Array(0);

export class TokensTable {
  private readonly cache = new Map<number, Cached>();
  private modes: Map<number, { mode: TokenMode; reason: string | null }> | null = null;
  /**
   * This instance created the group: an episode it has no cached sequence for has recorded no
   * turn yet, so there is nothing to read back (a restarted instance reads).
   */
  private fresh = false;
  /** Episodes whose cached sequence was dropped: read back if asked for again. */
  private readonly forgotten = new Set<number>();

  constructor(private readonly db: GroupDatabase) {
    db.onReset(() => {
      this.cache.clear();
      this.modes = null;
      this.fresh = false;
      this.forgotten.clear();
    });
    db.onCreate(() => {
      this.modes = new Map();
      this.fresh = true;
    });
  }

  /** Turns of one episode, or of all, in order. */
  private read(idx?: number): Map<number, TurnTokens[]> {
    const rows =
      idx === undefined
        ? this.db.exec("SELECT * FROM turn_tokens ORDER BY idx, turn")
        : this.db.exec("SELECT * FROM turn_tokens WHERE idx = ? ORDER BY turn", idx);
    const byEpisode = new Map<number, TurnTokens[]>();
    for (const r of rows) {
      const tail = Number(r.prompt_length) - Number(r.prefix_length);
      const completion = Number(r.completion_length);
      const [promptTail, completionIds, logprobs] =
        r.spilled === 1
          ? this.parts(Number(r.idx), Number(r.turn), tail, completion)
          : [
              new Int32Array(r.prompt_tail as ArrayBuffer),
              new Int32Array(r.completion as ArrayBuffer),
              new Float32Array(r.logprobs as ArrayBuffer),
            ];
      const turns = byEpisode.get(Number(r.idx)) ?? [];
      byEpisode.set(Number(r.idx), turns);
      turns.push({
        turn: Number(r.turn),
        promptLength: Number(r.prompt_length),
        prefixLength: Number(r.prefix_length),
        promptTail,
        completionIds,
        logprobs,
        consistent: r.consistent === 1,
        model: textOrNull(r.model),
        temperature: Number(r.temperature),
        topP: Number(r.top_p),
      });
    }
    const teacher =
      idx === undefined
        ? this.db.exec("SELECT * FROM teacher_logprobs")
        : this.db.exec("SELECT * FROM teacher_logprobs WHERE idx = ?", idx);
    for (const r of teacher) {
      const turn = byEpisode.get(Number(r.idx))?.find((t) => t.turn === Number(r.turn));
      if (turn !== undefined) turn.teacherLogprobs = new Float32Array(r.logprobs as ArrayBuffer);
    }
    return byEpisode;
  }

  /** An episode's recorded turns, in order (with the teacher's logprobs once scored). */
  turns(idx: number): TurnTokens[] {
    return this.read(idx).get(idx) ?? [];
  }

  /**
   * The teacher's logprobs of an episode's completion tokens, by turn. One row per turn (each
   * at most a completion's 1 MB), all in one transaction; a scoring interrupted before it
   * commits is done again whole.
   */
  recordTeacher(idx: number, byTurn: Map<number, Float32Array>): void {
    this.db.transaction(() => {
      for (const [turn, logprobs] of byTurn)
        this.db.exec(
          "INSERT OR REPLACE INTO teacher_logprobs (idx, turn, logprobs) VALUES (?, ?, ?)",
          idx,
          turn,
          bytesOf(logprobs),
        );
    });
  }

  /** Whether the teacher has scored every recorded turn of the episode. */
  teacherScored(idx: number): boolean {
    const scored = Number(
      this.db.exec("SELECT COUNT(*) AS n FROM teacher_logprobs WHERE idx = ?", idx).one().n,
    );
    const turns = Number(
      this.db.exec("SELECT COUNT(*) AS n FROM turn_tokens WHERE idx = ?", idx).one().n,
    );
    return turns > 0 && scored === turns;
  }

  /** A spilled turn's arrays, put back together from its parts. */
  private parts(idx: number, turn: number, tail: number, completion: number) {
    const bytes = new Uint8Array(4 * (tail + 2 * completion));
    let at = 0;
    for (const p of this.db.exec(
      "SELECT data FROM turn_token_parts WHERE idx = ? AND turn = ? ORDER BY part",
      idx,
      turn,
    )) {
      const data = new Uint8Array(p.data as ArrayBuffer);
      bytes.set(data, at);
      at += data.length;
    }
    const buffer = bytes.buffer;
    return [
      new Int32Array(buffer, 0, tail),
      new Int32Array(buffer, 4 * tail, completion),
      new Float32Array(buffer, 4 * (tail + completion), completion),
    ] as const;
  }

  /** What the episode's last recorded turn left; rebuilt from storage after a restart. */
  private cached(idx: number): Cached {
    let cached = this.cache.get(idx);
    if (cached === undefined) {
      let sequence: Int32Array = new Int32Array(0);
      const recorded = !this.fresh || this.forgotten.has(idx);
      const turns = recorded ? (this.read(idx).get(idx) ?? []) : [];
      for (const turn of turns) sequence = sequenceAfter(sequence, turn);
      cached = { sequence, turns: turns.length };
      this.cache.set(idx, cached);
    }
    return cached;
  }

  /** What the episode's last recorded turn left: its prompt, then its completion. */
  sequence(idx: number): Int32Array {
    return this.cached(idx).sequence;
  }

  /**
   * Writes a turn's tokens, inside the transaction that records the turn's action; the
   * episode's cached sequence moves on once it has committed.
   */
  record(
    idx: number,
    turn: number,
    host: HostTokens,
    sampling: { temperature: number; topP: number },
  ): void {
    const previous = this.cached(idx);
    if (turn !== previous.turns) {
      // Turns are recorded once each, in order: anything else would corrupt every later prefix.
      throw new Error(`episode ${idx}: turn ${turn} recorded after ${previous.turns} turns`);
    }
    const tokens = toTurnTokens(previous.sequence, host, turn, sampling);
    const arrays = [tokens.promptTail, tokens.completionIds, tokens.logprobs].map(bytesOf);
    const size = arrays.reduce((n, a) => n + a.length, 0);
    const spilled = size > INLINE_BYTES;
    this.db.exec(
      `INSERT INTO turn_tokens (idx, turn, prompt_length, prefix_length, completion_length,
         prompt_tail, completion, logprobs, spilled, consistent, model, temperature, top_p)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      idx,
      turn,
      tokens.promptLength,
      tokens.prefixLength,
      tokens.completionIds.length,
      spilled ? EMPTY : arrays[0],
      spilled ? EMPTY : arrays[1],
      spilled ? EMPTY : arrays[2],
      spilled ? 1 : 0,
      tokens.consistent ? 1 : 0,
      tokens.model,
      tokens.temperature,
      tokens.topP,
    );
    if (spilled) {
      const all = new Uint8Array(size);
      let at = 0;
      for (const a of arrays) {
        all.set(a, at);
        at += a.length;
      }
      for (let part = 0; part * PART_BYTES < size; part++) {
        this.db.exec(
          "INSERT INTO turn_token_parts (idx, turn, part, data) VALUES (?, ?, ?, ?)",
          idx,
          turn,
          part,
          all.subarray(part * PART_BYTES, (part + 1) * PART_BYTES),
        );
      }
    }
    this.db.afterCommit(() =>
      this.cache.set(idx, {
        // Equal to sequenceAfter(previous.sequence, tokens), which copies what this reuses.
        sequence: joinedSequence(host) ?? sequenceAfter(previous.sequence, tokens),
        turns: turn + 1,
      }),
    );
  }

  /** The episode can no longer make exact samples: records why, once, in the turn's write. */
  markInexact(idx: number, reason: string): void {
    if (this.mode(idx) === "none") return;
    this.db.exec(
      "INSERT OR REPLACE INTO token_modes (idx, mode, reason) VALUES (?, 'none', ?)",
      idx,
      reason,
    );
    this.db.afterCommit(() => this.modes?.set(idx, { mode: "none", reason }));
  }

  private modeRow(idx: number) {
    if (this.modes === null) {
      this.modes = new Map();
      for (const r of this.db.exec("SELECT idx, mode, reason FROM token_modes"))
        this.modes.set(Number(r.idx), {
          mode: TokenModeSchema.parse(r.mode),
          reason: textOrNull(r.reason),
        });
    }
    return this.modes.get(idx) ?? { mode: "exact" as const, reason: null };
  }

  mode(idx: number): TokenMode {
    return this.modeRow(idx).mode;
  }

  /** Why the episode is not token-exact; null when it is. */
  reason(idx: number): string | null {
    return this.modeRow(idx).reason;
  }

  /** An episode that ended needs no cached sequence any more. */
  forget(idx: number): void {
    this.cache.delete(idx);
    this.forgotten.add(idx);
  }

  /** Every episode's recorded turns, for the group's token object (exact episodes only). */
  episodes(groupSize: number): EpisodeTokens[] {
    const byEpisode = this.read();
    return Array.from({ length: groupSize }, (_, idx) => ({
      idx,
      turns: this.mode(idx) === "exact" ? (byEpisode.get(idx) ?? []) : [],
    }));
  }
}
