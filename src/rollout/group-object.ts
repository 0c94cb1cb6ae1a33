/**
 * One Durable Object per rollout group. It holds only the group's transcripts and state,
 * drives its episodes concurrently, has them graded, lands the result in D1 and then deletes
 * its storage. One alarm multiplexes every timer: the heartbeat that keeps the object awake
 * while generations are in flight and resumes it after a restart, and the retries of
 * registration, scoring and landing.
 */
import { DurableObject } from "cloudflare:workers";
import { configFrom, priceBook } from "../config";
import type { Spend } from "../costs/spend";
import { readRunPolicy } from "../db/run-policies";
import type { Grant } from "../fleet/fleet-api";
import {
  fleetPermits,
  type HostPermits,
  type Routing,
  soleHostPermits,
} from "../fleet/host-permits";
import { fleetHosts } from "../fleet/hosts-config";
import { type KnownPolicy, knownPolicy } from "../policy/known-policy";
import { staleness } from "../policy/lag";
import { errorMessage } from "../sdk";
import { fleetScheduler, stepWorker } from "./bindings";
import { permitLeaseMs } from "./generation/admission";
import { tokenPolicyOf } from "./generation/token-policy";
import type { LiveGroupStatus, RolloutGroupApi, StartResult } from "./group-api";
import { finishGroup, retryDelayMs } from "./group-finish";
import type { GroupRuntime } from "./group-runtime";
import type { GroupSpec } from "./group-spec";
import { inFlightSpend } from "./in-flight-spend";
import { liveStatus } from "./live-status";
import { END, failed, TERMINAL_STATES } from "./outcomes";
import { PolicyWatch } from "./policy-watch";
import {
  knownGroupHash,
  type Reservation,
  registerGroup,
  reserveGroup,
  type StartCaps,
} from "./registration";
import { GroupStorage } from "./storage/group-storage";
import type { GroupTimer } from "./storage/timers";
import { driveEpisode } from "./turn";
import { sharedWriteTurn } from "./write-turn";

const REGISTER: GroupTimer = { kind: "register" };
const LAND: GroupTimer = { kind: "land" };

export class RolloutGroup extends DurableObject<Env> implements RolloutGroupApi {
  private readonly store = new GroupStorage(this.ctx.storage);
  private readonly policy = new PolicyWatch(this.store.policy);
  private readonly config = configFrom(this.env);
  private readonly drivers = new Map<number, Promise<void>>();
  private runtime: GroupRuntime | null = null;
  private finishing: Promise<void> | null = null;
  /** The first wake's release of what an earlier instance held; every wake waits for it. */
  private permitsReset: Promise<void> | null = null;
  /** This instance created the group: no earlier instance can have held permits for it. */
  private createdHere = false;

  /**
   * Starts the group, or recognises a retried start of the same request. `runPolicy` is the
   * run's policy as the API read it (null if its trainer never set one). With `caps` (its
   * token's quota, its run's `max_groups`), the group is created first and then registered only
   * if the caps allow (registration.ts reserveGroup), else deleted again: D1 never holds a
   * reserved row without the object that will land it, whatever crashes between the two.
   */
  async start(
    spec: GroupSpec,
    runPolicy: KnownPolicy | null = null,
    caps: StartCaps | null = null,
  ): Promise<StartResult> {
    let registered = false;
    const result = await this.ctx.blockConcurrencyWhile(async (): Promise<StartResult> => {
      if (this.store.exists()) {
        return this.store.group.get().spec.requestHash === spec.requestHash
          ? { outcome: "existing" }
          : { outcome: "conflict" };
      }
      // A group that already landed has left only its D1 rows behind.
      if (spec.idempotencyKey !== null) {
        const known = await knownGroupHash(this.env.DB, spec.groupId);
        if (known !== null)
          return known === spec.requestHash ? { outcome: "existing" } : { outcome: "conflict" };
      }
      this.store.create(spec);
      if (runPolicy !== null) this.policy.apply(runPolicy);
      this.createdHere = true;
      this.store.timers.set(REGISTER, Date.now());
      await this.rearm();
      if (caps !== null) {
        const refused = await this.reserve(spec, caps);
        if (refused !== null) return refused;
        registered = true;
      } else registered = await this.register();
      return { outcome: "created" };
    });
    if (registered) await this.refreshPolicy();
    if (result.outcome === "created" || result.outcome === "existing") await this.resume();
    return result;
  }

