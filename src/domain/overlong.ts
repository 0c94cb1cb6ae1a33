/**
 * The over-long rule: an episode is over-long when its last sampled action hit its token cap
 * (finish reason `length`: the answer was cut, not finished), and its group's `overlong` policy
 * says what becomes of it. Credit (rollout/rewards.ts), landing's `uniform` (rollout/landing.ts),
 * leases and token samples (trainer/) all ask here, so the rule has one home.
 */
import type { Overlong } from "./group-options";

/** A transcript message as far as the rule reads it: whether it was sampled, and cut. */
interface ActionFacts {
  sampled: boolean;
  truncated: boolean | null;
}

/** Whether the episode's last sampled action was cut at its token cap; false if it sampled none. */
export function isOverlong(transcript: readonly ActionFacts[]): boolean {
  return transcript.findLast((m) => m.sampled)?.truncated === true;
}

/**
 * What the group's policy does with one episode: `count` it as any other, `mask` it (advantage
 * 0, every sample's mask 0) or `filter` it (no advantage, never leased). Only over-long episodes
 * are masked or filtered; under `keep` none are.
 */
export type OverlongTreatment = "count" | "mask" | "filter";

export function overlongTreatment(policy: Overlong, overlong: boolean): OverlongTreatment {
  return overlong && policy !== "keep" ? policy : "count";
}
