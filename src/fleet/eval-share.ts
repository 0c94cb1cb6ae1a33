/**
 * Evaluations beside training: each host keeps a share of its cap (EVAL_SHARE) for evaluation
 * episodes. While an evaluation waits, training takes no new permit that would leave the share
 * short, and evaluations are served first until they hold it; when none waits, training uses the
 * whole cap. Past its share an evaluation takes a permit only when no training episode waits.
 * Permits last an episode, so a waiting evaluation gets its share as soon as enough training
 * episodes end: in bounded time, with training never stopped (it keeps the rest).
 */

/** The permits a host keeps for evaluations: at least one when the share is not 0. */
export function evalReserve(cap: number, share: number): number {
  if (share <= 0 || !Number.isFinite(cap) || cap <= 0) return 0;
  return Math.min(cap, Math.max(1, Math.floor(cap * share)));
}

/**
 * The cap a training episode sees on a host while an evaluation waits: the host's cap less the
 * part of the reserve evaluations do not hold yet.
 */
export function trainingCap(cap: number, share: number, evalLoad: number): number {
  return cap - Math.max(0, evalReserve(cap, share) - evalLoad);
}

/** The cap of an evaluation served first: what its reserve still has room for, within the cap. */
export function reservedCap(cap: number, share: number, load: number, evalLoad: number): number {
  const room = Math.min(cap - load, evalReserve(cap, share) - evalLoad);
  return load + Math.max(0, room);
}