  /**
   * Registers the new group within its caps, or deletes it again and says which cap it is over.
   * A D1 that does not answer deletes it too, and throws: a start the caps could not be checked
   * for is not admitted.
   */
  private async reserve(spec: GroupSpec, caps: StartCaps): Promise<StartResult | null> {
    let reservation: Reservation;
    try {
      reservation = await reserveGroup(this.env.DB, spec, caps);
    } catch (error) {
      await this.store.deleteAll();
      this.createdHere = false;
      throw error;
    }
    if (reservation.kind !== "reserved") {
      await this.store.deleteAll();
      this.createdHere = false;
      return { outcome: reservation.kind };
    }
    this.store.group.markRegistered();
    this.store.timers.clear(REGISTER);
    return null;
  }

  /** The live view of a group still in flight; null when this object holds no group. */
  async status(): Promise<LiveGroupStatus | null> {
    if (!this.store.exists()) return null;
    // Being asked is a wake-up too: after a restart, do not wait for the alarm to resume.
    if (this.drivers.size === 0 && this.finishing === null) this.resume().catch(() => {});
    return liveStatus(this.store, this.policy);
  }

  /**
   * The run's policy changed (POST /v1/runs/:id/policy tells every running group): a resumed
   * run's generations go on, and a group now more than `max_lag` behind is cancelled.
   */
  async policyChanged(policy: KnownPolicy): Promise<number> {
    if (!this.store.exists() || !this.policy.apply(policy)) return this.policy.flights.count();
    // An interrupt answers once what it cut is recorded: a crash after the trainer's POST has
    // its answer loses none of the tokens kept.
    await this.policy.interruptRecorded();
    this.followPolicy();
    // A wake-up too: an instance that restarted while paused resumes without waiting for its
    // alarm, and a group cancelled with no driver left lands. Not awaited: the trainer's POST
    // does not wait for a landing.
    if (this.drivers.size === 0 && this.finishing === null) this.resume().catch(() => {});
    return this.policy.flights.count();
  }

  async inFlightGenerations(): Promise<number> {
    return this.policy.flights.count();
  }

  async spend(): Promise<{ spend: Spend; inFlightGenerations: number } | null> {
    if (!this.store.exists()) return null;
    return {
      spend: inFlightSpend(this.store, priceBook(this.config)),
      inFlightGenerations: this.policy.flights.count(),
    };
  }

  async hostsChanged(): Promise<void> {
    this.runtime?.generation.permits.recheck();
  }

  async hostInterrupted(host: string): Promise<number> {
    // Each episode asks the fleet again first, so what the aborts send again avoids the host.
    await this.hostsChanged();
    await this.policy.flights.interrupt(host);
    return this.policy.flights.count(host);
  }

  /**
   * The group's side of the fleet: with one host and no limit nothing needs scheduling; otherwise
   * every permit comes from the fleet scheduler. Each episode's host and the group's home are
   * stored, so a restarted instance asks for the same hosts.
   */
  private hostPermits(spec: GroupSpec): HostPermits {
    const routing: Routing = {
      groupRoute: () => {
        const policy = this.policy.known();
        return {
          key: spec.groupId,
          preferred: [this.store.exists() ? this.store.group.get().homeHost : null],
          policy: policy === null ? null : { version: policy.version, maxLag: policy.maxLag },
          avoid: null,
          model: spec.request.sampling.model,
          eval: spec.request.kind === "eval" ? spec.request.policy_version : null,
        };
      },
      hostOf: (episode) => (this.store.exists() ? this.store.episodes.get(episode).host : null),
      granted: (episode: number, grant: Grant) => {
        if (this.store.exists()) this.store.routeEpisode(episode, grant.host);
      },
    };
    const hosts = fleetHosts(this.config);
    const [only] = hosts;
    if (hosts.length === 1 && only !== undefined && !Number.isFinite(only.maxInflight))
      return soleHostPermits(only, routing);
    return fleetPermits(fleetScheduler(this.env), spec.groupId, routing);
  }

