/**
 * A run's policy as a running group needs it: pushed to the group object over RPC on every
 * change, re-read from D1 on its heartbeat. `revision` orders updates.
 */
import { z } from "zod";
import type { RunPolicy } from "../db/run-policies";

export const KnownPolicySchema = z.object({
  version: z.number().int().min(0),
  /** How many versions behind a group's policy may be; null for no limit. */
  maxLag: z.number().int().min(0).nullable(),
  paused: z.boolean(),
  /** This update's pause aborts the generations in flight. Absent in an older push: false. */
  interrupt: z.boolean().default(false),
  revision: z.number().int().min(1),
});
export type KnownPolicy = z.infer<typeof KnownPolicySchema>;

export function knownPolicy(policy: RunPolicy): KnownPolicy {
  return {
    version: policy.version,
    maxLag: policy.maxLag,
    paused: policy.paused,
    interrupt: policy.interrupt,
    revision: policy.revision,
  };
}
