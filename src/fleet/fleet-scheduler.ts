/**
 * The one object that schedules generations over the inference fleet. An episode takes a permit
 * when its driver starts and holds it through its turns (it never has more than one generation
 * in flight), giving it back when it ends or parks; the permit names the host its generations go
 * to (routing.ts: affinity, bounded by load), so the permits held on a host bound what is in
 * flight toward it. Over every host's cap, episodes wait in a fair queue: groups take turns, each
 * group's waiters in order, evaluation groups first within the share of each host kept for them
 * (eval-share.ts). Each host's health (health.ts), pause, declared policy version and learned
 * capabilities are kept here and persisted with the permits, so a restart forgets none.
 */
import { DurableObject } from "cloudflare:workers";
import { configFrom } from "../config";
import { rolloutGroup } from "../rollout/bindings";
import { migrate } from "../utils/migrations";
import { nextCap } from "./adaptive-cap";
import { reservedCap, trainingCap } from "./eval-share";
import type { FleetApi, Grant, HostFailure, HostView, Route } from "./fleet-api";
import { answered, failed, probed, probeFailed } from "./health";
import { HostRecords } from "./host-records";
import { type FleetHost, fleetHosts } from "./hosts-config";
import { FLEET_MIGRATIONS } from "./migrations";
import { probeHost, readKvUsage } from "./probe";
import { chooseHost, type HostLoad, type LoadBound } from "./routing";

/** An adaptive host's first cap, before its KV cache has said anything (prime-rl starts lower). */
const ADAPTIVE_START = 64;

interface Waiter {
  ticket: string;
  leaseMs: number;
  route: Route;
  answer: (grant: Grant | null) => void;
}

interface Permit {
  group: string;
  host: string;
  expiresAt: number;
  /** An evaluation group's: it counts toward the host's evaluation share. */
  eval: boolean;
}

/**
 * How a waiter is served: `first`, an evaluation within its host's share, ahead of the line;
 * `in turn`, everyone round robin (an evaluation past its share only if no training waits).
 */
type Pass = "first" | "in turn";

