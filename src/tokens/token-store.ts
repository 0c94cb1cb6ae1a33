/**
 * A group object's token storage, beside its transcripts (same SQLite, tables of their own):
 * each sampled turn's tokens as the host sent them, the prompt kept only as its tail after
 * what the previous turn left, and each episode's token mode. Written in the same transaction
 * as the turn's action (GroupStore.recordAction's `alongside`), so a restart never finds an
 * action without its tokens.
 */
import type { EpisodeTokens } from "./token-object";
import { type HostTokens, sequenceAfter, type TurnTokens, toTurnTokens } from "./turn-tokens";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS turn_tokens (
  idx INTEGER NOT NULL,
  turn INTEGER NOT NULL,
  prompt_length INTEGER NOT NULL,
  prefix_length INTEGER NOT NULL,
  prompt_tail BLOB NOT NULL,
  completion BLOB NOT NULL,
  logprobs BLOB NOT NULL,
  consistent INTEGER NOT NULL,
  model TEXT,
  temperature REAL NOT NULL,
  top_p REAL NOT NULL,
  PRIMARY KEY (idx, turn)
);
CREATE TABLE IF NOT EXISTS token_modes (
  idx INTEGER PRIMARY KEY,
  mode TEXT NOT NULL,
  reason TEXT
);`;

/**
 * `exact`: every sampled turn has the host's ids and logprobs. `none`: some turn came without
 * them (the host does not send them, or the group asked for `tokens: "off"`).
 */
export type TokenMode = "exact" | "none";

const blob = (array: Int32Array | Float32Array) =>
  new Uint8Array(array.buffer, array.byteOffset, array.byteLength);

export class TokenStore {
  private ready = false;
  /** The sequence each episode's last turn left (prompt + completion), for the next turn. */
  private readonly sequences = new Map<number, Int32Array>();
  private modes: Map<number, TokenMode> | null = null;

  constructor(private readonly sql: SqlStorage) {}

  private ensure(): void {
    if (this.ready) return;
    this.sql.exec(SCHEMA);
    this.ready = true;
  }

  /** Turns of one episode, or of all, in order. */
  private read(idx?: number): Map<number, TurnTokens[]> {
    this.ensure();
    const rows =
      idx === undefined
        ? this.sql.exec("SELECT * FROM turn_tokens ORDER BY idx, turn")
        : this.sql.exec("SELECT * FROM turn_tokens WHERE idx = ? ORDER BY turn", idx);
    const byEpisode = new Map<number, TurnTokens[]>();
    for (const r of rows) {
      const turns = byEpisode.get(Number(r.idx)) ?? [];
      byEpisode.set(Number(r.idx), turns);
      turns.push({
        turn: Number(r.turn),
        promptLength: Number(r.prompt_length),
        prefixLength: Number(r.prefix_length),
        promptTail: new Int32Array((r.prompt_tail as ArrayBuffer).slice(0)),
        completionIds: new Int32Array((r.completion as ArrayBuffer).slice(0)),
        logprobs: new Float32Array((r.logprobs as ArrayBuffer).slice(0)),
        consistent: r.consistent === 1,
        model: r.model as string | null,
        temperature: Number(r.temperature),
        topP: Number(r.top_p),
      });
    }
    return byEpisode;
  }

  /** What the episode's last recorded turn left; rebuilt from storage after a restart. */
  private sequence(idx: number): Int32Array {
    let sequence = this.sequences.get(idx);
    if (sequence === undefined) {
      sequence = new Int32Array(0);
      for (const turn of this.read(idx).get(idx) ?? []) sequence = sequenceAfter(sequence, turn);
      this.sequences.set(idx, sequence);
    }
    return sequence;
  }

  /** Writes a turn's tokens; call it inside the transaction that records the turn's action. */
  record(
    idx: number,
    turn: number,
    host: HostTokens,
    sampling: { temperature: number; topP: number },
  ): TurnTokens {
    const previous = this.sequence(idx);
    const tokens = toTurnTokens(previous, host, turn, sampling);
    this.sql.exec(
      `INSERT OR REPLACE INTO turn_tokens (idx, turn, prompt_length, prefix_length, prompt_tail,
         completion, logprobs, consistent, model, temperature, top_p)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      idx,
      turn,
      tokens.promptLength,
      tokens.prefixLength,
      blob(tokens.promptTail),
      blob(tokens.completionIds),
      blob(tokens.logprobs),
      tokens.consistent ? 1 : 0,
      tokens.model,
      tokens.temperature,
      tokens.topP,
    );
    this.sequences.set(idx, sequenceAfter(previous, tokens));
    return tokens;
  }

  /** The episode's turns can no longer make exact samples; says why, once. */
  markInexact(idx: number, reason: string): void {
    this.ensure();
    if (this.mode(idx) === "none") return;
    this.sql.exec(
      "INSERT OR REPLACE INTO token_modes (idx, mode, reason) VALUES (?, 'none', ?)",
      idx,
      reason,
    );
    this.modes?.set(idx, "none");
  }

  mode(idx: number): TokenMode {
    if (this.modes === null) {
      this.ensure();
      this.modes = new Map();
      for (const r of this.sql.exec("SELECT idx, mode FROM token_modes"))
        this.modes.set(Number(r.idx), r.mode as TokenMode);
    }
    return this.modes.get(idx) ?? "exact";
  }

  /** Every episode's recorded turns, for the group's token object. */
  episodes(groupSize: number): EpisodeTokens[] {
    const byEpisode = this.read();
    return Array.from({ length: groupSize }, (_, idx) => ({
      idx,
      turns: this.mode(idx) === "exact" ? (byEpisode.get(idx) ?? []) : [],
    }));
  }
}
