/**
 * The group object's storage as one thing: the database and its tables, and the transitions
 * that write several tables at once — each one transaction, written before the object acts on
 * it, so a restart finds an episode exactly before or after a transition, never inside one.
 */
import type { ChatMessage, JsonObject, RewardResult } from "../../sdk";
import type { HostTokens } from "../../tokens/turn-tokens";
import type { GroupSpec } from "../group-spec";
import { END, type EpisodeEnd } from "../outcomes";
import { GroupDatabase } from "./database";
import { type EpisodeCredit, EpisodesTable, type TokenCounts } from "./episodes";
import { GenerationsTable } from "./generations";
import { GroupStateTable } from "./group-state";
import { InterruptedTurnsTable } from "./interrupted-turns";
import { PolicyTable } from "./policy";
import { TimersTable } from "./timers";
import { TokensTable } from "./tokens";
import { type EpisodeToolSet, ToolsTable } from "./tools";
import { type ActionStats, TranscriptsTable } from "./transcripts";

/** What a sampled turn records of its tokens, beside its action. */
export type TurnTokenRecord =
  /** The host's token ids and logprobs. */
  | { kind: "exact"; host: HostTokens; sampling: { temperature: number; topP: number } }
  /** None came: the episode is no longer token-exact, and this says why. */
  | { kind: "inexact"; reason: string }
  /** The group asked for none. */
  | { kind: "off" };

/** What the environment answered to a step. */
export interface StepRecord {
  messages: readonly ChatMessage[];
  metadata: JsonObject;
  done: boolean;
}

export class GroupStorage {
  readonly db: GroupDatabase;
  readonly group: GroupStateTable;
  readonly episodes: EpisodesTable;
  readonly transcripts: TranscriptsTable;
  readonly generations: GenerationsTable;
  readonly timers: TimersTable;
  readonly tokens: TokensTable;
  readonly tools: ToolsTable;
  readonly policy: PolicyTable;
  readonly interrupted: InterruptedTurnsTable;
  private holds = false;

  constructor(storage: DurableObjectStorage, now: () => number = Date.now) {
    this.db = new GroupDatabase(storage, now);
    this.group = new GroupStateTable(this.db);
    this.episodes = new EpisodesTable(this.db);
    this.transcripts = new TranscriptsTable(this.db);
    this.generations = new GenerationsTable(this.db);
    this.timers = new TimersTable(this.db);
    this.tokens = new TokensTable(this.db);
    this.tools = new ToolsTable(this.db);
    this.policy = new PolicyTable(this.db);
    this.interrupted = new InterruptedTurnsTable(this.db);
    this.db.onReset(() => {
      this.holds = false;
    });
  }

  /** Whether this object holds a group (it holds nothing before start and after landing). */
  exists(): boolean {
    this.holds ||= this.db.hasGroup();
    return this.holds;
  }

  create(spec: GroupSpec): void {
    this.db.upgrade();
    this.db.transaction(() => {
      this.group.insert(spec);
      this.episodes.insert(spec.request.group_size, this.db.now());
    });
    this.db.created();
    this.holds = true;
  }

  /** The opening prompt is recorded, with the episode's tools; it waits for its generation. */
  recordOpening(
    idx: number,
    messages: readonly ChatMessage[],
    maxTurns: number,
    tools: EpisodeToolSet | null,
    envMs = 0,
  ): void {
    this.db.transaction(() => {
      this.transcripts.append(idx, null, messages);
      this.episodes.opened(idx, messages.length, maxTurns, envMs);
      if (tools !== null) this.tools.record(idx, tools);
    });
  }

  /**
   * The episode's generations go to `host` from now on; the group's first routed episode makes
   * it the group's home. Written before the host is called, so a restart routes the same way.
   */
  routeEpisode(idx: number, host: string): void {
    if (this.episodes.get(idx).host === host && this.group.get().homeHost !== null) return;
    this.db.transaction(() => {
      if (this.episodes.get(idx).host !== host) this.episodes.routed(idx, host);
      if (this.group.get().homeHost === null) this.group.setHomeHost(host);
    });
  }

  /** A generation sent by an earlier instance of this object, lost with it: send it again. */
  recordRedispatch(idx: number): void {
    this.db.transaction(() => {
      this.generations.requeue(idx);
      this.episodes.redispatched(idx);
    });
  }

  /**
   * An interrupting pause aborted the generation: it goes out again after the resume, and the
   * `tokens` it had produced are counted as discarded.
   */
  recordInterrupt(idx: number, tokens: number): void {
    this.db.transaction(() => {
      this.generations.unsend(idx);
      if (tokens > 0) this.episodes.discarded(idx, tokens);
    });
  }

