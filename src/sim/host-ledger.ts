/**
 * What the simulator remembers across requests: counts by outcome and by model (generations, and
 * `/tokenize` apart), the tries of each distinct request (counted faults count retries), when
 * each generation finished (for the pipeline's overhead between turns), and with `record` the
 * tokens it sent.
 */
import { hashString } from "../utils/random";

/** Requests counted by outcome, in all and by the model asked for (directives and all). */
export interface Tally {
  requests: number;
  outcomes: Record<string, number>;
  byModel: Record<string, { requests: number; outcomes: Record<string, number> }>;
}

/** How a `/tokenize` request was answered: its tokens, or the error status it got instead. */
export type TokenizeOutcome = "tokenize_ok" | `tokenize_error_${number}`;

/** Generations (chat and `/v1/completions`) at the top level; `/tokenize` requests apart. */
export interface SimulatorStats extends Tally {
  tokenize: Tally;
  /**
   * Pipeline time between turns, as the host sees it: from finishing generation t of an
   * episode to receiving its request t+1 (stepping the environment, persisting, queueing).
   */
  turnOverheadMs: { count: number; p50: number | null; p99: number | null; mean: number | null };
  /** Time with at least one generation running, ms (since the start or the last reset). */
  busyMs: number;
  /** Completion tokens streamed to clients that closed the stream before its end. */
  abandonedTokens: number;
}

/** One gap between turns: when the next request arrived, how long after its parent, at which turn. */
export interface TurnGap {
  at: number;
  ms: number;
  /** The sampled actions in the transcript so far: the next generation's turn index. */
  turn: number;
}

/** The tokens of one answer, as the host sent them (`GET /sim/answers`). */
export interface RecordedAnswer {
  prompt_token_ids: number[];
  token_ids: number[];
  logprobs: number[];
}

export interface TranscriptMessage {
  role: string;
  content?: string | null | undefined;
}

/** Identifies a transcript by its roles and contents, as edgeroll sends them back. */
function transcriptKey(messages: readonly TranscriptMessage[]): number {
  return hashString(JSON.stringify(messages.map((m) => [m.role, m.content ?? ""])));
}

/** The simulator's percentile of sorted values (the bench computes its by-turn figures with it). */
export function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? null;
}

function summarize(samples: readonly number[]): SimulatorStats["turnOverheadMs"] {
  const sorted = [...samples].sort((a, b) => a - b);
  const mean = sorted.length > 0 ? sorted.reduce((a, b) => a + b, 0) / sorted.length : null;
  return { count: sorted.length, p50: percentile(sorted, 50), p99: percentile(sorted, 99), mean };
}

const emptyTally = (): Tally => ({ requests: 0, outcomes: {}, byModel: {} });

function tally(totals: Tally, model: string, outcome: string): void {
  totals.requests++;
  totals.outcomes[outcome] = (totals.outcomes[outcome] ?? 0) + 1;
  const perModel = totals.byModel[model] ?? { requests: 0, outcomes: {} };
  totals.byModel[model] = perModel;
  perModel.requests++;
  perModel.outcomes[outcome] = (perModel.outcomes[outcome] ?? 0) + 1;
}

export class HostLedger {
  private readonly totals = emptyTally();
  private readonly tokenizeTotals = emptyTally();
  /** When each answered generation finished, by the transcript it extended. */
  private readonly finishedAt = new Map<number, number>();
  private readonly overheads: number[] = [];
  private readonly gaps: TurnGap[] = [];
  private readonly attempts = new Map<string, number>();
  private readonly answers = new Map<string, RecordedAnswer>();
  private busyMs = 0;
  /** Since when some generation has been running; null while none is. */
  private busySince: number | null = null;
  private abandonedTokens = 0;
  /** For each session, each stream its client closed early: when each token sent was written. */
  private readonly abandonedWrites = new Map<string, number[][]>();
  /** Generations by their `X-Session-ID` (a router keys on it to keep a session on a replica). */
  private readonly sessions = new Map<string, number>();

