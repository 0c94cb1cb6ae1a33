/**
 * A group's side of the fleet scheduler. Each episode holds one permit, on one host, from when
 * its driver starts until it ends or parks, renewed only when its lease runs low or the fleet
 * says its host changed. A call to the scheduler costs more than what it does, so the group
 * batches them: one call asks for the permits of every episode it starts (`prefetch`), and
 * releases made close together go out as one call, carrying when the group last saw each host
 * answer (what clears a host's failure streak without a report per success).
 */
import { backoffDelayMs, sleep } from "../utils/backoff";
import type { FleetApi, Grant, HostFailure, Route } from "./fleet-api";
import type { FleetHost } from "./hosts-config";

export interface HostPermits {
  /**
   * Asks, in one call, for the permits of episodes about to run; `hold` then waits for that
   * answer instead of asking again. What cannot be granted at once queues per episode.
   */
  prefetch(episodes: readonly number[], leaseMs: number): void;
  /**
   * Makes sure the episode holds a permit, waiting in the fair queue while the hosts it may use
   * are full. Its grant (the host) once it does; null if `interrupt` fired first (its run paused,
   * or its group was cancelled): its place in line is given up, and it holds nothing.
   */
  hold(episode: number, leaseMs: number, interrupt?: AbortSignal): Promise<Grant | null>;
  /**
   * A generation failed on its host: the fleet counts it, and answers with the host to try next
   * (another one when the host did not answer at all); null if interrupted while waiting.
   */
  failed(
    episode: number,
    failure: Omit<HostFailure, "okAt">,
    leaseMs: number,
    interrupt?: AbortSignal,
  ): Promise<Grant | null>;
  /** A host answered this group at `at`. */
  answered(host: string, at: number): void;
  /** The fleet changed (a host ejected, paused, or at another version): each episode asks again. */
  recheck(): void;
  /** A host refused the token fields for the group's model: the fleet remembers it for everyone. */
  learnTokenFieldsRefused(host: string): void;
  /** Gives the episode's permit back: it ended, parked, or its driver stopped. */
  drop(episode: number): void;
  /** Frees what an earlier instance of this group held; called once when it resumes. */
  reset(): Promise<void>;
}

/** How the group routes its episodes: what it asks for each, and what it keeps of a grant. */
export interface Routing {
  /** The group's route: its key, its home host (when it has one), its run's policy. */
  groupRoute(): Route;
  /** The host the episode's generations went to so far; null before its first. */
  hostOf(episode: number): string | null;
  /** Persists the episode's host (and the group's home, the first one), before it is used. */
  granted(episode: number, grant: Grant): void;
}

/** An episode's route: its own host first, then its group's. */
function routeOf(routing: Routing, episode: number): Route {
  const route = routing.groupRoute();
  return { ...route, preferred: [routing.hostOf(episode), ...route.preferred] };
}

/** Releases made within this long of each other go to the scheduler as one call. */
const RELEASE_BATCH_MS = 20;

/** The scheduler restarts like any object; a call cut short by that is tried again. */
async function retrying<T>(call: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      if (attempt >= 6) throw error;
      await sleep(backoffDelayMs(attempt, { baseMs: 200, maxMs: 6400 }));
    }
  }
}

