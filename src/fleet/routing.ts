/**
 * Which host an episode's generations go to: affinity first, then load. An episode stays on the
 * host it has (its turns extend one another: the host's prefix cache holds its conversation); a
 * new one goes to its group's home (the group's episodes share their prompt). A group's home is
 * the least loaded host (by weight) when it starts: its key is a fresh id that no cache has
 * seen, so nothing is lost by choosing for load, and homing whole groups by hash alone leaves
 * hosts a third apart at 32 groups over 4 hosts. Ties go by rendezvous order (highest random
 * weight), so an idle fleet homes each group on the first host of its own stable order. Load
 * bounds the affinities, as in consistent hashing with bounded loads (Mirrokni et al., 2018): a
 * host is passed over when taking one more would put it above its cap, or more than
 * `loadFactor` times the fleet's mean load and by more than `slack` episodes.
 */

export interface HostLoad {
  url: string;
  weight: number;
  /** Episodes holding a permit on it. */
  load: number;
  /** Episodes it may hold at most (Infinity for no limit). */
  cap: number;
  /** Healthy (or being tried again), not paused, serving a version this request may use. */
  available: boolean;
}

export interface LoadBound {
  /** Default 1.5: a host may carry up to 1.5 times the mean (weighted) load... */
  loadFactor: number;
  /** ...or `slack` episodes over it, whichever is more: small fleets are not split hair-fine. */
  slack: number;
}

export const DEFAULT_BOUND: LoadBound = { loadFactor: 1.5, slack: 4 };

/** 32-bit FNV-1a, then murmur3's finalizer: an even spread from short, similar keys. */
function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** Weighted rendezvous score (Schindelhauer and Schomaker): highest wins. */
function score(key: string, host: { url: string; weight: number }): number {
  const u = (hash32(`${key}\u0000${host.url}`) + 0.5) / 2 ** 32;
  return host.weight / -Math.log(u);
}

/** The hosts in `key`'s rendezvous order: the same order for the same key and hosts. */
export function rendezvousOrder<H extends { url: string; weight: number }>(
  key: string,
  hosts: readonly H[],
): H[] {
  return hosts
    .map((host) => ({ host, s: score(key, host) }))
    .sort((a, b) => b.s - a.s)
    .map((e) => e.host);
}

/** Whether one more episode would put the host above its cap or its bound. */
export function overloaded(host: HostLoad, hosts: readonly HostLoad[], bound: LoadBound): boolean {
  if (host.load + 1 > host.cap) return true;
  let total = 1;
  let weights = 0;
  for (const h of hosts)
    if (h.available) {
      total += h.load;
      weights += h.weight;
    }
  if (weights === 0) return false;
  // Its fair share after this episode, by weight.
  const share = (total / weights) * host.weight;
  return host.load + 1 > bound.loadFactor * share && host.load + 1 - share > bound.slack;
}

/**
 * The host for one more episode, or null when every available host is at its cap (it waits).
 * `preferred`: the episode's own host, then its group's home, then the hosts its group's other
 * episodes hold (the scheduler adds those), tried in order before the rest.
 */
export function chooseHost(
  key: string,
  preferred: readonly (string | null)[],
  hosts: readonly HostLoad[],
  bound: LoadBound = DEFAULT_BOUND,
): string | null {
  const available = hosts.filter((h) => h.available);
  for (const url of preferred) {
    const host = available.find((h) => h.url === url);
    if (host !== undefined && !overloaded(host, hosts, bound)) return host.url;
  }
  // The least loaded by weight among those under their cap (sort is stable: ties keep the
  // rendezvous order).
  const underCap = rendezvousOrder(key, available).filter((h) => h.load + 1 <= h.cap);
  underCap.sort((a, b) => (a.load + 1) / a.weight - (b.load + 1) / b.weight);
  return underCap[0]?.url ?? null;
}
