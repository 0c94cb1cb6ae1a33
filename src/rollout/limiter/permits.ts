/**
 * A group's side of the global in-flight limit. Each episode holds one permit from when its
 * driver starts until it ends or parks, renewed only when its lease runs low. A call to the
 * limiter costs more than what the limiter does with it, so the group batches them: one call
 * asks for the permits of every episode it starts (`prefetch`), and releases made close
 * together go out as one call.
 */

import { backoffDelayMs, sleep } from "../../utils/backoff";
import { inflightLimiter } from "../bindings";

export interface Permits {
  /**
   * Asks, in one call, for the permits of episodes about to run; `hold` then waits for that
   * answer instead of asking again. What cannot be granted at once queues per episode.
   */
  prefetch(episodes: readonly number[], leaseMs: number): void;
  /**
   * Makes sure the episode holds a permit, waiting in the fair queue if the limit is reached.
   * True once it does; false if `interrupt` fired first (its run paused, or its group was
   * cancelled): its place in line is given up, and it holds nothing.
   */
  hold(episode: number, leaseMs: number, interrupt?: AbortSignal): Promise<boolean>;
  /** Gives the episode's permit back: it ended, parked, or its driver stopped. */
  drop(episode: number): void;
  /** Frees what an earlier instance of this group held; called once when it resumes. */
  reset(): Promise<void>;
}

/** Releases made within this long of each other go to the limiter as one call. */
const RELEASE_BATCH_MS = 20;

/** The limiter restarts like any object; a call cut short by that is tried again. */
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

/** True once `waiting` settles (rejecting as it does), false as soon as `signal` fires. */
function unlessInterrupted(waiting: Promise<unknown>, signal: AbortSignal | undefined) {
  if (signal === undefined) return waiting.then(() => true);
  if (signal.aborted) return Promise.resolve(false);
  return new Promise<boolean>((resolve, reject) => {
    const onAbort = () => resolve(false);
    signal.addEventListener("abort", onAbort, { once: true });
    waiting
      .then(
        () => resolve(true),
        (error) => reject(error),
      )
      .finally(() => signal.removeEventListener("abort", onAbort));
  });
}

const unlimited: Permits = {
  prefetch: () => {},
  hold: async (_episode, _leaseMs, interrupt) => interrupt?.aborted !== true,
  drop: () => {},
  reset: async () => {},
};

export function groupPermits(
  env: Env,
  groupId: string,
  limit: number,
  /** The limiter object's name: one global limiter, unless a test wants its own. */
  limiterName = "global",
): Permits {
  if (limit === 0) return unlimited;
  const limiter = inflightLimiter(env, limiterName);
  const ticket = (episode: number) => `${groupId}:${episode}`;
  /** Lease expiry of the permits this instance holds, by episode. */
  const held = new Map<number, number>();
  /** Asks in flight, by episode; each settles once the episode holds its permit or gave up. */
  const asking = new Map<number, Promise<void>>();
  /** Episodes whose driver ended while their permit was still being asked for. */
  const unwanted = new Set<number>();
  let releasing: { episodes: Set<number>; timer: ReturnType<typeof setTimeout> } | null = null;

  const fresh = (episode: number, leaseMs: number) => {
    const expiresAt = held.get(episode);
    // Renew when less than half the lease is left, so a long episode never loses its permit.
    return expiresAt !== undefined && expiresAt - Date.now() > leaseMs / 2;
  };

  /** Sends the episode's ticket back with the next batch: its permit, or its place in line. */
  const giveBack = (episode: number) => {
    if (releasing === null) {
      const batch = new Set<number>();
      const timer = setTimeout(() => {
        releasing = null;
        // A release that cannot get through is reclaimed when the permit's lease expires.
        retrying(() => limiter.releaseMany(groupId, [...batch].map(ticket))).catch(() => {});
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

  /** Records what the limiter granted; a permit no driver wants any more goes straight back. */
  const granted = (episode: number, leaseMs: number) => {
    held.set(episode, Date.now() + leaseMs);
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
  const acquireOne = async (episode: number, leaseMs: number) => {
    if (await retrying(() => limiter.acquire(ticket(episode), groupId, leaseMs, limit)))
      granted(episode, leaseMs);
  };

  return {
    prefetch(episodes, leaseMs) {
      const wanted = episodes.filter((e) => !asking.has(e) && !fresh(e, leaseMs));
      for (const e of episodes) {
        releasing?.episodes.delete(e);
        unwanted.delete(e);
      }
      if (wanted.length === 0) return;
      const batch = retrying(() =>
        limiter.acquireMany(wanted.map(ticket), groupId, leaseMs, limit),
      ).then((tickets) => new Set(tickets));
      for (const episode of wanted) {
        track(
          episode,
          batch.then((got) => {
            if (got.has(ticket(episode))) return granted(episode, leaseMs);
            // Its driver ended before the answer came: it does not queue for a permit.
            if (unwanted.delete(episode)) return;
            return acquireOne(episode, leaseMs);
          }),
        );
      }
    },
    async hold(episode, leaseMs, interrupt) {
      // Held already, and no lease to renew: the common case, answered at once.
      if (!asking.has(episode) && fresh(episode, leaseMs) && interrupt?.aborted !== true)
        return true;
      const interrupted = () => {
        drop(episode);
        return false;
      };
      for (;;) {
        if (interrupt?.aborted) return interrupted();
        // Wanted again before its release went out: the release is taken back, or it would
        // reach the limiter after this ask and take away the permit it renews.
        releasing?.episodes.delete(episode);
        unwanted.delete(episode);
        // Waits for any ask already on its way (a prefetch, say); a failed one is asked again.
        while (asking.has(episode)) {
          const ask = asking.get(episode)?.catch(() => {}) ?? Promise.resolve();
          if (!(await unlessInterrupted(ask, interrupt))) return interrupted();
        }
        if (fresh(episode, leaseMs)) return true;
        track(episode, acquireOne(episode, leaseMs));
        // Settles granted, or ungranted if a release sent earlier withdrew it: then ask again.
        // A limiter that stays unreachable fails the hold, as it always did.
        const ask = asking.get(episode) ?? Promise.resolve();
        if (!(await unlessInterrupted(ask, interrupt))) return interrupted();
      }
    },
    drop,
    async reset() {
      held.clear();
      unwanted.clear();
      if (releasing !== null) clearTimeout(releasing.timer);
      releasing = null;
      await retrying(() => limiter.releaseGroup(groupId));
    },
  };
}