  override async alarm(): Promise<void> {
    if (!this.store.exists()) return;
    const due = this.store.timers.due(Date.now());
    if (due.some((timer) => timer.kind === "register")) await this.register();
    // The heartbeat re-reads the run's policy (also right after a late registration): a change
    // whose push did not get here (the object was restarting) still arrives within HEARTBEAT_S,
    // and so does a run's first one, which may be a pause. Only while episodes run: a policy
    // change no longer matters to a group being scored or landed.
    if (this.store.group.get().phase === "running") await this.refreshPolicy();
    // Retry, scoring and landing timers only wake the object; resume() does the work.
    for (const timer of due) if (timer.kind !== "register") this.store.timers.clear(timer);
    await this.resume();
    if (this.store.exists()) await this.rearm();
  }

  /** Everything this object should be doing, started if it is not already running. */
  private async resume(): Promise<void> {
    if (!this.store.exists()) return;
    if (this.runtime === null) {
      const { spec } = this.store.group.get();
      const runtime: GroupRuntime = {
        spec,
        store: this.store,
        config: this.config,
        policy: this.policy,
        writeTurn: sharedWriteTurn(),
        generation: {
          apiKey: this.config.INFERENCE_API_KEY,
          permits: this.hostPermits(spec),
          tokens: tokenPolicyOf(spec.request),
          seams: { measuring: null },
        },
        environment: stepWorker(this.env),
      };
      this.runtime = runtime;
      // First wake of this instance: permits held by an earlier one went with its generations.
      // A reset that fails is tried again by the next wake.
      this.permitsReset = this.createdHere
        ? null
        : runtime.generation.permits.reset().catch((error) => {
            if (this.runtime === runtime) this.runtime = null;
            this.permitsReset = null;
            throw error;
          });
    }
    // Every wake waits for that reset, not only the first: a driver started before it ends
    // would have its new permits released under it.
    const reset = this.permitsReset;
    if (reset !== null) {
      await reset;
      if (this.permitsReset === reset) this.permitsReset = null;
    }
    // The group may have landed (and its storage gone) while this call waited.
    if (!this.store.exists() || this.runtime === null) return;
    const runtime = this.runtime;
    const group = this.store.group.get();
    if (group.phase === "running" && this.policy.stale !== null) this.endStale(this.policy.stale);
    if (group.phase === "running") {
      const now = Date.now();
      const toStart = this.store.episodes.all().filter((episode) => {
        if (TERMINAL_STATES.includes(episode.state) || this.drivers.has(episode.idx)) return false;
        const parked = this.store.generations.get(episode.idx);
        return !(parked?.state === "waiting" && (parked.retryAt ?? 0) > now);
      });
      // One call to the fleet scheduler for every episode started here, not one each; asked before the
      // drivers start, so one that goes straight to a generation waits for this answer. A paused
      // run's episodes ask for theirs once it resumes.
      if (!this.policy.paused)
        runtime.generation.permits.prefetch(
          toStart.map((episode) => episode.idx),
          permitLeaseMs(runtime),
        );
      for (const { idx } of toStart) {
        const driver = driveEpisode(runtime, idx)
          // Only an instance being torn down gets here (its storage refuses every call); the
          // next instance resumes from what was persisted.
          .catch((error) => console.error(`episode ${idx}: driver stopped: ${errorMessage(error)}`))
          .finally(() => {
            this.drivers.delete(idx);
            // Ended, parked or stopped: its permit goes back to the pool either way.
            runtime.generation.permits.drop(idx);
            void this.finishWhenDone();
            // A parked generation needs its timer armed before the object goes idle.
            if (this.store.exists()) this.rearm().catch(() => {});
          });
        this.drivers.set(idx, driver);
      }
    }
    await this.finishWhenDone();
  }

  /**
   * Once every episode has ended and no driver is still winding down: grade, assign credit,
   * land, delete. Runs once at a time; the last driver to exit calls it again.
   */
  private finishWhenDone(): Promise<void> {
    if (this.finishing !== null) return this.finishing;
    if (this.drivers.size > 0 || !this.store.exists() || !this.store.episodes.allTerminal())
      return Promise.resolve();
    this.finishing = this.finish()
      .catch(async (error) => {
        // An unexpected fault: remember it and let the alarm try again.
        this.store.group.countAttempt("land", errorMessage(error));
        this.store.timers.set(LAND, Date.now() + retryDelayMs(1));
        await this.rearm();
      })
      .catch((error) => console.error(`group finish stopped: ${errorMessage(error)}`))
      .finally(() => {
        this.finishing = null;
      });
    return this.finishing;
  }

