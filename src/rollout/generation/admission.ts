/**
 * When an episode may send its generation, and where: once it holds a permit on a host of the
 * fleet (src/fleet/) and its run is not paused for a weight sync. The deadline clock starts only
 * after this.
 */
import { generationDeadlineMs } from "../../config";
import type { Grant } from "../../fleet/fleet-api";
import type { GroupRuntime } from "../group-runtime";

export type Admission =
  /** It holds a permit on `grant.host`; its run was not paused meanwhile. */
  | { kind: "ready"; grant: Grant }
  /** It holds a permit after waiting out a pause: a parked retry's window must start afresh. */
  | { kind: "after_pause"; grant: Grant }
  /** Its group was cancelled as stale instead. */
  | { kind: "cancelled" };

/**
 * How long an episode's permit is leased for: its generation's deadline window and a minute
 * more. Renewed while it runs; the lease only matters when a holder disappears.
 */
export function permitLeaseMs(rt: Pick<GroupRuntime, "config" | "spec">): number {
  return generationDeadlineMs(rt.config, rt.spec.request.max_context_tokens) + 60_000;
}

/**
 * Waits until the episode may send a generation. A paused run's episodes give their permits back
 * while they wait (and a pause gives up the place in line of one still queued), so a weight sync
 * in one run never holds up another's generations, and no deadline runs meanwhile.
 */
export async function admit(rt: GroupRuntime, idx: number): Promise<Admission> {
  const { permits } = rt.generation;
  let paused = false;
  for (;;) {
    if (rt.policy.paused) {
      paused = true;
      permits.drop(idx);
      await rt.policy.untilRunnable();
    }
    if (rt.policy.stale !== null) return { kind: "cancelled" };
    // Interrupted by a pause or the cancellation while queued: go round again.
    const grant = await permits.hold(idx, permitLeaseMs(rt), rt.policy.interruption);
    if (grant === null) continue;
    if (rt.policy.stale !== null) return { kind: "cancelled" };
    // Paused just as the permit came: it waits again, the permit given back.
    if (!rt.policy.paused)
      return paused ? { kind: "after_pause", grant } : { kind: "ready", grant };
  }
}
