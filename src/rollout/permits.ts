/**
 * A group's side of the global in-flight limit. Each episode holds one permit from its first
 * generation until it ends or parks: one call to the limiter per episode rather than two per
 * turn. The lease is renewed only when it runs low.
 */

export interface Permits {
  /** Makes sure the episode holds a permit, waiting in the fair queue if the limit is reached. */
  hold(episode: number, leaseMs: number): Promise<void>;
  /** Gives the episode's permit back: it ended, parked, or its driver stopped. */
  drop(episode: number): Promise<void>;
  /** Frees what an earlier instance of this group held; called once when it resumes. */
  reset(): Promise<void>;
}

/** The limiter restarts like any object; a call cut short by that is tried again. */
async function retrying<T>(call: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      if (attempt >= 6) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100 * 2 ** attempt));
    }
  }
}

const unlimited: Permits = {
  hold: async () => {},
  drop: async () => {},
  reset: async () => {},
};

export function groupPermits(env: Env, groupId: string, limit: number): Permits {
  if (limit === 0) return unlimited;
  const limiter = env.INFLIGHT_LIMITER.get(env.INFLIGHT_LIMITER.idFromName("global"));
  /** Lease expiry of the permits this instance holds, by episode. */
  const held = new Map<number, number>();
  return {
    async hold(episode, leaseMs) {
      const expiresAt = held.get(episode);
      // Renew when less than half the lease is left, so a long episode never loses its permit.
      if (expiresAt !== undefined && expiresAt - Date.now() > leaseMs / 2) return;
      await retrying(() => limiter.acquire(`${groupId}:${episode}`, groupId, leaseMs, limit));
      held.set(episode, Date.now() + leaseMs);
    },
    async drop(episode) {
      if (!held.delete(episode)) return;
      // A release that cannot get through is reclaimed when the permit's lease expires.
      await retrying(() => limiter.release(`${groupId}:${episode}`)).catch(() => {});
    },
    async reset() {
      held.clear();
      await retrying(() => limiter.releaseGroup(groupId));
    },
  };
}