  private async finish(): Promise<void> {
    const runtime = this.runtime;
    const finished = await finishGroup({
      env: this.env,
      config: this.config,
      store: this.store,
      policy: this.policy,
      tokens: runtime?.generation.tokens ?? tokenPolicyOf(this.store.group.get().spec.request),
      permits: runtime?.generation.permits ?? null,
    });
    if (finished.kind === "retrying") return this.rearm();
    await this.store.deleteAll();
    this.runtime = null;
  }

  /**
   * Reads the run's policy from D1 and follows it; a read that fails waits for the next beat.
   * Read once the group is registered too: SQL lists it as running from then on, so a later
   * change pushes to it, and a change made since the API read the policy is in this read.
   */
  private async refreshPolicy(): Promise<void> {
    try {
      const policy = await readRunPolicy(this.env.DB, this.store.group.get().spec.request.run_id);
      if (policy !== null && this.store.exists() && this.policy.apply(knownPolicy(policy)))
        this.followPolicy();
    } catch (error) {
      console.warn(`run policy not read: ${errorMessage(error)}`);
    }
  }

  /**
   * After a policy change: cancel the group if it went stale (its caller then resumes it, which
   * lands it once every episode has ended); a resumed run's drivers go on by themselves.
   */
  private followPolicy(): void {
    // A host serving a declared version may now be too far behind the run's: episodes check.
    this.runtime?.generation.permits.recheck();
    const policy = this.policy.known();
    const group = this.store.group.get();
    if (policy === null || group.phase !== "running") return;
    // An evaluation is pinned to its version: however far the run moves on, it measures that one.
    if (group.spec.request.kind === "eval") return;
    // A group that has sent nothing yet is not stale: its turns go out at the current version.
    const lowest = this.policy.span(this.store.sentTurns(), group.spec.request.policy_version).min;
    if (lowest === null) return;
    const verdict = staleness(policy, lowest);
    if (!verdict.stale) return;
    this.policy.markStale(verdict.detail);
    this.endStale(verdict.detail);
  }

  /**
   * Ends as stale every unfinished episode no driver is running (parked, or not started); a
   * running driver ends its own once its generation is aborted or its step returns.
   */
  private endStale(detail: string): void {
    for (const episode of this.store.episodes.all())
      if (!TERMINAL_STATES.includes(episode.state) && !this.drivers.has(episode.idx)) {
        this.store.finish(episode.idx, failed(END.stale_policy, detail));
        // A parked retry's timer would only wake the object for nothing.
        this.store.timers.clear({ kind: "retry", episode: episode.idx });
      }
  }

  /**
   * Registers the group in D1 so SQL sees it running; on failure the timer tries again. True
   * when this call registered it.
   */
  private async register(): Promise<boolean> {
    if (this.store.group.get().registered) {
      this.store.timers.clear(REGISTER);
      return false;
    }
    try {
      await registerGroup(this.env.DB, this.store.group.get().spec);
      this.store.group.markRegistered();
      this.store.timers.clear(REGISTER);
      return true;
    } catch {
      this.store.timers.set(REGISTER, Date.now() + retryDelayMs(2));
      return false;
    }
  }

  /**
   * The alarm goes off at the earliest timer. While work is in flight it also beats at least
   * every HEARTBEAT_S: that keeps the object awake through long generations and, if the object
   * restarts, wakes the next instance to resume. Only when everything waits on a timer does
   * the object sleep until that timer.
   */
  private async rearm(): Promise<void> {
    const timer = this.store.timers.next();
    const idle = this.drivers.size === 0 && this.finishing === null && timer !== null;
    const next = idle
      ? timer
      : Math.min(timer ?? Number.POSITIVE_INFINITY, Date.now() + this.config.HEARTBEAT_S * 1000);
    const current = await this.ctx.storage.getAlarm();
    if (current === null || current > next || current < Date.now())
      await this.ctx.storage.setAlarm(next);
  }
}
