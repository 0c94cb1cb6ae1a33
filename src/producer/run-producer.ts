/**
 * A run that produces itself: one object per run starts its groups from a dataset, as room frees
 * (its own in-flight bound, the run's pacing and pause), covers the dataset `epochs` times and
 * resamples an example whose group landed uniform (dynamic sampling). It is driven by its alarm
 * alone, and every start is written down before it is sent under a key naming the run, epoch,
 * example and attempt, so a restart or a SIGKILL anywhere resumes with no group lost or doubled.
 */
import { DurableObject } from "cloudflare:workers";
import { ApiError } from "../api/errors";
import { startGroup } from "../api/groups";
import { spentAgainst } from "../api/start-limits";
import { describeReached, hasLimits } from "../costs/budget";
import { runPacing } from "../db/queries";
import { readBudget } from "../db/run-budgets";
import { readRunPolicy } from "../db/run-policies";
import { knownPolicy } from "../policy/known-policy";
import { pacing } from "../policy/pacing";
import { type AskedGroupRequest, StartGroupRequestSchema } from "../rollout/group-spec";
import { describeZodError, errorMessage, type TaskExample } from "../sdk";
import { migrate } from "../utils/migrations";
import { PRODUCER_MIGRATIONS } from "./migrations";
import { recentSolveRates, skipReason } from "./pool-sampler";
import { groupTemplate, type ProducerRequest } from "./producer-request";
import { type ProducerRow, ProducerStorage, type StartRow } from "./producer-storage";
import { producerView } from "./producer-view";
import { attemptSeed, epochOrder, planDigest } from "./production-plan";
import { StartFollower, startKey } from "./start-follower";

/** How often a running producer looks at its groups and the room it has. */
export const TICK_MS = 500;
/** Starts sent at once within a tick: each checks its example and reaches a group object. */
const START_CONCURRENCY = 4;
/**
 * How long starts wait after the run's budget refused one before asking again (each ask reads
 * the run's spend): raising the budget wakes the producer at once instead.
 */
const BUDGET_RECHECK_MS = 10_000;
/**
 * How long a read of the run's spend serves the producer's ticks: each read sums the run's landed
 * episodes (and asks its groups in flight), so a tick every 500 ms does not pay for one each.
 */
const BUDGET_READ_MS = 2_000;

/** One tick's producer: its request, and which producer it is (`created_at`). */
interface Tick {
  runId: string;
  request: ProducerRequest;
  id: string;
}

export interface ProducerStart {
  runId: string;
  request: ProducerRequest;
  envVersion: string;
  examples: readonly TaskExample[];
  datasetSha256: string;
  /** The principal of the POST that made it: its starts count against that token's quota. */
  principal: string | null;
}

export type ProducerStartOutcome = "started" | "already_running" | "conflict";

export interface ProducerApi {
  start(start: ProducerStart): Promise<ProducerStartOutcome>;
  status(): Promise<ReturnType<typeof producerView> | null>;
  stop(reason: string): Promise<ReturnType<typeof producerView> | null>;
  /** The run's budget changed: starts waiting on it are tried at once. */
  budgetChanged(): Promise<void>;
}