  /**
   * An interrupting pause aborted a token-in generation of the episode's current turn: it goes
   * out again after the resume, continuing from the tokens it had `received`, kept here (after
   * what earlier interrupts of the turn kept) with the `version` that sampled them. Tokens too
   * many to keep in a row are counted as discarded instead, and the turn restarts.
   */
  keepInterrupted(
    idx: number,
    prompt: Int32Array,
    received: { ids: readonly number[]; logprobs: readonly number[]; content: string },
    version: number,
  ): void {
    const turn = this.episodes.get(idx).turns;
    this.db.transaction(() => {
      this.generations.unsend(idx);
      if (!this.interrupted.keep(idx, turn, prompt, received, version)) {
        const dropped = this.interrupted.drop(idx) + received.ids.length;
        this.episodes.discarded(idx, dropped);
      }
    });
  }

  /** The host asked for a long wait: the generation sleeps in storage, woken by its timer. */
  parkGeneration(idx: number, retryAt: number, attempts: number): void {
    this.db.transaction(() => {
      this.generations.park(idx, retryAt, attempts);
      this.timers.set({ kind: "retry", episode: idx }, retryAt);
    });
  }

  /**
   * The sampled action is appended with its tokens, and the episode moves on to stepping: one
   * write, so no restart finds the action without its tokens or the reverse.
   */
  recordAction(
    idx: number,
    message: ChatMessage,
    stats: ActionStats,
    tokens: TurnTokenRecord,
  ): void {
    const episode = this.episodes.get(idx);
    const attempts = stats.attempts + (this.generations.get(idx)?.attempts ?? 0);
    const counted = stats.promptTokens !== null && stats.completionTokens !== null;
    const counts: TokenCounts = counted
      ? {
          promptTokens: (episode.promptTokens ?? 0) + (stats.promptTokens ?? 0),
          completionTokens: (episode.completionTokens ?? 0) + (stats.completionTokens ?? 0),
          totalTokens: (stats.promptTokens ?? 0) + (stats.completionTokens ?? 0),
        }
      : episode;
    this.db.transaction(() => {
      this.transcripts.append(idx, episode.turns, [message], {
        stats: { ...stats, attempts },
        truncated: stats.finishReason === "length",
      });
      this.generations.remove(idx);
      if (tokens.kind === "exact")
        this.tokens.record(idx, episode.turns, tokens.host, tokens.sampling);
      else if (tokens.kind === "inexact") this.tokens.markInexact(idx, tokens.reason);
      this.interrupted.continued(idx, episode.turns);
      this.episodes.sampled(idx, {
        promptTokens: counts.promptTokens,
        completionTokens: counts.completionTokens,
        totalTokens: counts.totalTokens,
      });
    });
  }

  /** The environment's reply is appended; the episode goes on, or ends. */
  recordStep(idx: number, step: StepRecord, responseText: string, envMs = 0): void {
    const episode = this.episodes.get(idx);
    const turn = episode.turns - 1;
    const ending: EpisodeEnd | null = step.done
      ? { state: "completed", reason: END.done }
      : episode.maxTurns !== null && episode.turns >= episode.maxTurns
        ? { state: "completed", reason: END.max_turns }
        : null;
    this.db.transaction(() => {
      this.transcripts.append(idx, turn, step.messages);
      this.transcripts.recordStep(idx, turn, step.metadata);
      this.episodes.stepped(idx, responseText, ending !== null, envMs);
      if (ending !== null) this.end(idx, ending);
    });
  }

  /**
   * Ends an episode with a recorded status and reason; a failure also keeps its detail. `envMs`:
   * the environment call that ended it, and how long it took.
   */
  finish(idx: number, end: EpisodeEnd, envMs = 0): void {
    this.db.transaction(() => this.end(idx, end, envMs));
  }

  private end(idx: number, end: EpisodeEnd, envMs = 0): void {
    // Tokens kept for a continuation that will not come are discarded, and counted.
    const dropped = this.interrupted.drop(idx);
    if (dropped > 0) this.episodes.discarded(idx, dropped);
    this.episodes.ended(idx, end, this.db.now(), envMs);
    this.generations.remove(idx);
  }

  recordReward(idx: number, reward: RewardResult): void {
    this.episodes.rewarded(idx, reward);
  }

  /** Credit is assigned to every episode at once; the group moves on to landing. */
  recordCredit(
    credit: readonly EpisodeCredit[],
    creditApplied: string,
    warnings: readonly string[],
  ): void {
    this.db.transaction(() => {
      for (const c of credit) this.episodes.credited(c);
      this.group.recordCredit(creditApplied, warnings);
    });
  }

  /** How many generations each episode has sent: its sampled turns, and one still pending. */
  sentTurns(): Map<number, number> {
    return new Map(
      this.episodes.all().map((e) => [e.idx, e.turns + (this.generations.has(e.idx) ? 1 : 0)]),
    );
  }

  /** After landing: the group's data lives in D1 now; nothing stays here. */
  deleteAll(): Promise<void> {
    return this.db.deleteAll();
  }
}
