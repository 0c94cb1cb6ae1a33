/**
 * Each episode's state machine row: where it is (opening, generating, stepping, or how it
 * ended), what it has used, and, once the group is graded, its reward and credit. Read from an
 * in-memory mirror that moves on only once a write has committed.
 */
import { z } from "zod";
import type { JudgementRecord } from "../../judges/host-judge";
import { type RewardResult, RewardResultSchema } from "../../sdk";
import {
  type EndReason,
  EndReasonSchema,
  type EpisodeEnd,
  type EpisodeState,
  EpisodeStateSchema,
  type FailureReason,
  FailureReasonSchema,
  TERMINAL_STATES,
} from "../outcomes";
import { ColumnUpdate } from "./column-update";
import { jsonOf, numOrNull, type Row, textOrNull, type Value } from "./columns";
import type { GroupDatabase } from "./database";

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
  /** The host its generations go to; null before its first (src/fleet/routing.ts). */
  host: string | null;
  /** Tokens its generations had produced when an interrupting pause aborted them, not kept. */
  discardedTokens: number;
  /** Every judge call its grading made (src/judges/host-judge.ts), in order. */
  judgements: JudgementRecord[];
  /** The end it played to, when its grading then failed it (a re-score restores it). */
  playedEndReason: EndReason | null;
  /** Time its opening and steps took in environment code, calls that ran out of time included. */
  envMs: number;
}

/** What the host counted of an episode so far. */
export type TokenCounts = Pick<EpisodeRow, "promptTokens" | "completionTokens" | "totalTokens">;

/** Credit assigned to one episode once its group is graded. */
export type EpisodeCredit = Pick<
  EpisodeRow,
  "idx" | "advantage" | "perTurnRewards" | "perTurnAdvantages"
>;

const NumbersSchema = z.array(z.number());
const numbersOrNull = (value: Value) =>
  value === null || value === undefined ? null : NumbersSchema.parse(jsonOf(value));

function toEpisode(r: Row): EpisodeRow {
  return {
    idx: Number(r.idx),
    state: EpisodeStateSchema.parse(r.state),
    maxTurns: numOrNull(r.max_turns),
    openingCount: numOrNull(r.opening_count),
    turns: Number(r.turns),
    responseText: String(r.response_text),
    endReason: EndReasonSchema.nullable().parse(r.end_reason),
    failureReason: FailureReasonSchema.nullable().parse(r.failure_reason),
    failureDetail: textOrNull(r.failure_detail),
    redispatches: Number(r.redispatches),
    promptTokens: numOrNull(r.prompt_tokens),
    completionTokens: numOrNull(r.completion_tokens),
    totalTokens: numOrNull(r.total_tokens),
    startedAt: Number(r.started_at),
    finishedAt: numOrNull(r.finished_at),
    reward: r.reward === null ? null : RewardResultSchema.parse(jsonOf(r.reward)),
    advantage: numOrNull(r.advantage),
    perTurnRewards: numbersOrNull(r.per_turn_rewards),
    perTurnAdvantages: numbersOrNull(r.per_turn_advantages),
    host: textOrNull(r.host),
    discardedTokens: Number(r.discarded_tokens),
    judgements: jsonOf(r.judgements) as JudgementRecord[],
    playedEndReason: EndReasonSchema.nullable().parse(r.played_end_reason),
    envMs: Number(r.env_ms ?? 0),
  };
}

/** The fields a transition changes, all in one statement (column-update.ts says why). */
const UPDATABLE = [
  "state",
  "maxTurns",
  "openingCount",
  "turns",
  "responseText",
  "endReason",
  "failureReason",
  "failureDetail",
  "redispatches",
  "promptTokens",
  "completionTokens",
  "totalTokens",
  "finishedAt",
  "reward",
  "advantage",
  "perTurnRewards",
  "perTurnAdvantages",
  "host",
  "discardedTokens",
  "judgements",
  "playedEndReason",
  "envMs",
] as const;

/** An episode as `insert` writes it, and as the table's defaults fill it in. */
function newEpisode(idx: number, startedAt: number): EpisodeRow {
  return {
    idx,
    state: "opening",
    maxTurns: null,
    openingCount: null,
    turns: 0,
    responseText: "",
    endReason: null,
    failureReason: null,
    failureDetail: null,
    redispatches: 0,
    promptTokens: null,
    completionTokens: null,
    totalTokens: null,
    startedAt,
    finishedAt: null,
    reward: null,
    advantage: null,
    perTurnRewards: null,
    perTurnAdvantages: null,
    host: null,
    discardedTokens: 0,
    judgements: [],
    playedEndReason: null,
    envMs: 0,
  };
}

export class EpisodesTable {
  private mirror: EpisodeRow[] | null = null;
  private readonly update: ColumnUpdate<(typeof UPDATABLE)[number]>;