export class FleetScheduler extends DurableObject<Env> implements FleetApi {
  private readonly config = configFrom(this.env);
  private readonly bound: LoadBound = {
    loadFactor: this.config.FLEET_LOAD_FACTOR,
    slack: this.config.FLEET_LOAD_SLACK,
  };
  private configured: FleetHost[];
  private readonly records: HostRecords;
  private readonly permits = new Map<string, Permit>();
  /** Permits held on each host. */
  private readonly load = new Map<string, number>();
  /** Of those, evaluation groups' permits. */
  private readonly evalLoad = new Map<string, number>();
  /**
   * Per group, its permits on each host: where its episodes are now. A group's new episodes
   * prefer those hosts after the ones its route names (its episodes start together, before the
   * group has stored a home, and a choice by load alone would spread them).
   */
  private readonly groupHosts = new Map<string, Map<string, number>>();
  private readonly waiting = new Map<string, Waiter[]>();
  /** Groups with waiters, in the order they are served (round robin). */
  private readonly turns: string[] = [];
  /** The evaluation groups among them, with their route (kept apart: training looks it up often). */
  private readonly evalsInLine = new Map<string, Route>();
  /** Adaptive hosts' caps as their KV caches allow (in memory: a restart starts them afresh). */
  private readonly caps = new Map<string, number>();
  /** When the alarm is set to go off, as far as this instance knows. */
  private alarmAt: number | null = null;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    migrate(ctx.storage, FLEET_MIGRATIONS);
    const own = ctx.storage.sql.exec("SELECT hosts FROM configured_hosts").toArray()[0];
    this.configured = own
      ? (
          JSON.parse(String(own.hosts)) as (Omit<FleetHost, "maxInflight"> & {
            maxInflight: number | null;
          })[]
        ).map((h) => ({ ...h, maxInflight: h.maxInflight ?? Number.POSITIVE_INFINITY }))
      : fleetHosts(this.config);
    this.records = new HostRecords(ctx.storage.sql);
    const first = this.configured[0]?.url ?? "";
    for (const r of ctx.storage.sql.exec("SELECT * FROM permits")) {
      // A permit of the single-host limiter of earlier deploys is the first host's.
      this.hold(String(r.ticket), {
        group: String(r.group_id),
        host: r.host === null ? first : String(r.host),
        expiresAt: Number(r.expires_at),
        eval: Number(r.eval) === 1,
      });
    }
    ctx.blockConcurrencyWhile(async () => {
      this.alarmAt = await ctx.storage.getAlarm();
    });
  }

  /**
   * This object's hosts instead of the configured ones: a fleet of its own for a test, or for a
   * deployment that names several. The global fleet takes the Worker's configuration.
   */
  async useHosts(hosts: readonly FleetHost[]): Promise<void> {
    // JSON has no Infinity: no limit is stored as null.
    const stored = hosts.map((h) => ({
      ...h,
      maxInflight: Number.isFinite(h.maxInflight) ? h.maxInflight : null,
    }));
    this.ctx.storage.sql.exec(
      "INSERT OR REPLACE INTO configured_hosts (id, hosts) VALUES (1, ?)",
      JSON.stringify(stored),
    );
    this.configured = hosts.map((h) => ({ ...h }));
    this.pump();
  }

  async acquire(
    ticket: string,
    group: string,
    leaseMs: number,
    route: Route,
  ): Promise<Grant | null> {
    const grant = this.grantAtOnce(ticket, group, leaseMs, route);
    if (grant !== null) return grant;
    return new Promise<Grant | null>((answer) => {
      this.enqueue(group, { ticket, leaseMs, route, answer });
      // Those in line may wait for hosts this one does not need (paused, or serving another
      // version than an evaluation's): the line is served in order, and this one too if it fits.
      this.pump();
    });
  }

  /**
   * Grants at once whichever of a group's tickets can be, and returns them; the caller queues the
   * rest one by one with `acquire`. One call for a whole group's episodes instead of one each.
   */
  async acquireMany(
    asks: readonly { ticket: string; preferred: string | null }[],
    group: string,
    leaseMs: number,
    route: Route,
  ): Promise<{ ticket: string; grant: Grant }[]> {
    const granted: { ticket: string; grant: Grant }[] = [];
    for (const ask of asks) {
      const own = { ...route, preferred: [ask.preferred, ...route.preferred] };
      const grant = this.grantAtOnce(ask.ticket, group, leaseMs, own);
      if (grant !== null) granted.push({ ticket: ask.ticket, grant });
    }
    return granted;
  }

  /**
   * Gives back the permits of a group's tickets and withdraws those still waiting; `answeredAt`
   * says when the group last saw each host answer, which clears a host's failure streak.
   */
  async releaseMany(
    group: string,
    tickets: readonly string[],
    answeredAt: Readonly<Record<string, number>> = {},
  ): Promise<void> {
    for (const [url, at] of Object.entries(answeredAt))
      this.records.update(url, (r) => ({ ...r, health: answered(r.health, at) }));
    for (const ticket of tickets) this.drop(ticket);
    const queue = this.waiting.get(group);
    if (queue !== undefined) {
      const withdrawn = new Set(tickets);
      const kept = queue.filter((waiter) => !withdrawn.has(waiter.ticket));
      for (const waiter of queue) if (withdrawn.has(waiter.ticket)) waiter.answer(null);
      if (kept.length > 0) this.waiting.set(group, kept);
      else this.forgetWaiters(group);
    }
    this.pump();
  }

  /** A group restarted: the permits its earlier instance held belong to episodes it lost. */
  async releaseGroup(group: string): Promise<void> {
    for (const waiter of this.waiting.get(group) ?? []) waiter.answer(null);
    this.forgetWaiters(group);
    for (const [ticket, permit] of this.permits) if (permit.group === group) this.drop(ticket);
    this.pump();
  }

  /**
   * A generation failed on its host: counted toward ejecting the host (groups with episodes there
   * are told), and the episode's permit moves to another host when the host did not answer at all
   * or is no longer available; null if it must wait for one.
   */
  async reportFailure(
    ticket: string,
    group: string,
    leaseMs: number,
    route: Route,
    failure: HostFailure,
  ): Promise<Grant | null> {
    const ejectAfter = this.config.HOST_EJECT_AFTER_FAILURES;
    const health = this.records.get(failure.host).health;
    // Calls that got no answer come from a dead host, and also from a live one closing an idle
    // keep-alive connection just as a request goes out on it (vLLM's server closes them after
    // 5 s): a healthy host is asked before it is ejected for them, and kept if it answers.
    const confirm =
      failure.unreachable &&
      health.state === "healthy" &&
      failed(health, failure, ejectAfter).ejected;
    const stillAnswers =
      confirm && (await probeHost(failure.host, this.config.INFERENCE_API_KEY)).ok;
    let ejected = false;
    this.records.update(failure.host, (r) => {
      if (stillAnswers)
        return { ...r, health: { ...answered(r.health, Date.now()), lastError: failure.error } };
      const next = failed(r.health, failure, ejectAfter);
      ejected = next.ejected;
      return { ...r, health: next.health };
    });
    if (ejected) {
      this.tellGroupsOn(failure.host, group);
      this.arm(Date.now() + this.config.HOST_PROBE_S * 1000);
    }
    const moving = failure.unreachable || !this.usable(failure.host, route, true);
    const held = this.permits.get(ticket);
    if (moving && held?.host === failure.host) this.drop(ticket);
    return this.acquire(ticket, group, leaseMs, {
      ...route,
      avoid: moving ? failure.host : route.avoid,
    });
  }

  /** A host refused the token fields for a model: remembered, so nobody asks it again. */
  async learnTokenFieldsRefused(host: string, model: string): Promise<void> {
    this.records.update(host, (r) =>
      r.tokenRefusals.includes(model) ? r : { ...r, tokenRefusals: [...r.tokenRefusals, model] },
    );
  }

  /**
   * Pauses or resumes one host, or records the version it now serves (a rolling weight sync).
   * Groups with episodes on it are told, so those move at their next turn if it no longer suits
   * them. Null for a host that is not in the fleet.
   */
  async setHost(
    url: string,
    change: { paused?: boolean | undefined; policyVersion?: number | null | undefined },
  ): Promise<HostView | null> {
    const key = url.replace(/\/+$/, "");
    if (!this.configured.some((h) => h.url === key)) return null;
    this.records.update(key, (r) => ({
      ...r,
      paused: change.paused ?? r.paused,
      policyVersion: change.policyVersion === undefined ? r.policyVersion : change.policyVersion,
    }));
    this.tellGroupsOn(key, null);
    this.pump();
    return (await this.hosts()).find((h) => h.url === key) ?? null;
  }

  async groupsOn(url: string): Promise<string[]> {
    const key = url.replace(/\/+$/, "");
    const groups = new Set<string>();
    for (const permit of this.permits.values()) if (permit.host === key) groups.add(permit.group);
    return [...groups];
  }

  async hosts(): Promise<HostView[]> {
    let waiting = 0;
    for (const queue of this.waiting.values()) waiting += queue.length;
    return this.configured.map((h) => {
      const record = this.records.get(h.url);
      return {
        url: h.url,
        name: h.name,
        state: record.paused ? "paused" : record.health.state,
        in_flight: this.load.get(h.url) ?? 0,
        eval_in_flight: this.evalLoad.get(h.url) ?? 0,
        cap: Number.isFinite(this.capOf(h)) ? this.capOf(h) : null,
        weight: h.weight,
        policy_version: record.policyVersion,
        last_error: record.health.lastError,
        waiting,
      };
    });
  }

  /** Reclaims permits whose lease ran out (their holder is gone), probes ejected hosts, re-arms. */
  override async alarm(): Promise<void> {
    this.alarmAt = null;
    const now = Date.now();
    for (const [ticket, permit] of this.permits) if (permit.expiresAt <= now) this.drop(ticket);
    const periodMs = this.config.HOST_PROBE_S * 1000;
    await Promise.all(
      this.configured
        .filter((h) => this.onTrialOrOut(h.url))
        .map(async (h) => {
          const probe = await probeHost(h.url, this.config.INFERENCE_API_KEY);
          const at = Date.now();
          const idle = (this.load.get(h.url) ?? 0) === 0;
          const before = this.records.get(h.url).health.state;
          this.records.update(h.url, (r) => ({
            ...r,
            health: probe.ok
              ? probed(r.health, at, { idle, periodMs })
              : probeFailed(r.health, at, probe.error ?? "probe failed"),
          }));
          // A host on trial that failed its probe is out again: its episodes must move.
          if (before === "probing" && this.records.get(h.url).health.state === "ejected")
            this.tellGroupsOn(h.url, null);
        }),
    );
    await this.adaptCaps();
    this.pump();
    let next = Number.POSITIVE_INFINITY;
    for (const permit of this.permits.values()) next = Math.min(next, permit.expiresAt);
    const adapting = this.permits.size > 0 && this.configured.some((h) => h.adaptive);
    if (adapting || this.configured.some((h) => this.onTrialOrOut(h.url)))
      next = Math.min(next, Date.now() + this.config.HOST_PROBE_S * 1000);
    if (next !== Number.POSITIVE_INFINITY) this.arm(next);
  }

  /** Ejected, or readmitted on trial: probed on the timer. */
  private onTrialOrOut(url: string): boolean {
    const { state } = this.records.get(url).health;
    return state === "ejected" || state === "probing";
  }

  /** The cap a host has now: its `max_inflight`, or what its KV cache allows when adaptive. */
  private capOf(host: FleetHost): number {
    if (!host.adaptive) return host.maxInflight;
    return this.caps.get(host.url) ?? Math.min(host.maxInflight, ADAPTIVE_START);
  }

  /** Reads each adaptive host's KV cache usage and moves its cap (adaptive-cap.ts). */
  private async adaptCaps(): Promise<void> {
    let waiting = 0;
    for (const queue of this.waiting.values()) waiting += queue.length;
    await Promise.all(
      this.configured
        .filter((h) => h.adaptive && this.records.get(h.url).health.state !== "ejected")
        .map(async (h) => {
          const usage = await readKvUsage(h.url, this.config.INFERENCE_API_KEY);
          if (usage === null) return;
          const state = { cap: this.capOf(h), load: this.load.get(h.url) ?? 0, waiting };
          this.caps.set(h.url, nextCap(state, usage, h.maxInflight));
        }),
    );
  }

  /**
   * Whether the host may take an episode of this route: answering (or, with `panicking`, every
   * host is ejected and the fleet uses them all rather than none), not paused, and serving a
   * version within the run's lag, or an evaluation's very version.
   */
  private usable(url: string, route: Route, panicking: boolean): boolean {
    const record = this.records.get(url);
    if (record.paused) return false;
    if (record.health.state === "ejected" && !panicking) return false;
    if (route.eval !== null)
      return record.policyVersion === null || record.policyVersion === route.eval;
    const { policy } = route;
    if (record.policyVersion !== null && policy !== null && policy.maxLag !== null)
      return record.policyVersion >= policy.version - policy.maxLag;
    return true;
  }

  /**
   * The hosts as routing sees them for one route, served in one pass: while an evaluation waits,
   * training sees each cap less the share evaluations do not hold yet; an evaluation served first,
   * or while training waits, sees only that share.
   */
  private loads(route: Route, pass: Pass = "in turn"): HostLoad[] {
    // Ejection never empties the fleet: with every host ejected, all are tried, so generations
    // fail by their own deadlines and retries instead of waiting forever (Envoy's panic mode).
    const panicking = this.configured.every(
      (h) => this.records.get(h.url).health.state === "ejected",
    );
    const share = this.config.EVAL_SHARE;
    const loads = this.configured.map((h) => {
      const load = this.load.get(h.url) ?? 0;
      const evalLoad = this.evalLoad.get(h.url) ?? 0;
      let cap = this.capOf(h);
      // An evaluation passes its share only when no training episode waits.
      if (route.eval !== null && (pass === "first" || this.trainingWaits()))
        cap = reservedCap(cap, share, load, evalLoad);
      else if (route.eval === null && this.evalsWaitFor(h.url, panicking))
        cap = trainingCap(cap, share, evalLoad);
      return {
        url: h.url,
        weight: h.weight,
        load,
        cap,
        available: this.usable(h.url, route, panicking),
      };
    });
    if (route.avoid !== null && loads.some((h) => h.available && h.url !== route.avoid)) {
      const avoided = loads.find((h) => h.url === route.avoid);
      if (avoided) avoided.available = false;
    }
    return loads;
  }

  /** Held already on a host that still suits it (a renewal), or a new one with no one in line. */
  private grantAtOnce(ticket: string, group: string, leaseMs: number, route: Route): Grant | null {
    const held = this.permits.get(ticket);
    if (held !== undefined) {
      if (held.host !== route.avoid && this.usable(held.host, route, this.allEjected()))
        return this.grant(ticket, group, held.host, leaseMs, route);
      this.drop(ticket);
    }
    // Nobody jumps the line, but an evaluation may pass training episodes within its share.
    const pass: Pass | null =
      this.turns.length === 0
        ? "in turn"
        : route.eval !== null && !this.evalsWaiting()
          ? "first"
          : null;
    if (pass === null) return null;
    const host = chooseHost(
      route.key,
      this.preferredOf(group, route),
      this.loads(route, pass),
      this.bound,
    );
    return host === null ? null : this.grant(ticket, group, host, leaseMs, route);
  }

  /** Whether some training group's episode waits for a permit. */
  private trainingWaits(): boolean {
    return this.turns.length > this.evalsInLine.size;
  }

  /** Whether some evaluation group's episode waits for a permit. */
  private evalsWaiting(): boolean {
    return this.evalsInLine.size > 0;
  }

  /**
   * Whether an evaluation that could use the host waits: one pinned to a version the host does
   * not serve keeps no share of it from training.
   */
  private evalsWaitFor(url: string, panicking: boolean): boolean {
    for (const route of this.evalsInLine.values())
      if (this.usable(url, route, panicking)) return true;
    return false;
  }

  /** The route's preferred hosts, then those the group's episodes hold permits on, most first. */
  private preferredOf(group: string, route: Route): (string | null)[] {
    const held = this.groupHosts.get(group);
    if (held === undefined) return route.preferred;
    const hosts = [...held.entries()].sort((a, b) => b[1] - a[1]).map(([host]) => host);
    return [...route.preferred, ...hosts];
  }

  private countGroupHost(group: string, host: string, delta: number): void {
    const held = this.groupHosts.get(group) ?? new Map<string, number>();
    const n = (held.get(host) ?? 0) + delta;
    if (n > 0) held.set(host, n);
    else held.delete(host);
    if (held.size > 0) this.groupHosts.set(group, held);
    else this.groupHosts.delete(group);
  }

  private allEjected(): boolean {
    return this.configured.every((h) => this.records.get(h.url).health.state === "ejected");
  }

  private enqueue(group: string, waiter: Waiter): void {
    const queue = this.waiting.get(group) ?? [];
    if (queue.length === 0) this.turns.push(group);
    if (waiter.route.eval !== null) this.evalsInLine.set(group, waiter.route);
    queue.push(waiter);
    this.waiting.set(group, queue);
  }

  private grant(ticket: string, group: string, host: string, leaseMs: number, route: Route): Grant {
    const expiresAt = Date.now() + leaseMs;
    const evaluation = route.eval !== null;
    this.hold(ticket, { group, host, expiresAt, eval: evaluation });
    this.ctx.storage.sql.exec(
      "INSERT OR REPLACE INTO permits (ticket, group_id, expires_at, host, eval) VALUES (?, ?, ?, ?, ?)",
      ticket,
      group,
      expiresAt,
      host,
      evaluation ? 1 : 0,
    );
    if (this.alarmAt === null || expiresAt < this.alarmAt) this.arm(expiresAt);
    const record = this.records.get(host);
    return {
      host,
      policyVersion: record.policyVersion,
      tokenFields: record.tokenRefusals.includes(route.model) ? false : null,
    };
  }

  /** Counts a permit in memory (granted now, or read back after a restart). */
  private hold(ticket: string, permit: Permit): void {
    const before = this.permits.get(ticket);
    if (before !== undefined) this.count(before, -1);
    this.permits.set(ticket, permit);
    this.count(permit, 1);
  }

  /** Counts a permit in (1) or out (-1) of its host's load and its group's hosts. */
  private count(permit: Permit, delta: 1 | -1): void {
    this.load.set(permit.host, (this.load.get(permit.host) ?? 0) + delta);
    if (permit.eval) this.evalLoad.set(permit.host, (this.evalLoad.get(permit.host) ?? 0) + delta);
    this.countGroupHost(permit.group, permit.host, delta);
  }

  private drop(ticket: string): void {
    const permit = this.permits.get(ticket);
    if (permit === undefined) return;
    this.permits.delete(ticket);
    this.count(permit, -1);
    this.ctx.storage.sql.exec("DELETE FROM permits WHERE ticket = ?", ticket);
  }

  /** Drops the group's queue and its turn in the round robin. */
  private forgetWaiters(group: string): void {
    this.waiting.delete(group);
    this.evalsInLine.delete(group);
    const turn = this.turns.indexOf(group);
    if (turn !== -1) this.turns.splice(turn, 1);
  }

  private arm(at: number): void {
    if (this.alarmAt !== null && this.alarmAt <= at) return;
    this.alarmAt = at;
    void this.ctx.storage.setAlarm(at);
  }

  /** Whether some host could take some episode: else nobody in line can be served. */
  private anyRoom(): boolean {
    const panicking = this.allEjected();
    return this.configured.some((h) => {
      const record = this.records.get(h.url);
      if (record.paused || (record.health.state === "ejected" && !panicking)) return false;
      return (this.load.get(h.url) ?? 0) < this.capOf(h);
    });
  }

  /**
   * Grants what the hosts have room for: first evaluations within their share, then one waiter
   * per group in turn. A group whose first waiter fits no host (the hosts it may use are full)
   * keeps its place; the others go on.
   */
  private pump(): void {
    this.serve("first");
    this.serve("in turn");
  }

  private serve(pass: Pass): void {
    let progressed = true;
    while (progressed && this.turns.length > 0 && this.anyRoom()) {
      progressed = false;
      for (let i = 0; i < this.turns.length; ) {
        const group = this.turns[i] as string;
        const queue = this.waiting.get(group) ?? [];
        const next = queue[0];
        if (pass === "first" && next !== undefined && next.route.eval === null) {
          i++;
          continue;
        }
        const host =
          next &&
          chooseHost(
            next.route.key,
            this.preferredOf(group, next.route),
            this.loads(next.route, pass),
            this.bound,
          );
        if (!next || host === null || host === undefined) {
          if (!next) this.forgetWaiters(group);
          else i++;
          continue;
        }
        queue.shift();
        this.turns.splice(i, 1);
        if (queue.length > 0) this.turns.push(group);
        else {
          this.waiting.delete(group);
          this.evalsInLine.delete(group);
        }
        next.answer(this.grant(next.ticket, group, host, next.leaseMs, next.route));
        progressed = true;
      }
    }
  }

  /**
   * Tells every group with an episode on the host (but `except`, which knows) to check its
   * permits at its next turn: the host was ejected, paused, or serves another version now.
   */
  private tellGroupsOn(host: string, except: string | null): void {
    const groups = new Set<string>();
    for (const permit of this.permits.values())
      if (permit.host === host && permit.group !== except) groups.add(permit.group);
    for (const group of groups)
      this.ctx.waitUntil(
        rolloutGroup(this.env, group)
          .hostsChanged()
          .catch(() => {}),
      );
  }
}
