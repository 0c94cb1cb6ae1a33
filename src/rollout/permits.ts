/** A group's side of the global in-flight limit: one permit per generation it sends. */

export interface Permits {
  /** Waits for a permit for this episode's generation; returns its release. */
  acquire(episode: number, leaseMs: number): Promise<() => Promise<void>>;
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
  acquire: async () => async () => {},
  reset: async () => {},
};

export function groupPermits(env: Env, groupId: string, limit: number): Permits {
  if (limit === 0) return unlimited;
  const limiter = env.INFLIGHT_LIMITER.get(env.INFLIGHT_LIMITER.idFromName("global"));
  return {
    async acquire(episode, leaseMs) {
      const ticket = `${groupId}:${episode}`;
      await retrying(() => limiter.acquire(ticket, groupId, leaseMs, limit));
      return async () => {
        // A release that cannot get through is reclaimed when the permit's lease expires.
        await retrying(() => limiter.release(ticket)).catch(() => {});
      };
    },
    async reset() {
      await retrying(() => limiter.releaseGroup(groupId));
    },
  };
}