  constructor(private readonly db: GroupDatabase) {
    this.update = new ColumnUpdate(db, "episodes", UPDATABLE, "idx = ?");
    db.onReset(() => {
      this.mirror = null;
    });
  }

  private get rows(): EpisodeRow[] {
    this.mirror ??= this.db.exec("SELECT * FROM episodes ORDER BY idx").toArray().map(toEpisode);
    return this.mirror;
  }

  all(): EpisodeRow[] {
    return [...this.rows];
  }

  get(idx: number): EpisodeRow {
    const episode = this.rows[idx];
    if (episode === undefined) throw new Error(`no episode ${idx}`);
    return episode;
  }

  allTerminal(): boolean {
    return this.rows.every((e) => TERMINAL_STATES.includes(e.state));
  }

  /**
   * Writes the changed fields in the one UPDATE (JSON where the column holds JSON); the mirror
   * takes them once the write commits.
   */
  private change(idx: number, patch: Partial<Omit<EpisodeRow, "idx" | "startedAt">>): void {
    const json = (value: unknown) =>
      value === undefined ? undefined : value === null ? null : JSON.stringify(value);
    this.update.run(
      {
        ...patch,
        reward: json(patch.reward),
        perTurnRewards: json(patch.perTurnRewards),
        perTurnAdvantages: json(patch.perTurnAdvantages),
        judgements: json(patch.judgements),
      },
      idx,
    );
    this.db.afterCommit(() => {
      this.rows[idx] = { ...this.get(idx), ...patch };
    });
  }

  /** Every episode of a new group, waiting to open. */
  insert(groupSize: number, startedAt: number): void {
    for (let idx = 0; idx < groupSize; idx++)
      this.db.exec(
        "INSERT INTO episodes (idx, state, started_at) VALUES (?, 'opening', ?)",
        idx,
        startedAt,
      );
    // A new group's rows are known without reading them back.
    const rows = Array.from({ length: groupSize }, (_, idx) => newEpisode(idx, startedAt));
    this.db.afterCommit(() => {
      this.mirror = rows;
    });
  }

  /**
   * Its opening prompt is recorded: it waits for its first generation. `envMs`: what the opening
   * took in environment code.
   */
  opened(idx: number, openingCount: number, maxTurns: number, envMs = 0): void {
    const spent = this.get(idx).envMs + envMs;
    this.change(idx, { state: "generating", openingCount, maxTurns, envMs: spent });
  }

  /** Its generations go to `host` from now on. */
  routed(idx: number, host: string): void {
    this.change(idx, { host });
  }

  /** Its action is recorded: it waits for the environment's step. */
  sampled(idx: number, counts: TokenCounts): void {
    this.change(idx, { state: "stepping", turns: this.get(idx).turns + 1, ...counts });
  }

  /** The environment answered; the episode waits for its next generation unless it `ends`. */
  stepped(idx: number, responseText: string, ends: boolean, envMs = 0): void {
    const spent = this.get(idx).envMs + envMs;
    this.change(
      idx,
      ends ? { responseText, envMs: spent } : { responseText, state: "generating", envMs: spent },
    );
  }

  /** Judge calls its grading made, after those of earlier gradings. */
  judged(idx: number, records: readonly JudgementRecord[]): void {
    if (records.length > 0)
      this.change(idx, { judgements: [...this.get(idx).judgements, ...records] });
  }

  /**
   * It ended with a recorded status and reason; a failure also keeps its detail. An episode that
   * had ended already (its grading failed it) keeps the end it played to.
   */
  ended(idx: number, end: EpisodeEnd, finishedAt: number, envMs = 0): void {
    const before = this.get(idx);
    this.change(idx, {
      ...(envMs > 0 ? { envMs: before.envMs + envMs } : {}),
      ...(TERMINAL_STATES.includes(before.state) ? { playedEndReason: before.endReason } : {}),
      state: end.state,
      endReason: end.reason,
      failureReason: end.state === "failed" ? end.reason : null,
      failureDetail: "detail" in end ? (end.detail ?? null) : null,
      finishedAt,
    });
  }

  /** Its generation was lost with an earlier instance of the object and goes out again. */
  redispatched(idx: number): void {
    this.change(idx, { redispatches: this.get(idx).redispatches + 1 });
  }

  /** An interrupting pause aborted its generation, which had produced `tokens`, not kept. */
  discarded(idx: number, tokens: number): void {
    this.change(idx, { discardedTokens: this.get(idx).discardedTokens + tokens });
  }

  rewarded(idx: number, reward: RewardResult): void {
    this.change(idx, { reward });
  }

  credited(credit: EpisodeCredit): void {
    const { idx, ...patch } = credit;
    this.change(idx, patch);
  }
}