/** Settles with `waiting`'s value (rejecting as it does), or null as soon as `signal` fires. */
function unlessInterrupted<T>(
  waiting: Promise<T>,
  signal: AbortSignal | undefined,
): Promise<T | null> {
  if (signal === undefined) return waiting;
  if (signal.aborted) return Promise.resolve(null);
  return new Promise<T | null>((resolve, reject) => {
    const onAbort = () => resolve(null);
    signal.addEventListener("abort", onAbort, { once: true });
    waiting
      .then(resolve, (error) => reject(error))
      .finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/**
 * One host and no limit: no scheduler to ask, every episode goes there. Capabilities learned are
 * kept for the group's life.
 */
export function soleHostPermits(host: FleetHost, routing: Routing): HostPermits {
  let tokenFields: false | null = null;
  const grant = (episode: number): Grant => {
    const g = { host: host.url, policyVersion: null, tokenFields };
    routing.granted(episode, g);
    return g;
  };
  return {
    prefetch: () => {},
    hold: async (episode, _leaseMs, interrupt) => (interrupt?.aborted ? null : grant(episode)),
    failed: async (episode, _failure, _leaseMs, interrupt) =>
      interrupt?.aborted ? null : grant(episode),
    answered: () => {},
    recheck: () => {},
    learnTokenFieldsRefused: () => {
      tokenFields = false;
    },
    drop: () => {},
    reset: async () => {},
  };
}

export function fleetPermits(fleet: FleetApi, groupId: string, routing: Routing): HostPermits {
  const ticket = (episode: number) => `${groupId}:${episode}`;
  /** The permits this instance holds, by episode: the grant and when its lease runs out. */
  const held = new Map<number, { grant: Grant; expiresAt: number; recheck: boolean }>();
  /** Asks in flight, by episode; each settles once the episode holds its permit or gave up. */
  const asking = new Map<number, Promise<void>>();
  /** Episodes whose driver ended while their permit was still being asked for. */
  const unwanted = new Set<number>();
  /** When this group last saw each host answer; sent with the next release. */
  const answeredAt = new Map<string, number>();
  let releasing: { episodes: Set<number>; timer: ReturnType<typeof setTimeout> } | null = null;

  const fresh = (episode: number, leaseMs: number) => {
    const permit = held.get(episode);
    // Renew when less than half the lease is left, so a long episode never loses its permit.
    return permit !== undefined && !permit.recheck && permit.expiresAt - Date.now() > leaseMs / 2;
  };

  /** Sends the episode's ticket back with the next batch: its permit, or its place in line. */
  const giveBack = (episode: number) => {
    if (releasing === null) {
      const batch = new Set<number>();
      const timer = setTimeout(() => {
        releasing = null;
        const seen = Object.fromEntries(answeredAt);
        // A release that cannot get through is reclaimed when the permit's lease expires.
        retrying(() => fleet.releaseMany(groupId, [...batch].map(ticket), seen)).catch(() => {});
      }, RELEASE_BATCH_MS);
      releasing = { episodes: batch, timer };
    }
    releasing.episodes.add(episode);
  };

  const release = (episode: number) => {
    if (held.delete(episode)) giveBack(episode);
  };

  /** The episode wants no permit: one granted later goes straight back, a queued ask is withdrawn. */
  const drop = (episode: number) => {
    if (asking.has(episode)) {
      unwanted.add(episode);
      giveBack(episode);
    }
    release(episode);
  };

  /** Records what the scheduler granted; a permit no driver wants any more goes straight back. */
  const granted = (episode: number, leaseMs: number, grant: Grant) => {
    routing.granted(episode, grant);
    held.set(episode, { grant, expiresAt: Date.now() + leaseMs, recheck: false });
    if (unwanted.delete(episode)) release(episode);
  };

  /** Tracks an ask for one episode until it settles. */
  const track = (episode: number, ask: Promise<void>) => {
    const tracked = ask.finally(() => {
      if (asking.get(episode) === tracked) asking.delete(episode);
    });
    asking.set(episode, tracked);
    // Failures surface in hold(), which asks again; none must go unhandled here.
    tracked.catch(() => {});
  };

  /** Queues for the episode's permit; a withdrawn ask (its driver ended) settles ungranted. */
  const acquireOne = async (episode: number, leaseMs: number, ask: () => Promise<Grant | null>) => {
    const grant = await retrying(ask);
    if (grant !== null) granted(episode, leaseMs, grant);
  };

  /** Waits until the episode holds a fresh permit, asking with `ask` when it does not. */
  const until = async (
    episode: number,
    leaseMs: number,
    interrupt: AbortSignal | undefined,
    ask: () => Promise<Grant | null>,
    mustAsk: boolean,
  ): Promise<Grant | null> => {
    const interrupted = () => {
      drop(episode);
      return null;
    };
    /**
     * Waits for the episode's ask in flight to settle (a failure thrown on unless `swallow`):
     * false if interrupted first.
     */
    const settled = async (swallow: boolean) => {
      const ask = asking.get(episode) ?? Promise.resolve();
      const pending = swallow ? ask.catch(() => {}) : ask;
      return (
        (await unlessInterrupted(
          pending.then(() => true),
          interrupt,
        )) !== null
      );
    };
    let asked = !mustAsk;
    for (;;) {
      if (interrupt?.aborted) return interrupted();
      // Wanted again before its release went out: the release is taken back, or it would
      // reach the scheduler after this ask and take away the permit it renews.
      releasing?.episodes.delete(episode);
      unwanted.delete(episode);
      // Waits for any ask already on its way (a prefetch, say); a failed one is asked again.
      while (asking.has(episode)) if (!(await settled(true))) return interrupted();
      const permit = held.get(episode);
      if (asked && permit !== undefined && fresh(episode, leaseMs)) return permit.grant;
      asked = true;
      track(episode, acquireOne(episode, leaseMs, ask));
      // Settles granted, or ungranted if a release sent earlier withdrew it: then ask again.
      // A scheduler that stays unreachable fails the hold.
      if (!(await settled(false))) return interrupted();
      const now = held.get(episode);
      if (now !== undefined && fresh(episode, leaseMs)) return now.grant;
    }
  };

  return {
    prefetch(episodes, leaseMs) {
      const wanted = episodes.filter((e) => !asking.has(e) && !fresh(e, leaseMs));
      for (const e of episodes) {
        releasing?.episodes.delete(e);
        unwanted.delete(e);
      }
      if (wanted.length === 0) return;
      const route = routing.groupRoute();
      const asks = wanted.map((e) => ({ ticket: ticket(e), preferred: routing.hostOf(e) }));
      const batch = retrying(() => fleet.acquireMany(asks, groupId, leaseMs, route)).then(
        (answers) => new Map(answers.map((a) => [a.ticket, a.grant])),
      );
      for (const episode of wanted) {
        track(
          episode,
          batch.then((got) => {
            const grant = got.get(ticket(episode));
            if (grant !== undefined) return granted(episode, leaseMs, grant);
            // Its driver ended before the answer came: it does not queue for a permit.
            if (unwanted.delete(episode)) return;
            return acquireOne(episode, leaseMs, () =>
              fleet.acquire(ticket(episode), groupId, leaseMs, routeOf(routing, episode)),
            );
          }),
        );
      }
    },
    async hold(episode, leaseMs, interrupt) {
      // Held already, and no lease to renew: the common case, answered at once.
      const permit = held.get(episode);
      if (!asking.has(episode) && permit && fresh(episode, leaseMs) && interrupt?.aborted !== true)
        return permit.grant;
      return until(
        episode,
        leaseMs,
        interrupt,
        () => fleet.acquire(ticket(episode), groupId, leaseMs, routeOf(routing, episode)),
        false,
      );
    },
    async failed(episode, failure, leaseMs, interrupt) {
      const report: HostFailure = { ...failure, okAt: answeredAt.get(failure.host) ?? 0 };
      // The permit moves with the answer: it is this episode's until then.
      const permit = held.get(episode);
      if (permit) permit.recheck = true;
      return until(
        episode,
        leaseMs,
        interrupt,
        () =>
          fleet.reportFailure(ticket(episode), groupId, leaseMs, routeOf(routing, episode), report),
        true,
      );
    },
    answered(host, at) {
      const first = !answeredAt.has(host);
      if ((answeredAt.get(host) ?? 0) < at) answeredAt.set(host, at);
      // The first answer this group has from a host is told at once, not with the next release:
      // a host readmitted on trial is healthy as soon as anyone hears it, even when episodes are
      // long (releases come at their ends). Once per group and host.
      if (first) retrying(() => fleet.releaseMany(groupId, [], { [host]: at })).catch(() => {});
    },
    recheck() {
      for (const permit of held.values()) permit.recheck = true;
    },
    learnTokenFieldsRefused(host) {
      const { model } = routing.groupRoute();
      retrying(() => fleet.learnTokenFieldsRefused(host, model)).catch(() => {});
    },
    drop,
    async reset() {
      held.clear();
      unwanted.clear();
      if (releasing !== null) clearTimeout(releasing.timer);
      releasing = null;
      await retrying(() => fleet.releaseGroup(groupId));
    },
  };
}
