/**
 * The one lag rule of asynchronous RL, and the verdict it gives a group: work sampled at a
 * version more than the run's `max_lag` behind its policy refuses a start (api/groups.ts),
 * cancels a running group (staleness, in the group object), and is left out of pacing
 * (pacing.ts). A lease that names its own lag keeps to the same rule (trainer/lease-request.ts).
 */
import type { KnownPolicy } from "./known-policy";

type Lag = Pick<KnownPolicy, "version" | "maxLag">;

/** The oldest version within `max_lag` of the policy's; null when there is no limit. */
export function oldestWithinLag(policy: Lag): number | null {
  return policy.maxLag === null ? null : policy.version - policy.maxLag;
}

/** Work sampled at `version` is more than the run's `max_lag` behind its policy. */
export function beyondMaxLag(policy: Lag, version: number): boolean {
  const oldest = oldestWithinLag(policy);
  return oldest !== null && version < oldest;
}

/** Whether a group must be cancelled as stale, and if so, by how much and why, in words. */
export type Staleness =
  | { stale: false }
  | {
      stale: true;
      /** The run's version now. */
      version: number;
      /** The lowest version the group's generations went out at. */
      lowest: number;
      maxLag: number;
      /** What the group's stale episodes record as their failure detail. */
      detail: string;
    };

/** A group whose oldest generation went out at `lowest`, judged against the run's policy. */
export function staleness(policy: Lag, lowest: number): Staleness {
  const { version, maxLag } = policy;
  if (maxLag === null || !beyondMaxLag(policy, lowest)) return { stale: false };
  return {
    stale: true,
    version,
    lowest,
    maxLag,
    detail: `the run's policy moved to version ${version}; this group's lowest version is ${lowest}, more than max_lag ${maxLag} behind`,
  };
}
