/**
 * The group Durable Object's SQLite storage: only what a group in flight needs — its spec, each
 * episode's state machine and append-only transcript, pending generations and timers. Every
 * transition is one synchronous transaction, written before the object acts on it. All writes
 * pass through this class, so it keeps a mirror of the small rows in memory and answers reads
 * from it: SQLite is the source of truth, the mirror saves re-reading what was just written.
 */
import type { ChatMessage, JsonObject, RewardResult } from "../sdk";
import type { GroupSpec } from "./group-spec";
import {
  END,
  type EndReason,
  type EpisodeEnd,
  type EpisodeState,
  type FailureReason,
  TERMINAL_STATES,
} from "./outcomes";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS group_state (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  spec TEXT NOT NULL,
  phase TEXT NOT NULL,
  registered INTEGER NOT NULL DEFAULT 0,
  score_attempts INTEGER NOT NULL DEFAULT 0,
  land_attempts INTEGER NOT NULL DEFAULT 0,
  credit_applied TEXT,
  warnings TEXT NOT NULL DEFAULT '[]',
  last_error TEXT
);
CREATE TABLE IF NOT EXISTS episodes (
  idx INTEGER PRIMARY KEY,
  state TEXT NOT NULL,
  max_turns INTEGER,
  opening_count INTEGER,
  turns INTEGER NOT NULL DEFAULT 0,
  response_text TEXT NOT NULL DEFAULT '',
  end_reason TEXT,
  failure_reason TEXT,
  failure_detail TEXT,
  redispatches INTEGER NOT NULL DEFAULT 0,
  prompt_tokens INTEGER,
  completion_tokens INTEGER,
  total_tokens INTEGER,
  started_at INTEGER NOT NULL,
  finished_at INTEGER,
  reward TEXT,
  advantage REAL,
  per_turn_rewards TEXT,
  per_turn_advantages TEXT
);
CREATE TABLE IF NOT EXISTS messages (
  idx INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  turn INTEGER,
  sampled INTEGER NOT NULL,
  message TEXT NOT NULL,
  prompt_tokens INTEGER,
  completion_tokens INTEGER,
  finish_reason TEXT,
  latency_ms INTEGER,
  attempts INTEGER,
  truncated INTEGER,
  PRIMARY KEY (idx, seq)
);
CREATE TABLE IF NOT EXISTS steps (
  idx INTEGER NOT NULL,
  turn INTEGER NOT NULL,
  metadata TEXT NOT NULL,
  PRIMARY KEY (idx, turn)
);
CREATE TABLE IF NOT EXISTS generations (
  idx INTEGER PRIMARY KEY,
  state TEXT NOT NULL,
  timeouts INTEGER NOT NULL DEFAULT 0,
  attempts INTEGER NOT NULL DEFAULT 0,
  retries INTEGER NOT NULL DEFAULT 0,
  sent_at INTEGER,
  deadline_at INTEGER,
  retry_at INTEGER
);
CREATE TABLE IF NOT EXISTS timers (
  name TEXT PRIMARY KEY,
  due_at INTEGER NOT NULL
);`;

/** `running` until every episode ends, then `scoring`, `landing`, and gone once landed. */
export type GroupPhase = "running" | "scoring" | "landing";

export interface GroupRow {
  spec: GroupSpec;
  phase: GroupPhase;
  registered: boolean;
  scoreAttempts: number;
  landAttempts: number;
  creditApplied: string | null;
  warnings: string[];
  lastError: string | null;
}

export interface EpisodeRow {
  idx: number;
  state: EpisodeState;
  maxTurns: number | null;
  openingCount: number | null;
  turns: number;
  responseText: string;
  endReason: EndReason | null;
  failureReason: FailureReason | null;
  failureDetail: string | null;
  redispatches: number;
  promptTokens: number | null;
  completionTokens: number | null;
  totalTokens: number | null;
  startedAt: number;
  finishedAt: number | null;
  reward: RewardResult | null;
  advantage: number | null;
  perTurnRewards: number[] | null;
  perTurnAdvantages: number[] | null;
}

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
}

/**
 * A generation the episode is waiting for. `queued`: to be sent; `sent`: on its way to the host
 * (if this row outlives the instance that sent it, the request was lost); `waiting`: parked
 * until `retryAt` because the host asked for a long backoff. The deadline window (`deadlineAt`)
 * spans an attempt's transport retries; a timeout opens a new one.
 */
export interface GenerationRow {
  idx: number;
  state: "queued" | "sent" | "waiting";
  timeouts: number;
  /** HTTP attempts this turn, across every window. */
  attempts: number;
  /** Transport retries used in the current window. */
  retries: number;
  sentAt: number | null;
  deadlineAt: number | null;
  retryAt: number | null;
}

/** What the host reported for one sampled action. */
export interface ActionStats {
  promptTokens: number | null;
  completionTokens: number | null;
  finishReason: string | null;
  latencyMs: number;
  attempts: number;
}

type Value = SqlStorageValue | undefined;
type Row = Record<string, SqlStorageValue>;
const json = <T>(value: Value): T => JSON.parse(value as string) as T;
const jsonOrNull = <T>(value: Value): T | null =>
  value === null || value === undefined ? null : json<T>(value);
const numOrNull = (value: Value) => (value === null || value === undefined ? null : Number(value));

function toEpisode(r: Row): EpisodeRow {
  return {
    idx: Number(r.idx),
    state: r.state as EpisodeState,
    maxTurns: numOrNull(r.max_turns),
    openingCount: numOrNull(r.opening_count),
    turns: Number(r.turns),
    responseText: r.response_text as string,
    endReason: r.end_reason as EndReason | null,
    failureReason: r.failure_reason as FailureReason | null,
    failureDetail: r.failure_detail as string | null,
    redispatches: Number(r.redispatches),
    promptTokens: numOrNull(r.prompt_tokens),
    completionTokens: numOrNull(r.completion_tokens),
    totalTokens: numOrNull(r.total_tokens),
    startedAt: Number(r.started_at),
    finishedAt: numOrNull(r.finished_at),
    reward: jsonOrNull<RewardResult>(r.reward),
    advantage: numOrNull(r.advantage),
    perTurnRewards: jsonOrNull<number[]>(r.per_turn_rewards),
    perTurnAdvantages: jsonOrNull<number[]>(r.per_turn_advantages),
  };
}

function toGeneration(r: Row): GenerationRow {
  return {
    idx: Number(r.idx),
    state: r.state as GenerationRow["state"],
    timeouts: Number(r.timeouts),
    attempts: Number(r.attempts),
    retries: Number(r.retries),
    sentAt: numOrNull(r.sent_at),
    deadlineAt: numOrNull(r.deadline_at),
    retryAt: numOrNull(r.retry_at),
  };
}

function toMessage(r: Row): MessageRow {
  return {
    idx: Number(r.idx),
    seq: Number(r.seq),
    turn: numOrNull(r.turn),
    sampled: r.sampled === 1,
    message: json<ChatMessage>(r.message),
    promptTokens: numOrNull(r.prompt_tokens),
    completionTokens: numOrNull(r.completion_tokens),
    finishReason: r.finish_reason as string | null,
    latencyMs: numOrNull(r.latency_ms),
    attempts: numOrNull(r.attempts),
    truncated: r.truncated === null ? null : r.truncated === 1,
  };
}

/** Rows of several episodes (ordered within each), grouped by their `idx`. */
function byEpisode<T>(rows: Row[], read: (row: Row) => T): Map<number, T[]> {
  const grouped = new Map<number, T[]>();
  for (const row of rows) {
    const idx = Number(row.idx);
    const list = grouped.get(idx);
    if (list) list.push(read(row));
    else grouped.set(idx, [read(row)]);
  }
  return grouped;
}

interface Mirror {
  group: GroupRow;
  episodes: EpisodeRow[];
  generations: Map<number, GenerationRow>;
  /** The next message sequence number of each episode. */
  nextSeq: number[];
  timers: Map<string, number>;
}

export class GroupStore {
  private readonly sql: SqlStorage;
  private mirror: Mirror | null = null;

  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly now: () => number = Date.now,
  ) {
    this.sql = storage.sql;
  }

  /** Whether this object holds a group (it holds nothing before start and after landing). */
  exists(): boolean {
    if (this.mirror !== null) return true;
    const tables = this.sql.exec(
      "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'group_state'",
    );
    if (
      tables.toArray().length === 0 ||
      this.sql.exec("SELECT 1 FROM group_state").toArray().length === 0
    ) {
      return false;
    }
    this.mirror = this.hydrate();
    return true;
  }

  /** Loads the mirror from storage: once per instance, after a restart. */
  private hydrate(): Mirror {
    const r = this.sql.exec("SELECT * FROM group_state WHERE id = 1").one();
    const episodes = this.sql.exec("SELECT * FROM episodes ORDER BY idx").toArray().map(toEpisode);
    const nextSeq = episodes.map(() => 0);
    for (const row of this.sql
      .exec("SELECT idx, MAX(seq) + 1 AS next FROM messages GROUP BY idx")
      .toArray()) {
      nextSeq[Number(row.idx)] = Number(row.next);
    }
    const generations = new Map<number, GenerationRow>();
    for (const g of this.sql.exec("SELECT * FROM generations").toArray())
      generations.set(Number(g.idx), toGeneration(g));
    const timers = new Map<string, number>();
    for (const t of this.sql.exec("SELECT name, due_at FROM timers").toArray())
      timers.set(String(t.name), Number(t.due_at));
    return {
      group: {
        spec: json<GroupSpec>(r.spec),
        phase: r.phase as GroupPhase,
        registered: r.registered === 1,
        scoreAttempts: Number(r.score_attempts),
        landAttempts: Number(r.land_attempts),
        creditApplied: r.credit_applied as string | null,
        warnings: json<string[]>(r.warnings),
        lastError: r.last_error as string | null,
      },
      episodes,
      generations,
      nextSeq,
      timers,
    };
  }

  private get m(): Mirror {
    if (this.mirror === null && !this.exists()) throw new Error("this object holds no group");
    return this.mirror as Mirror;
  }

  create(spec: GroupSpec): void {
    const now = this.now();
    this.storage.transactionSync(() => {
      this.sql.exec(SCHEMA);
      this.sql.exec(
        "INSERT INTO group_state (id, spec, phase) VALUES (1, ?, 'running')",
        JSON.stringify(spec),
      );
      for (let idx = 0; idx < spec.request.group_size; idx++) {
        this.sql.exec(
          "INSERT INTO episodes (idx, state, started_at) VALUES (?, 'opening', ?)",
          idx,
          now,
        );
      }
    });
    this.mirror = this.hydrate();
  }

  group(): GroupRow {
    return this.m.group;
  }

  setPhase(phase: GroupPhase): void {
    this.sql.exec("UPDATE group_state SET phase = ? WHERE id = 1", phase);
    this.m.group = { ...this.m.group, phase };
  }

  markRegistered(): void {
    this.sql.exec("UPDATE group_state SET registered = 1 WHERE id = 1");
    this.m.group = { ...this.m.group, registered: true };
  }

  /** Counts one more attempt at `scoring` or `landing`, remembering why the last one failed. */
  countAttempt(what: "score" | "land", error: string | null): number {
    const column = what === "score" ? "score_attempts" : "land_attempts";
    this.sql.exec(
      `UPDATE group_state SET ${column} = ${column} + 1, last_error = ? WHERE id = 1`,
      error,
    );
    const group = this.m.group;
    const attempts = (what === "score" ? group.scoreAttempts : group.landAttempts) + 1;
    this.m.group = {
      ...group,
      lastError: error,
      ...(what === "score" ? { scoreAttempts: attempts } : { landAttempts: attempts }),
    };
    return attempts;
  }

  episodes(): EpisodeRow[] {
    return [...this.m.episodes];
  }

  episode(idx: number): EpisodeRow {
    const episode = this.m.episodes[idx];
    if (episode === undefined) throw new Error(`no episode ${idx}`);
    return episode;
  }

  private patchEpisode(idx: number, patch: Partial<EpisodeRow>): void {
    this.m.episodes[idx] = { ...this.episode(idx), ...patch };
  }

  allTerminal(): boolean {
    return this.m.episodes.every((e) => TERMINAL_STATES.includes(e.state));
  }

  transcript(idx: number): ChatMessage[] {
    return this.sql
      .exec("SELECT message FROM messages WHERE idx = ? ORDER BY seq", idx)
      .toArray()
      .map((r) => json<ChatMessage>(r.message));
  }

  /** Every episode's messages in one query, by episode: what scoring and landing read. */
  messagesByEpisode(): Map<number, MessageRow[]> {
    const rows = this.sql.exec("SELECT * FROM messages ORDER BY idx, seq").toArray();
    return byEpisode(rows, toMessage);
  }

  /** Every episode's step metadata in one query, by episode. */
  stepsByEpisode(): Map<number, JsonObject[]> {
    const rows = this.sql.exec("SELECT idx, metadata FROM steps ORDER BY idx, turn").toArray();
    return byEpisode(rows, (r) => json<JsonObject>(r.metadata));
  }

  /** Appends one message; returns the sequence number to commit to the mirror afterwards. */
  private append(
    idx: number,
    seq: number,
    turn: number | null,
    message: ChatMessage,
    stats?: ActionStats,
    truncated?: boolean,
  ) {
    this.sql.exec(
      `INSERT INTO messages (idx, seq, turn, sampled, message, prompt_tokens, completion_tokens,
         finish_reason, latency_ms, attempts, truncated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      idx,
      seq,
      turn,
      stats ? 1 : 0,
      JSON.stringify(message),
      stats?.promptTokens ?? null,
      stats?.completionTokens ?? null,
      stats?.finishReason ?? null,
      stats?.latencyMs ?? null,
      stats?.attempts ?? null,
      truncated === undefined ? null : truncated ? 1 : 0,
    );
  }

  /**
   * The opening prompt is recorded; the episode waits for its first generation. `alongside`
   * writes in the same transaction (the episode's tools); what it returns runs once committed.
   */
  recordOpening(
    idx: number,
    messages: readonly ChatMessage[],
    maxTurns: number,
    alongside: () => (() => void) | undefined = () => undefined,
  ): void {
    const first = this.m.nextSeq[idx] ?? 0;
    const committed = this.storage.transactionSync(() => {
      for (const [i, message] of messages.entries()) this.append(idx, first + i, null, message);
      this.sql.exec(
        "UPDATE episodes SET state = 'generating', opening_count = ?, max_turns = ? WHERE idx = ?",
        messages.length,
        maxTurns,
        idx,
      );
      return alongside();
    });
    this.m.nextSeq[idx] = first + messages.length;
    this.patchEpisode(idx, { state: "generating", openingCount: messages.length, maxTurns });
    committed?.();
  }

  generation(idx: number): GenerationRow | null {
    return this.m.generations.get(idx) ?? null;
  }

  private setGeneration(idx: number, patch: Partial<GenerationRow>): void {
    const current = this.generation(idx);
    if (current) this.m.generations.set(idx, { ...current, ...patch });
  }

  /**
   * The generation is on its way to the host. The row is written only now: an instance that
   * dies while an episode waits for a permit leaves nothing to redo.
   */
  markSent(idx: number, deadlineAt: number): void {
    const sentAt = this.now();
    const current = this.generation(idx);
    if (current === null) {
      this.sql.exec(
        "INSERT INTO generations (idx, state, sent_at, deadline_at) VALUES (?, 'sent', ?, ?)",
        idx,
        sentAt,
        deadlineAt,
      );
      this.m.generations.set(idx, {
        idx,
        state: "sent",
        timeouts: 0,
        attempts: 0,
        retries: 0,
        sentAt,
        deadlineAt,
        retryAt: null,
      });
      return;
    }
    this.sql.exec(
      "UPDATE generations SET state = 'sent', sent_at = ?, deadline_at = ?, retry_at = NULL WHERE idx = ?",
      sentAt,
      deadlineAt,
      idx,
    );
    this.setGeneration(idx, { state: "sent", sentAt, deadlineAt, retryAt: null });
  }

  /** How many generations each episode has sent: its sampled turns, and one still pending. */
  sentTurns(): Map<number, number> {
    return new Map(
      this.m.episodes.map((e) => [e.idx, e.turns + (this.m.generations.has(e.idx) ? 1 : 0)]),
    );
  }

  /**
   * A generation marked sent that did not go out after all (its run paused while its prompt was
   * being built): back to waiting, so a restart meanwhile is not counted as a lost request.
   */
  unsendGeneration(idx: number): void {
    this.sql.exec("UPDATE generations SET state = 'queued', deadline_at = NULL WHERE idx = ?", idx);
    this.setGeneration(idx, { state: "queued", deadlineAt: null });
  }

  /** A generation sent by an earlier instance of this object, lost with it: send it again. */
  recordRedispatch(idx: number): void {
    this.storage.transactionSync(() => {
      this.sql.exec(
        "UPDATE generations SET state = 'queued', deadline_at = NULL, retries = 0 WHERE idx = ?",
        idx,
      );
      this.sql.exec("UPDATE episodes SET redispatches = redispatches + 1 WHERE idx = ?", idx);
    });
    this.setGeneration(idx, { state: "queued", deadlineAt: null, retries: 0 });
    this.patchEpisode(idx, { redispatches: this.episode(idx).redispatches + 1 });
  }

  /** A generation ran past its deadline; returns how many times that has happened this turn. */
  recordTimeout(idx: number, attempts: number): number {
    this.sql.exec(
      `UPDATE generations SET state = 'queued', timeouts = timeouts + 1, attempts = attempts + ?,
         deadline_at = NULL, retries = 0 WHERE idx = ?`,
      attempts,
      idx,
    );
    const current = this.generation(idx);
    const timeouts = (current?.timeouts ?? 0) + 1;
    this.setGeneration(idx, {
      state: "queued",
      timeouts,
      attempts: (current?.attempts ?? 0) + attempts,
      deadlineAt: null,
      retries: 0,
    });
    return timeouts;
  }

  /** The host asked for a long wait: the generation sleeps in storage, woken by its timer. */
  parkGeneration(idx: number, retryAt: number, attempts: number): void {
    this.storage.transactionSync(() => {
      this.sql.exec(
        `UPDATE generations SET state = 'waiting', retry_at = ?, attempts = attempts + ?,
           retries = retries + ? WHERE idx = ?`,
        retryAt,
        attempts,
        attempts,
        idx,
      );
      this.sql.exec(
        "INSERT OR REPLACE INTO timers (name, due_at) VALUES (?, ?)",
        `retry:${idx}`,
        retryAt,
      );
    });
    const current = this.generation(idx);
    this.setGeneration(idx, {
      state: "waiting",
      retryAt,
      attempts: (current?.attempts ?? 0) + attempts,
      retries: (current?.retries ?? 0) + attempts,
    });
    this.m.timers.set(`retry:${idx}`, retryAt);
  }

  /** The sampled action is appended; the episode waits for the environment's step. */
  /**
   * The sampled action is appended and the episode moves on to stepping. `alongside` writes in
   * the same transaction (the turn's tokens), so no restart finds one without the other; what it
   * returns runs once the transaction has committed.
   */
  recordAction(
    idx: number,
    message: ChatMessage,
    stats: ActionStats,
    alongside: () => (() => void) | undefined = () => undefined,
  ): void {
    const episode = this.episode(idx);
    const seq = this.m.nextSeq[idx] ?? 0;
    const attempts = stats.attempts + (this.generation(idx)?.attempts ?? 0);
    const known = stats.promptTokens !== null && stats.completionTokens !== null;
    const tokens = known
      ? {
          promptTokens: (episode.promptTokens ?? 0) + (stats.promptTokens ?? 0),
          completionTokens: (episode.completionTokens ?? 0) + (stats.completionTokens ?? 0),
          totalTokens: (stats.promptTokens ?? 0) + (stats.completionTokens ?? 0),
        }
      : {
          promptTokens: episode.promptTokens,
          completionTokens: episode.completionTokens,
          totalTokens: episode.totalTokens,
        };
    const committed = this.storage.transactionSync(() => {
      this.append(
        idx,
        seq,
        episode.turns,
        message,
        { ...stats, attempts },
        stats.finishReason === "length",
      );
      this.sql.exec("DELETE FROM generations WHERE idx = ?", idx);
      const after = alongside();
      this.sql.exec(
        `UPDATE episodes SET state = 'stepping', turns = ?, prompt_tokens = ?, completion_tokens = ?, total_tokens = ?
         WHERE idx = ?`,
        episode.turns + 1,
        tokens.promptTokens,
        tokens.completionTokens,
        tokens.totalTokens,
        idx,
      );
      return after;
    });
    committed?.();
    this.m.nextSeq[idx] = seq + 1;
    this.m.generations.delete(idx);
    this.patchEpisode(idx, { state: "stepping", turns: episode.turns + 1, ...tokens });
  }

  /** The environment's reply is appended; the episode goes on or ends. */
  recordStep(
    idx: number,
    step: { messages: readonly ChatMessage[]; metadata: JsonObject; done: boolean },
    responseText: string,
  ): void {
    const episode = this.episode(idx);
    const turn = episode.turns - 1;
    const first = this.m.nextSeq[idx] ?? 0;
    const ending: EpisodeEnd | null = step.done
      ? { state: "completed", reason: END.done }
      : episode.maxTurns !== null && episode.turns >= episode.maxTurns
        ? { state: "completed", reason: END.max_turns }
        : null;
    const finishedAt = this.now();
    this.storage.transactionSync(() => {
      for (const [i, message] of step.messages.entries())
        this.append(idx, first + i, turn, message);
      this.sql.exec(
        "INSERT OR REPLACE INTO steps (idx, turn, metadata) VALUES (?, ?, ?)",
        idx,
        turn,
        JSON.stringify(step.metadata),
      );
      if (ending === null) {
        this.sql.exec(
          "UPDATE episodes SET response_text = ?, state = 'generating' WHERE idx = ?",
          responseText,
          idx,
        );
      } else {
        this.sql.exec("UPDATE episodes SET response_text = ? WHERE idx = ?", responseText, idx);
        this.writeEnd(idx, ending, finishedAt);
      }
    });
    this.m.nextSeq[idx] = first + step.messages.length;
    this.patchEpisode(idx, { responseText, state: "generating" });
    if (ending !== null) this.mirrorEnd(idx, ending, finishedAt);
  }

  /** Ends an episode with a recorded status and reason; a failure also keeps its detail. */
  finish(idx: number, end: EpisodeEnd): void {
    const finishedAt = this.now();
    this.storage.transactionSync(() => this.writeEnd(idx, end, finishedAt));
    this.mirrorEnd(idx, end, finishedAt);
  }

  private writeEnd(idx: number, end: EpisodeEnd, finishedAt: number) {
    this.sql.exec(
      `UPDATE episodes SET state = ?, end_reason = ?, failure_reason = ?, failure_detail = ?, finished_at = ?
       WHERE idx = ?`,
      end.state,
      end.reason,
      end.state === "failed" ? end.reason : null,
      "detail" in end ? (end.detail ?? null) : null,
      finishedAt,
      idx,
    );
    this.sql.exec("DELETE FROM generations WHERE idx = ?", idx);
  }

  private mirrorEnd(idx: number, end: EpisodeEnd, finishedAt: number) {
    this.patchEpisode(idx, {
      state: end.state,
      endReason: end.reason,
      failureReason: end.state === "failed" ? end.reason : null,
      failureDetail: "detail" in end ? (end.detail ?? null) : null,
      finishedAt,
    });
    this.m.generations.delete(idx);
  }

  recordReward(idx: number, reward: RewardResult): void {
    this.sql.exec("UPDATE episodes SET reward = ? WHERE idx = ?", JSON.stringify(reward), idx);
    this.patchEpisode(idx, { reward });
  }

  recordCredit(
    credit: {
      idx: number;
      advantage: number | null;
      perTurnRewards: number[] | null;
      perTurnAdvantages: number[] | null;
    }[],
    creditApplied: string,
    warnings: readonly string[],
  ): void {
    this.storage.transactionSync(() => {
      for (const c of credit) {
        this.sql.exec(
          "UPDATE episodes SET advantage = ?, per_turn_rewards = ?, per_turn_advantages = ? WHERE idx = ?",
          c.advantage,
          c.perTurnRewards ? JSON.stringify(c.perTurnRewards) : null,
          c.perTurnAdvantages ? JSON.stringify(c.perTurnAdvantages) : null,
          c.idx,
        );
      }
      this.sql.exec(
        "UPDATE group_state SET credit_applied = ?, warnings = ?, phase = 'landing' WHERE id = 1",
        creditApplied,
        JSON.stringify(warnings),
      );
    });
    for (const c of credit) {
      this.patchEpisode(c.idx, {
        advantage: c.advantage,
        perTurnRewards: c.perTurnRewards,
        perTurnAdvantages: c.perTurnAdvantages,
      });
    }
    this.m.group = { ...this.m.group, creditApplied, warnings: [...warnings], phase: "landing" };
  }

  // One alarm, many timers: each timer is a row; the alarm is re-armed to the earliest.

  setTimer(name: string, dueAt: number): void {
    this.sql.exec("INSERT OR REPLACE INTO timers (name, due_at) VALUES (?, ?)", name, dueAt);
    this.m.timers.set(name, dueAt);
  }

  clearTimer(name: string): void {
    if (!this.m.timers.has(name)) return;
    this.sql.exec("DELETE FROM timers WHERE name = ?", name);
    this.m.timers.delete(name);
  }

  dueTimers(now: number): string[] {
    return [...this.m.timers]
      .filter(([, due]) => due <= now)
      .sort((a, b) => a[1] - b[1])
      .map(([name]) => name);
  }

  nextTimer(): number | null {
    let next: number | null = null;
    for (const due of this.m.timers.values()) next = next === null ? due : Math.min(next, due);
    return next;
  }

  /** After landing: the group's data lives in D1 now; nothing stays here. */
  async deleteAll(): Promise<void> {
    this.mirror = null;
    await this.storage.deleteAlarm();
    await this.storage.deleteAll();
  }
}
