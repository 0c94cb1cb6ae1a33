/** What a trainer asks for when it leases a batch. */
import { z } from "zod";
import { oldestWithinLag } from "../policy/lag";
import { TOKEN_ENCODINGS } from "../tokens/sample-encoding";

export const INCLUDE = ["messages", "per_turn", "sft", "tokens"] as const;

export const LeaseRequestSchema = z
  .strictObject({
    /** Whole groups only: at most this many groups... */
    max_groups: z.number().int().min(1).max(1000).optional(),
    /** ...and at most this many episodes (one group larger than this is served alone). */
    max_episodes: z.number().int().min(1).max(20_000).optional(),
    run_id: z.string().min(1).max(128).optional(),
    env: z.string().min(1).max(128).optional(),
    min_policy_version: z.number().int().min(0).optional(),
    /** With `current_policy_version`: serve groups at most this many versions behind it. */
    max_policy_lag: z.number().int().min(0).optional(),
    current_policy_version: z.number().int().min(0).optional(),
    lease_seconds: z.number().int().min(1).max(86_400).default(300),
    /** Groups whose scores are all equal carry no GRPO signal; they stay in D1, marked. */
    skip_uniform_groups: z.boolean().default(true),
    /** Parked (poison) groups are served only when asked for explicitly. */
    include_parked: z.boolean().default(false),
    include: z.array(z.enum(INCLUDE)).max(INCLUDE.length).default(["messages", "per_turn"]),
    /** With `include: ["tokens"]`: arrays as JSON lists, or base64 of little-endian bytes. */
    token_encoding: z.enum(TOKEN_ENCODINGS).default("json"),
  })
  .refine((r) => r.max_groups !== undefined || r.max_episodes !== undefined, {
    message: "give max_groups, max_episodes, or both",
    path: ["max_groups"],
  })
  .refine((r) => r.max_policy_lag === undefined || r.current_policy_version !== undefined, {
    message: "max_policy_lag needs current_policy_version",
    path: ["max_policy_lag"],
  });
export type LeaseRequest = z.infer<typeof LeaseRequestSchema>;

/** The oldest policy version a request accepts: the lag rule, with the trainer's own lag. */
export function minPolicyVersion(request: LeaseRequest): number {
  const lagged =
    request.current_policy_version === undefined
      ? null
      : oldestWithinLag({
          version: request.current_policy_version,
          maxLag: request.max_policy_lag ?? null,
        });
  return Math.max(request.min_policy_version ?? 0, lagged ?? 0, 0);
}
