/**
 * What a graded group's credit and summary are computed from, one member per episode, whether the
 * grades are in the group's object (its first grading) or in D1 (a re-score): the same rules in
 * one place. Failed episodes take no part; over-long ones a group masks or filters are graded but
 * left out of the baseline (domain/overlong.ts).
 */
import type { OverlongTreatment } from "../domain/overlong";
import {
  type AdvantageMode,
  assignGroupCredit,
  type CreditAssignment,
  type GroupCredit,
} from "../sdk";

export interface GradedMember {
  /** Names the episode in warnings. */
  id: string;
  /** Its score; null when it failed (in play, or its grading did). */
  score: number | null;
  failureReason: string | null;
  /** `reward.metadata.per_turn_rewards` as the environment returned it. */
  perTurnRewards: unknown;
  turns: number;
  treatment: OverlongTreatment;
}

/** An over-long episode the group masks or filters: out of the baseline, with 0 or no advantage. */
const EXCLUDED = { count: undefined, mask: { advantage: 0 }, filter: { advantage: null } } as const;

export function groupCredit(
  members: readonly GradedMember[],
  options: { creditAssignment: CreditAssignment; advantage: AdvantageMode },
): GroupCredit {
  return assignGroupCredit(
    members.map((m) => ({
      id: m.id,
      score: m.score,
      perTurnRewards: m.perTurnRewards,
      sampledTurns: m.turns,
      excluded: EXCLUDED[m.treatment],
    })),
    options,
  );
}

/**
 * The group's row as its grades make it: `landed` with any score (else `failed`, saying what
 * failed its episodes), the scores' mean and population deviation, and `uniform`: equal counted
 * scores carry no group-relative signal (a group of one is uniform by definition, and so is one
 * whose every scored episode was masked or filtered as over-long); a distilled group's signal is
 * per token (the teacher's logprobs), whatever its scores.
 */
export function groupSummary(members: readonly GradedMember[], algorithm: string) {
  const scores = members.flatMap((m) => (m.score === null ? [] : [m.score]));
  const counted = members.flatMap((m) =>
    m.score !== null && m.treatment === "count" ? [m.score] : [],
  );
  const failed = members.filter((m) => m.score === null);
  const mean = scores.length > 0 ? scores.reduce((a, b) => a + b, 0) / scores.length : null;
  const std =
    mean === null
      ? null
      : Math.sqrt(scores.reduce((a, s) => a + (s - mean) ** 2, 0) / scores.length);
  const byReason = new Map<string, number>();
  for (const m of failed) {
    const reason = m.failureReason ?? "unknown";
    byReason.set(reason, (byReason.get(reason) ?? 0) + 1);
  }
  const reasons = [...byReason].map(([reason, n]) => `${reason} x${n}`);
  const status: "landed" | "failed" = scores.length > 0 ? "landed" : "failed";
  return {
    status,
    failureReason: status === "failed" ? `every episode failed: ${reasons.join(", ")}` : null,
    scoreMean: mean,
    scoreStd: std,
    episodesFailed: failed.length,
    uniform: algorithm !== "opd" && scores.length > 0 && counted.every((s) => s === counted[0]),
  };
}
