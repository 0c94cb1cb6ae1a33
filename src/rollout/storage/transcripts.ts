/**
 * Each episode's append-only transcript: its messages in order (a sampled action with what the
 * host reported of it) and the metadata of each environment step.
 */
import { type ChatMessage, ChatMessageSchema, type JsonObject, JsonObjectSchema } from "../../sdk";
import { boolOrNull, byEpisode, jsonOf, numOrNull, type Row, textOrNull } from "./columns";
import type { GroupDatabase } from "./database";

export interface MessageRow {
  idx: number;
  seq: number;
  turn: number | null;
  sampled: boolean;
  message: ChatMessage;
  promptTokens: number | null;
  completionTokens: number | null;
  finishReason: string | null;
  latencyMs: number | null;
  attempts: number | null;
  truncated: boolean | null;
  /** The host that sampled it (sampled messages only). */
  host: string | null;
  /** Prompt tokens the host found in its prefix cache; null when it did not say. */
  cachedTokens: number | null;
}

/** What the host reported for one sampled action. */
export interface ActionStats {
  promptTokens: number | null;
  completionTokens: number | null;
  finishReason: string | null;
  latencyMs: number;
  attempts: number;
  /** The host that answered (a fleet's, src/fleet/). */
  host?: string | null;
  cachedTokens?: number | null;
}

/** One host's share of a group's sampled messages. */
export interface HostUsage {
  host: string | null;
  generations: number;
  promptTokens: number;
  cachedTokens: number;
  completionTokens: number;
  retries: number;
  /** Messages the host reported no token counts for: not priced. */
  unmetered: number;
}

const messageOf = (r: Row) => ChatMessageSchema.parse(jsonOf(r.message));

function toMessage(r: Row): MessageRow {
  return {
    idx: Number(r.idx),
    seq: Number(r.seq),
    turn: numOrNull(r.turn),
    sampled: r.sampled === 1,
    message: messageOf(r),
    promptTokens: numOrNull(r.prompt_tokens),
    completionTokens: numOrNull(r.completion_tokens),
    finishReason: textOrNull(r.finish_reason),
    latencyMs: numOrNull(r.latency_ms),
    attempts: numOrNull(r.attempts),
    truncated: boolOrNull(r.truncated),
    host: textOrNull(r.host),
    cachedTokens: numOrNull(r.cached_tokens),
  };
}

export class TranscriptsTable {
  /** The next message sequence number of each episode that has any. */
  private nextSeqs: Map<number, number> | null = null;
  /**
   * Every episode's messages as last read, until the next append: scoring and landing both read
   * the whole group once its episodes have ended. Read and parsed twice, those reads were about
   * a tenth of what the pipeline allocates at C = 1,024 (`npm run bench:heap -- pipeline 1024
   * --allocations`), all of it garbage. Reading once halves that; it did not move peak RSS
   * measurably (C = 256, fresh process: 376 MB against 373 and 378 before, 2026-12-02).
   */
  private byEpisode: Map<number, MessageRow[]> | null = null;

  constructor(private readonly db: GroupDatabase) {
    db.onReset(() => {
      this.nextSeqs = null;
      this.byEpisode = null;
    });
    db.onCreate(() => {
      this.nextSeqs = new Map();
    });
  }

  private get next(): Map<number, number> {
    if (this.nextSeqs === null) {
      this.nextSeqs = new Map();
      for (const r of this.db.exec("SELECT idx, MAX(seq) + 1 AS next FROM messages GROUP BY idx"))
        this.nextSeqs.set(Number(r.idx), Number(r.next));
    }
    return this.nextSeqs;
  }

  of(idx: number): ChatMessage[] {
    return this.db
      .exec("SELECT message FROM messages WHERE idx = ? ORDER BY seq", idx)
      .toArray()
      .map(messageOf);
  }

  /** Every episode's messages in one query, by episode: what scoring and landing read. */
  messagesByEpisode(): ReadonlyMap<number, readonly MessageRow[]> {
    this.byEpisode ??= byEpisode(
      this.db.exec("SELECT * FROM messages ORDER BY idx, seq"),
      toMessage,
    );
    return this.byEpisode;
  }

  /** Every episode's step metadata in one query, by episode. */
  stepsByEpisode(): Map<number, JsonObject[]> {
    return byEpisode(this.db.exec("SELECT idx, metadata FROM steps ORDER BY idx, turn"), (r) =>
      JsonObjectSchema.parse(jsonOf(r.metadata)),
    );
  }

  /**
   * Appends messages of the episode's `turn` (null: its opening); `action` marks the one message
   * the host sampled, with what the host said of it.
   */
  append(
    idx: number,
    turn: number | null,
    messages: readonly ChatMessage[],
    action?: { stats: ActionStats; truncated: boolean },
  ): void {
    const first = this.next.get(idx) ?? 0;
    this.byEpisode = null;
    for (const [i, message] of messages.entries()) {
      const stats = action?.stats;
      this.db.exec(
        `INSERT INTO messages (idx, seq, turn, sampled, message, prompt_tokens, completion_tokens,
           finish_reason, latency_ms, attempts, truncated, host, cached_tokens)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        idx,
        first + i,
        turn,
        stats ? 1 : 0,
        JSON.stringify(message),
        stats?.promptTokens ?? null,
        stats?.completionTokens ?? null,
        stats?.finishReason ?? null,
        stats?.latencyMs ?? null,
        stats?.attempts ?? null,
        action === undefined ? null : action.truncated ? 1 : 0,
        stats?.host ?? null,
        stats?.cachedTokens ?? null,
      );
    }
    this.db.afterCommit(() => this.next.set(idx, first + messages.length));
  }

  /**
   * What the sampled messages so far used, by the host that answered: one aggregate query, not
   * a parse of every message (a run's budget asks each group in flight on every start).
   */
  usageByHost(): HostUsage[] {
    return this.db
      .exec(
        `SELECT host, COUNT(*) AS generations, SUM(COALESCE(prompt_tokens, 0)) AS prompt,
           SUM(COALESCE(cached_tokens, 0)) AS cached, SUM(COALESCE(completion_tokens, 0)) AS completion,
           SUM(MAX(COALESCE(attempts, 1) - 1, 0)) AS retries,
           SUM(prompt_tokens IS NULL AND completion_tokens IS NULL) AS unmetered
         FROM messages WHERE sampled = 1 GROUP BY host`,
      )
      .toArray()
      .map((r) => ({
        host: textOrNull(r.host),
        generations: Number(r.generations),
        promptTokens: Number(r.prompt),
        cachedTokens: Number(r.cached),
        completionTokens: Number(r.completion),
        retries: Number(r.retries),
        unmetered: Number(r.unmetered),
      }));
  }

  recordStep(idx: number, turn: number, metadata: JsonObject): void {
    this.db.exec(
      "INSERT OR REPLACE INTO steps (idx, turn, metadata) VALUES (?, ?, ?)",
      idx,
      turn,
      JSON.stringify(metadata),
    );
  }
}
