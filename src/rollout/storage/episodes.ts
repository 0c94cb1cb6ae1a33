/**
 * Each episode's state machine row: where it is (opening, generating, stepping, or how it
 * ended), what it has used, and, once the group is graded, its reward and credit. Read from an
 * in-memory mirror that moves on only once a write has committed.
 */
import { z } from "zod";
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
  };
}

export class EpisodesTable {
  private mirror: EpisodeRow[] | null = null;

  constructor(private readonly db: GroupDatabase) {
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

  private patch(idx: number, patch: Partial<EpisodeRow>): void {
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
    this.db.afterCommit(() => {
      this.mirror = null;
    });
  }

  /** Its opening prompt is recorded: it waits for its first generation. */
  opened(idx: number, openingCount: number, maxTurns: number): void {
    this.db.exec(
      "UPDATE episodes SET state = 'generating', opening_count = ?, max_turns = ? WHERE idx = ?",
      openingCount,
      maxTurns,
      idx,
    );
    this.patch(idx, { state: "generating", openingCount, maxTurns });
  }

  /** Its action is recorded: it waits for the environment's step. */
  sampled(idx: number, counts: TokenCounts): void {
    const turns = this.get(idx).turns + 1;
    this.db.exec(
      `UPDATE episodes SET state = 'stepping', turns = ?, prompt_tokens = ?, completion_tokens = ?,
         total_tokens = ? WHERE idx = ?`,
      turns,
      counts.promptTokens,
      counts.completionTokens,
      counts.totalTokens,
      idx,
    );
    this.patch(idx, { state: "stepping", turns, ...counts });
  }

  /** The environment answered; the episode waits for its next generation unless it `ends`. */
  stepped(idx: number, responseText: string, ends: boolean): void {
    if (ends)
      this.db.exec("UPDATE episodes SET response_text = ? WHERE idx = ?", responseText, idx);
    else
      this.db.exec(
        "UPDATE episodes SET response_text = ?, state = 'generating' WHERE idx = ?",
        responseText,
        idx,
      );
    this.patch(idx, ends ? { responseText } : { responseText, state: "generating" });
  }

  /** It ended with a recorded status and reason; a failure also keeps its detail. */
  ended(idx: number, end: EpisodeEnd, finishedAt: number): void {
    const detail = "detail" in end ? (end.detail ?? null) : null;
    const failureReason = end.state === "failed" ? end.reason : null;
    this.db.exec(
      `UPDATE episodes SET state = ?, end_reason = ?, failure_reason = ?, failure_detail = ?,
         finished_at = ? WHERE idx = ?`,
      end.state,
      end.reason,
      failureReason,
      detail,
      finishedAt,
      idx,
    );
    this.patch(idx, {
      state: end.state,
      endReason: end.reason,
      failureReason,
      failureDetail: detail,
      finishedAt,
    });
  }

  /** Its generation was lost with an earlier instance of the object and goes out again. */
  redispatched(idx: number): void {
    this.db.exec("UPDATE episodes SET redispatches = redispatches + 1 WHERE idx = ?", idx);
    this.patch(idx, { redispatches: this.get(idx).redispatches + 1 });
  }

  rewarded(idx: number, reward: RewardResult): void {
    this.db.exec("UPDATE episodes SET reward = ? WHERE idx = ?", JSON.stringify(reward), idx);
    this.patch(idx, { reward });
  }

  credited(credit: EpisodeCredit): void {
    this.db.exec(
      "UPDATE episodes SET advantage = ?, per_turn_rewards = ?, per_turn_advantages = ? WHERE idx = ?",
      credit.advantage,
      credit.perTurnRewards ? JSON.stringify(credit.perTurnRewards) : null,
      credit.perTurnAdvantages ? JSON.stringify(credit.perTurnAdvantages) : null,
      credit.idx,
    );
    const { idx, ...patch } = credit;
    this.patch(idx, patch);
  }
}