export class RunProducer extends DurableObject<Env> implements ProducerApi {
  private readonly store: ProducerStorage;
  private readonly follower: StartFollower;
  /** Each epoch's order, computed once per instance (it is a pure function of the request). */
  private readonly orders = new Map<string, number[]>();
  /** Starts this instance has on the wire: while any is, an unanswered start may yet arrive. */
  private sending = 0;
  /**
   * No start is sent before this (epoch ms): a limit refused one. In memory: a restart asks
   * once more, sooner.
   */
  private waitUntil = 0;
  /** The budget's room as last read, until when it serves, and the groups started since. */
  private budgetRead: { room: number; until: number; startedSince: number } | null = null;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    migrate(ctx.storage, PRODUCER_MIGRATIONS);
    this.store = new ProducerStorage(ctx.storage.sql);
    this.follower = new StartFollower(this.store, env, ctx.storage);
  }

  async start(start: ProducerStart): Promise<ProducerStartOutcome> {
    const current = this.store.producer();
    if (current?.state === "running")
      return JSON.stringify(current.request) === JSON.stringify(start.request) &&
        current.datasetSha256 === start.datasetSha256
        ? "already_running"
        : "conflict";
    this.orders.clear();
    this.waitUntil = 0;
    this.budgetRead = null;
    this.store.begin(
      {
        runId: start.runId,
        request: start.request,
        envVersion: start.envVersion,
        datasetSha256: start.datasetSha256,
        planDigest: await planDigest(groupTemplate(start.request), start.datasetSha256),
        // Names this producer: a tick that awaited across a stop and a new start sees it changed.
        createdAt: `${new Date().toISOString()}~${crypto.randomUUID().slice(0, 8)}`,
        startedBy: start.principal,
      },
      start.examples,
    );
    await this.ctx.storage.setAlarm(Date.now());
    return "started";
  }

  async status() {
    const producer = this.store.producer();
    return producer === null ? null : producerView(producer, this.store);
  }

  async budgetChanged(): Promise<void> {
    if (this.store.producer()?.state !== "running") return;
    this.waitUntil = 0;
    this.budgetRead = null;
    await this.ctx.storage.setAlarm(Date.now());
  }

  /**
   * No new group starts, and resamples waiting are cancelled; the groups in flight land as any
   * group does, and the alarm goes on following them so the view ends true.
   */
  async stop(reason: string) {
    await this.stopWith(reason);
    return this.status();
  }

  /** Stops a running producer, and arms the alarm that follows its groups in flight. */
  private async stopWith(reason: string): Promise<void> {
    if (this.store.producer()?.state !== "running") return;
    this.ctx.storage.transactionSync(() => {
      this.store.finish("stopped", reason);
      this.store.cancelPending();
    });
    await this.ctx.storage.setAlarm(Date.now() + TICK_MS);
  }

  /**
   * One tick. A fault (D1 or a group object not answering) is recorded and the next tick tries
   * again: the alarm is re-armed whatever happened, since an alarm that throws is retried only a
   * few times before the platform gives it up, and the run would stop with nobody told.
   */
  override async alarm(): Promise<void> {
    const producer = this.store.producer();
    if (producer?.state === "stopped") return this.followAfterStop(producer);
    if (producer?.state !== "running") return;
    const request = producer.request as ProducerRequest;
    const tick: Tick = { runId: producer.runId, request, id: producer.createdAt };
    try {
      await this.follower.followLandings(request.dynamic_sampling?.max_resamples ?? 0, () =>
        this.current(tick),
      );
      await this.startWhatFits(tick);
      if (this.current(tick)) this.store.setLastError(null);
    } catch (error) {
      if (this.current(tick)) this.store.setLastError(errorMessage(error));
    }
    if (!this.current(tick)) return;
    if (this.finished(request)) this.store.finish("done", null);
    else await this.ctx.storage.setAlarm(Date.now() + TICK_MS);
  }

  /**
   * Whether the producer this tick began for still runs. A tick awaits D1 and group objects, and
   * meanwhile a DELETE and a new POST may have replaced it: what it read is then another's.
   */
  private current(tick: Tick): boolean {
    const producer = this.store.producer();
    return producer?.state === "running" && producer.createdAt === tick.id;
  }

  /** Every epoch's every slot has been started and nothing waits, starts or runs. */
  private finished(request: ProducerRequest): boolean {
    const producer = this.store.producer();
    if (producer === null || producer.epoch < request.epochs) return false;
    return this.store.withStatus("pending", "starting", "running").length === 0;
  }

  /**
   * A stopped producer's tick: it starts nothing, resamples nothing, and follows its groups in
   * flight until each has landed, so `groups_in_flight` ends at 0 and the counts are final. A
   * start the stop caught unanswered is looked for under its key: running if a group has it,
   * `cancelled` if none does and no send is on the wire.
   */
  private async followAfterStop(producer: ProducerRow): Promise<void> {
    const mine = () => {
      const now = this.store.producer();
      return now?.state === "stopped" && now.createdAt === producer.createdAt;
    };
    try {
      if (this.sending === 0) await this.follower.settleUnanswered(producer, mine);
      await this.follower.followLandings(0, mine);
      if (mine()) this.store.setLastError(null);
    } catch (error) {
      if (mine()) this.store.setLastError(errorMessage(error));
    }
    if (mine() && this.store.withStatus("starting", "running").length > 0)
      await this.ctx.storage.setAlarm(Date.now() + TICK_MS);
  }

  /**
   * How many new groups may start now: this producer's bound (less what is in flight, starts
   * being sent again included), the run's pacing and pause.
   */
  private async room(runId: string, request: ProducerRequest): Promise<number> {
    const inFlight = this.store.withStatus("starting", "running").length;
    let room = request.max_in_flight - inFlight;
    if (room <= 0) return 0;
    const policy = await readRunPolicy(this.env.DB, runId);
    if (policy?.paused === true) return 0;
    room = Math.min(room, await this.budgetRoom(runId));
    if (room <= 0) return 0;
    if (request.max_ahead !== undefined) {
      const rows = await runPacing(this.env.DB, runId);
      const ahead = pacing(rows, policy === null ? null : knownPolicy(policy)).ahead;
      room = Math.min(room, request.max_ahead - ahead);
    }
    return Math.max(0, room);
  }

  /**
   * The groups the run's budget leaves room for (Infinity without one): none once a limit is
   * reached (the producer then waits, saying why), and no more than `max_groups` allows. The
   * starts check the budget again; reading it here keeps a tick from sending starts all bound to
   * be refused, and, for `max_groups`, from starting several past it at once.
   */
  private async budgetRoom(runId: string): Promise<number> {
    const read = this.budgetRead;
    if (read !== null && Date.now() < read.until) return read.room - read.startedSince;
    const room = await this.readBudgetRoom(runId);
    this.budgetRead = { room, until: Date.now() + BUDGET_READ_MS, startedSince: 0 };
    return room;
  }

  private async readBudgetRoom(runId: string): Promise<number> {
    const budget = await readBudget(this.env.DB, runId);
    if (budget === null || !hasLimits(budget.limits)) return Number.POSITIVE_INFINITY;
    const { reached, spent } = await spentAgainst(this.env, runId, budget.limits);
    if (reached.length > 0) {
      this.store.setWaiting(`budget_exhausted: ${describeReached(runId, reached)}`);
      // Read again in BUDGET_RECHECK_MS, or at once when the budget is raised (budgetChanged).
      this.waitUntil = Date.now() + BUDGET_RECHECK_MS;
      return 0;
    }
    if (this.store.producer()?.waiting?.startsWith("budget_exhausted") === true)
      this.store.setWaiting(null);
    const maxGroups = budget.limits.max_groups;
    return maxGroups === null ? Number.POSITIVE_INFINITY : maxGroups - spent.groups;
  }

  /**
   * The next new starts, in order: waiting resamples, then the epoch's next examples. Each is
   * written down before it is sent.
   */
  private async next(tick: Tick, room: number): Promise<StartRow[]> {
    const { runId, request } = tick;
    const picked: StartRow[] = [];
    for (const pending of this.store.withStatus("pending")) {
      if (picked.length >= room) break;
      picked.push(pending);
    }
    const size = this.store.exampleCount();
    while (picked.length < room) {
      const producer = this.store.producer();
      if (producer === null || producer.epoch >= request.epochs) break;
      const { epoch, slot } = producer;
      const order = this.order(tick.id, epoch, size, request.shuffle_seed);
      const pos = order[slot] as number;
      const key = `new:${epoch}:${pos}`;
      const skip = await this.skipReason(runId, request, producer.envVersion, pos);
      if (!this.current(tick)) break;
      this.ctx.storage.transactionSync(() => {
        this.store.plan(
          key,
          { epoch, pos, attempt: 0 },
          skip === null ? "starting" : "skipped",
          skip,
        );
        if (slot + 1 < size) this.store.advance(epoch, slot + 1);
        else this.store.advance(epoch + 1, 0);
      });
      if (skip !== null) continue;
      picked.push({
        key,
        epoch,
        pos,
        attempt: 0,
        status: "starting",
        groupId: null,
        uniform: null,
        detail: null,
      });
    }
    return picked;
  }

  /** The pool sampler's verdict on the example's next epoch: why it is skipped, or null. */
  private async skipReason(
    runId: string,
    request: ProducerRequest,
    envVersion: string,
    pos: number,
  ): Promise<string | null> {
    const options = request.pool;
    if (request.sampler !== "pool" || options === undefined) return null;
    const example = this.store.example(pos);
    const history = await recentSolveRates(
      this.env.DB,
      { runId, env: request.env, envVersion, exampleId: example.id },
      Math.max(options.skip_solved_after ?? 0, options.skip_unsolved_after ?? 0),
    );
    return skipReason(options, history, this.store.skippedInARow(pos));
  }

  private order(producer: string, epoch: number, size: number, seed: number | undefined) {
    const key = `${producer} ${epoch}`;
    let order = this.orders.get(key);
    if (order === undefined) {
      order = epochOrder(size, epoch, seed);
      this.orders.set(key, order);
    }
    return order;
  }

  /**
   * Sends again every start written but never answered (a restart or SIGKILL between the two:
   * already counted in flight, so sent whatever the room), then what room allows.
   */
  private async startWhatFits(tick: Tick): Promise<void> {
    if (Date.now() < this.waitUntil) return;
    const unanswered = this.store.withStatus("starting");
    const room = await this.room(tick.runId, tick.request);
    if (!this.current(tick)) return;
    const starts = [...unanswered, ...(room > 0 ? await this.next(tick, room) : [])];
    let at = 0;
    const worker = async () => {
      while (at < starts.length && this.current(tick) && Date.now() >= this.waitUntil) {
        const start = starts[at++] as StartRow;
        await this.send(tick, start);
      }
    };
    // Every worker runs to its end before the tick does; the first fault is the tick's.
    const ended = await Promise.allSettled(Array.from({ length: START_CONCURRENCY }, worker));
    const fault = ended.find((e) => e.status === "rejected");
    if (fault !== undefined) throw fault.reason;
  }

  /** Sends one start under its key; a refusal is recorded, never dropped. */
  private async send(tick: Tick, start: StartRow): Promise<void> {
    const { runId, request } = tick;
    const producer = this.store.producer();
    if (producer === null) return;
    const example = this.store.example(start.pos);
    const key = await startKey(producer, start, example.id);
    const template = groupTemplate(request) as Omit<AskedGroupRequest, "example" | "run_id">;
    const sampling = template.sampling;
    const seed = attemptSeed(sampling?.seed, start.epoch, start.attempt);
    // Parsed as the route parses a POST (defaults filled in); the POST that made this producer
    // checked the same fields against its first example.
    const asked = StartGroupRequestSchema.safeParse({
      ...template,
      example,
      run_id: runId,
      env_version: producer.envVersion,
      sampling: { ...sampling, ...(seed === undefined ? {} : { seed }) },
    });
    if (!asked.success) {
      this.store.mark(start.key, "rejected", { detail: describeZodError(asked.error) });
      return;
    }
    this.sending++;
    try {
      const started = await startGroup(this.env, asked.data, key, producer.startedBy);
      if (!this.current(tick)) return;
      this.store.mark(start.key, "running", { groupId: started.groupId });
      if (this.budgetRead !== null) this.budgetRead.startedSince++;
      if (this.store.producer()?.waiting != null) this.store.setWaiting(null);
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      if (!this.current(tick)) return;
      // A limit: the start stays unanswered, sent again once the budget is raised (it wakes the
      // producer) or the quota's Retry-After has passed. Nothing is lost and nothing is skipped.
      if (error.code === "budget_exhausted" || error.code === "quota_exceeded") {
        const retryS = Number(error.headers?.["retry-after"] ?? Number.NaN);
        this.waitUntil = Date.now() + (Number.isFinite(retryS) ? retryS * 1000 : BUDGET_RECHECK_MS);
        this.store.setWaiting(`${error.code}: ${error.message}`);
        this.budgetRead = null;
        return;
      }
      // A 503 (an environment or tokenizer check that could not answer) is retried next tick.
      if (error.status === 503) return;
      if (error.status === 422) {
        this.store.mark(start.key, "rejected", { detail: error.message });
        return;
      }
      // Anything else will refuse every example the same way: stop, and say why.
      this.store.mark(start.key, "rejected", { detail: error.message });
      await this.stopWith(`${error.code}: ${errorMessage(error)}`);
    } finally {
      this.sending--;
    }
  }
}
