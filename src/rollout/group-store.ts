/**
 * The group Durable Object's SQLite storage: only what a group in flight needs — its spec, each
 * episode's state machine and append-only transcript, pending generations and timers. Every
 * transition is one synchronous transaction, written before the object acts on it.
 */
import type { ChatMessage, JsonObject, RewardResult } from "../sdk";
import type { GroupSpec } from "./group-spec";

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

export type EpisodeState =
  | "opening"
  | "generating"
  | "stepping"
  | "completed"
  | "truncated"
  | "failed";
export const TERMINAL_STATES: readonly EpisodeState[] = ["completed", "truncated", "failed"];

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
  endReason: string | null;
  failureReason: string | null;
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
    endReason: r.end_reason as string | null,
    failureReason: r.failure_reason as string | null,
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

export class GroupStore {
  private readonly sql: SqlStorage;

  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly now: () => number = Date.now,
  ) {
    this.sql = storage.sql;
  }

  /** Whether this object holds a group (it holds nothing before start and after landing). */
  exists(): boolean {
    const found = this.sql.exec(
      "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'group_state'",
    );
    return (
      found.toArray().length > 0 && this.sql.exec("SELECT 1 FROM group_state").toArray().length > 0
    );
  }

  create(spec: GroupSpec): void {
    this.storage.transactionSync(() => {
      this.sql.exec(SCHEMA);
      this.sql.exec(
        "INSERT INTO group_state (id, spec, phase) VALUES (1, ?, 'running')",
        JSON.stringify(spec),
      );
      const now = this.now();
      for (let idx = 0; idx < spec.request.group_size; idx++) {
        this.sql.exec(
          "INSERT INTO episodes (idx, state, started_at) VALUES (?, 'opening', ?)",
          idx,
          now,
        );
      }
    });
  }

  group(): GroupRow {
    const r = this.sql.exec("SELECT * FROM group_state WHERE id = 1").one();
    return {
      spec: json<GroupSpec>(r.spec),
      phase: r.phase as GroupPhase,
      registered: r.registered === 1,
      scoreAttempts: Number(r.score_attempts),
      landAttempts: Number(r.land_attempts),
      creditApplied: r.credit_applied as string | null,
      warnings: json<string[]>(r.warnings),
      lastError: r.last_error as string | null,
    };
  }

  setPhase(phase: GroupPhase): void {
    this.sql.exec("UPDATE group_state SET phase = ? WHERE id = 1", phase);
  }

  markRegistered(): void {
    this.sql.exec("UPDATE group_state SET registered = 1 WHERE id = 1");
  }

  /** Counts one more attempt at `scoring` or `landing`, remembering why the last one failed. */
  countAttempt(what: "score" | "land", error: string | null): number {
    const column = what === "score" ? "score_attempts" : "land_attempts";
    this.sql.exec(
      `UPDATE group_state SET ${column} = ${column} + 1, last_error = ? WHERE id = 1`,
      error,
    );
    return Number(this.sql.exec(`SELECT ${column} AS n FROM group_state`).one().n);
  }

  episodes(): EpisodeRow[] {
    return this.sql.exec("SELECT * FROM episodes ORDER BY idx").toArray().map(toEpisode);
  }

  episode(idx: number): EpisodeRow {
    return toEpisode(this.sql.exec("SELECT * FROM episodes WHERE idx = ?", idx).one());
  }

  allTerminal(): boolean {
    const open = this.sql.exec(
      "SELECT COUNT(*) AS n FROM episodes WHERE state NOT IN ('completed', 'truncated', 'failed')",
    );
    return Number(open.one().n) === 0;
  }

  messages(idx: number): MessageRow[] {
    return this.sql
      .exec("SELECT * FROM messages WHERE idx = ? ORDER BY seq", idx)
      .toArray()
      .map(toMessage);
  }

  transcript(idx: number): ChatMessage[] {
    return this.sql
      .exec("SELECT message FROM messages WHERE idx = ? ORDER BY seq", idx)
      .toArray()
      .map((r) => json<ChatMessage>(r.message));
  }

  steps(idx: number): JsonObject[] {
    return this.sql
      .exec("SELECT metadata FROM steps WHERE idx = ? ORDER BY turn", idx)
      .toArray()
      .map((r) => json<JsonObject>(r.metadata));
  }

  private append(
    idx: number,
    turn: number | null,
    message: ChatMessage,
    stats?: ActionStats,
    truncated?: boolean,
  ) {
    const next = Number(
      this.sql.exec("SELECT COALESCE(MAX(seq), -1) + 1 AS n FROM messages WHERE idx = ?", idx).one()
        .n,
    );
    this.sql.exec(
      `INSERT INTO messages (idx, seq, turn, sampled, message, prompt_tokens, completion_tokens,
         finish_reason, latency_ms, attempts, truncated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      idx,
      next,
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

  /** The opening prompt is recorded; the episode waits for its first generation. */
  recordOpening(idx: number, messages: readonly ChatMessage[], maxTurns: number): void {
    this.storage.transactionSync(() => {
      for (const message of messages) this.append(idx, null, message);
      this.sql.exec(
        "UPDATE episodes SET state = 'generating', opening_count = ?, max_turns = ? WHERE idx = ?",
        messages.length,
        maxTurns,
        idx,
      );
    });
  }

  generation(idx: number): GenerationRow | null {
    const r = this.sql.exec("SELECT * FROM generations WHERE idx = ?", idx).toArray()[0];
    if (r === undefined) return null;
    return {
      idx,
      state: r.state as GenerationRow["state"],
      timeouts: Number(r.timeouts),
      attempts: Number(r.attempts),
      retries: Number(r.retries),
      sentAt: numOrNull(r.sent_at),
      deadlineAt: numOrNull(r.deadline_at),
      retryAt: numOrNull(r.retry_at),
    };
  }

  queueGeneration(idx: number): void {
    this.sql.exec("INSERT OR IGNORE INTO generations (idx, state) VALUES (?, 'queued')", idx);
  }

  markSent(idx: number, deadlineAt: number): void {
    this.sql.exec(
      "UPDATE generations SET state = 'sent', sent_at = ?, deadline_at = ?, retry_at = NULL WHERE idx = ?",
      this.now(),
      deadlineAt,
      idx,
    );
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
  }

  /** A generation ran past its deadline; returns how many times that has happened this turn. */
  recordTimeout(idx: number, attempts: number): number {
    this.sql.exec(
      `UPDATE generations SET state = 'queued', timeouts = timeouts + 1, attempts = attempts + ?,
         deadline_at = NULL, retries = 0 WHERE idx = ?`,
      attempts,
      idx,
    );
    return Number(
      this.sql.exec("SELECT timeouts FROM generations WHERE idx = ?", idx).one().timeouts,
    );
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
      this.setTimer(`retry:${idx}`, retryAt);
    });
  }

  /** The sampled action is appended; the episode waits for the environment's step. */
  recordAction(idx: number, message: ChatMessage, stats: ActionStats): void {
    this.storage.transactionSync(() => {
      const episode = this.episode(idx);
      const earlier = this.generation(idx)?.attempts ?? 0;
      this.append(
        idx,
        episode.turns,
        message,
        { ...stats, attempts: stats.attempts + earlier },
        stats.finishReason === "length",
      );
      this.sql.exec("DELETE FROM generations WHERE idx = ?", idx);
      const known = stats.promptTokens !== null && stats.completionTokens !== null;
      this.sql.exec(
        `UPDATE episodes SET state = 'stepping', turns = turns + 1,
           prompt_tokens = CASE WHEN ? THEN COALESCE(prompt_tokens, 0) + ? ELSE prompt_tokens END,
           completion_tokens = CASE WHEN ? THEN COALESCE(completion_tokens, 0) + ? ELSE completion_tokens END,
           total_tokens = CASE WHEN ? THEN ? ELSE total_tokens END
         WHERE idx = ?`,
        known ? 1 : 0,
        stats.promptTokens ?? 0,
        known ? 1 : 0,
        stats.completionTokens ?? 0,
        known ? 1 : 0,
        (stats.promptTokens ?? 0) + (stats.completionTokens ?? 0),
        idx,
      );
    });
  }

  /** The environment's reply is appended; the episode goes on or ends. */
  recordStep(
    idx: number,
    step: { messages: readonly ChatMessage[]; metadata: JsonObject; done: boolean },
    responseText: string,
  ): void {
    this.storage.transactionSync(() => {
      const episode = this.episode(idx);
      const turn = episode.turns - 1;
      for (const message of step.messages) this.append(idx, turn, message);
      this.sql.exec(
        "INSERT OR REPLACE INTO steps (idx, turn, metadata) VALUES (?, ?, ?)",
        idx,
        turn,
        JSON.stringify(step.metadata),
      );
      this.sql.exec(
        "UPDATE episodes SET response_text = ?, state = 'generating' WHERE idx = ?",
        responseText,
        idx,
      );
      if (step.done) this.end(idx, "completed", "done");
      else if (episode.maxTurns !== null && episode.turns >= episode.maxTurns)
        this.end(idx, "completed", "max_turns");
    });
  }

  /** Ends an episode with a recorded status and reason; a failure also keeps its detail. */
  finish(
    idx: number,
    state: "completed" | "truncated" | "failed",
    endReason: string,
    detail?: string,
  ): void {
    this.storage.transactionSync(() => this.end(idx, state, endReason, detail));
  }

  private end(
    idx: number,
    state: "completed" | "truncated" | "failed",
    endReason: string,
    detail?: string,
  ) {
    this.sql.exec(
      `UPDATE episodes SET state = ?, end_reason = ?, failure_reason = ?, failure_detail = ?, finished_at = ?
       WHERE idx = ?`,
      state,
      endReason,
      state === "failed" ? endReason : null,
      detail ?? null,
      this.now(),
      idx,
    );
    this.sql.exec("DELETE FROM generations WHERE idx = ?", idx);
  }

  recordReward(idx: number, reward: RewardResult): void {
    this.sql.exec("UPDATE episodes SET reward = ? WHERE idx = ?", JSON.stringify(reward), idx);
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
  }

  // One alarm, many timers: each timer is a row; the alarm is re-armed to the earliest.

  setTimer(name: string, dueAt: number): void {
    this.sql.exec("INSERT OR REPLACE INTO timers (name, due_at) VALUES (?, ?)", name, dueAt);
  }

  clearTimer(name: string): void {
    this.sql.exec("DELETE FROM timers WHERE name = ?", name);
  }

  dueTimers(now: number): string[] {
    return this.sql
      .exec("SELECT name FROM timers WHERE due_at <= ? ORDER BY due_at", now)
      .toArray()
      .map((r) => r.name as string);
  }

  nextTimer(): number | null {
    return numOrNull(this.sql.exec("SELECT MIN(due_at) AS due FROM timers").one().due);
  }

  /** After landing: the group's data lives in D1 now; nothing stays here. */
  async deleteAll(): Promise<void> {
    await this.storage.deleteAlarm();
    await this.storage.deleteAll();
  }
}