  noteSession(id: string | undefined): void {
    if (id !== undefined) this.sessions.set(id, (this.sessions.get(id) ?? 0) + 1);
  }

  /** Generations that carried `X-Session-ID: id`. */
  sessionRequests(id: string): number {
    return this.sessions.get(id) ?? 0;
  }

  /** A generation request's outcome. */
  count(model: string, outcome: string): void {
    tally(this.totals, model, outcome);
  }

  /** The host's generations running went from 0 to 1 (`running`) or from 1 to 0. */
  noteRunning(running: boolean, now = Date.now()): void {
    if (running && this.busySince === null) this.busySince = now;
    else if (!running && this.busySince !== null) {
      this.busyMs += now - this.busySince;
      this.busySince = null;
    }
  }

  noteAbandoned(session: string | undefined, writtenAt: readonly number[]): void {
    this.abandonedTokens += writtenAt.length;
    if (session === undefined) return;
    const streams = this.abandonedWrites.get(session) ?? [];
    streams.push([...writtenAt]);
    this.abandonedWrites.set(session, streams);
  }

  /** The streams of `X-Session-ID: session` closed early, each as when its tokens were written. */
  abandonedStreams(session: string): number[][] {
    return (this.abandonedWrites.get(session) ?? []).map((times) => [...times]);
  }

  /** A `/tokenize` request's, kept out of the generations' counts. */
  countTokenize(model: string, outcome: TokenizeOutcome): void {
    tally(this.tokenizeTotals, model, outcome);
  }

  /** This try's number (from 1) among the tries of the request `key` names. */
  attempt(key: string): number {
    const attempt = (this.attempts.get(key) ?? 0) + 1;
    this.attempts.set(key, attempt);
    return attempt;
  }

  /** A request arrived: when it extends a generation this host finished, measure the gap. */
  noteArrival(messages: readonly TranscriptMessage[]): void {
    const lastAction = messages.findLastIndex((m) => m.role === "assistant");
    if (lastAction === -1) return;
    const parent = this.finishedAt.get(transcriptKey(messages.slice(0, lastAction + 1)));
    if (parent !== undefined && this.overheads.length < 1_000_000) {
      const at = Date.now();
      this.overheads.push(at - parent);
      const turn = messages.filter((m) => m.role === "assistant").length;
      this.gaps.push({ at, ms: at - parent, turn });
    }
  }

  /** A generation finished: `action` is what the model said after `messages`. */
  noteFinished(messages: readonly TranscriptMessage[], action: string): void {
    const transcript = [...messages, { role: "assistant", content: action }];
    this.finishedAt.set(transcriptKey(transcript), Date.now());
    // Bounded: the oldest entries go first (a Map keeps insertion order).
    if (this.finishedAt.size > 200_000)
      this.finishedAt.delete(this.finishedAt.keys().next().value as number);
  }

  keepAnswer(model: string, seed: number | undefined, answer: RecordedAnswer): void {
    this.answers.set(`${model}|${seed ?? ""}`, answer);
  }

  answer(model: string | null, seed: string | null): RecordedAnswer | undefined {
    return this.answers.get(`${model}|${seed ?? ""}`);
  }

  stats(): SimulatorStats {
    return {
      ...structuredClone(this.totals),
      tokenize: structuredClone(this.tokenizeTotals),
      turnOverheadMs: summarize(this.overheads),
      busyMs: this.busyMs + (this.busySince === null ? 0 : Date.now() - this.busySince),
      abandonedTokens: this.abandonedTokens,
    };
  }

  /** Every gap since the last reset, in arrival order (the bench's breakdown of the tail). */
  turnGaps(): TurnGap[] {
    return [...this.gaps];
  }

  resetOverheads(): void {
    this.overheads.length = 0;
    this.gaps.length = 0;
    this.sessions.clear();
  }
}
