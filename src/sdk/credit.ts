/**
 * Credit assignment for a rollout group: group-relative advantages per episode (GRPO) and,
 * under `per_turn` credit, per sampled assistant turn. Falling back is never silent.
 */

export type CreditAssignment = "per_episode" | "per_turn";
export type AdvantageMode = "mean" | "mean_std";

/** Added to the standard deviation so a group of near-equal rewards does not divide by zero. */
export const STD_EPSILON = 1e-6;

function mean(values: readonly number[]): number {
  return values.reduce((a, b) => a + b, 0) / values.length;
}

/** Sample standard deviation (n - 1), as TRL and verl compute it for GRPO; 0 for one value. */
function sampleStd(values: readonly number[]): number {
  if (values.length < 2) return 0;
  const m = mean(values);
  return Math.sqrt(values.reduce((a, v) => a + (v - m) ** 2, 0) / (values.length - 1));
}

/**
 * `value - mean`, with the rounding error of the mean taken out: 0.2 - mean([0.2, 0.2, 0.2])
 * is 2.8e-17 in floating point, and a trainer should read a 0 where a 0 is meant. A difference
 * within a few ulps of the operands' size is that error, never signal.
 */
function centre(value: number, m: number): number {
  const centred = value - m;
  return Math.abs(centred) <= 8 * Number.EPSILON * Math.max(Math.abs(value), Math.abs(m))
    ? 0
    : centred;
}

function normalise(value: number, members: readonly number[], mode: AdvantageMode): number {
  const centred = centre(value, mean(members));
  return mode === "mean" ? centred : centred / (sampleStd(members) + STD_EPSILON);
}

/**
 * Episode advantages: `r - mean(r)` or `(r - mean) / (std + 1e-6)` over the scored members.
 * `null` scores (failed episodes) take no part and get no advantage, nor do those `excluded`
 * by index (over-long episodes a group masks or filters); with fewer than two scored members
 * left there is nothing to compare, so no one gets an advantage.
 */
export function groupAdvantages(
  scores: readonly (number | null)[],
  mode: AdvantageMode,
  excluded: readonly boolean[] = [],
): (number | null)[] {
  const counted = scores.map((s, i) => (excluded[i] ? null : s));
  const members = counted.filter((s): s is number => s !== null);
  if (members.length < 2) return scores.map(() => null);
  return counted.map((s) => (s === null ? null : normalise(s, members, mode)));
}

/**
 * Per-turn advantages: each turn's reward minus the mean reward at that turn index over the
 * members that have that turn (divided by that std + 1e-6 under `mean_std`).
 */
export function perTurnAdvantages(
  vectors: readonly (readonly number[] | null)[],
  mode: AdvantageMode,
): (number[] | null)[] {
  const longest = Math.max(0, ...vectors.map((v) => v?.length ?? 0));
  const atIndex: number[][] = Array.from({ length: longest }, (_, t) =>
    vectors.flatMap((v) => (v !== null && t < v.length ? [v[t] as number] : [])),
  );
  return vectors.map((v) => v?.map((r, t) => normalise(r, atIndex[t] as number[], mode)) ?? null);
}

/**
 * Why a `per_turn_rewards` vector cannot be used, or null when it is valid: it must hold one
 * finite number per sampled assistant turn, in order.
 */
export function perTurnRewardsProblem(value: unknown, sampledTurns: number): string | null {
  if (value === undefined || value === null) return "per_turn_rewards is missing";
  if (!Array.isArray(value)) return "per_turn_rewards is not a list";
  if (value.length !== sampledTurns) {
    return `per_turn_rewards has ${value.length} values for ${sampledTurns} sampled turns`;
  }
  const bad = value.findIndex((r) => typeof r !== "number" || !Number.isFinite(r));
  if (bad !== -1) return `per_turn_rewards[${bad}] is not a finite number (${String(value[bad])})`;
  return null;
}

export interface CreditMember {
  /** Names the episode in warnings. */
  id: string;
  /** The episode's score, or null when it failed and takes no part. */
  score: number | null;
  /** `reward.metadata.per_turn_rewards` as the environment returned it. */
  perTurnRewards: unknown;
  /** How many sampled assistant turns the episode recorded. */
  sampledTurns: number;
  /**
   * Left out of the group's baseline (an over-long episode its group masks or filters), with
   * the advantage it gets instead: 0 (and 0 at every turn), or none. Its score stays its own.
   */
  excluded?: { advantage: 0 | null };
}

export interface GroupCredit {
  /** The credit actually applied: `per_episode` after a fallback. */
  creditAssignment: CreditAssignment;
  advantages: (number | null)[];
  /** Valid per-turn rewards, kept for the logs under either credit. */
  perTurnRewards: (number[] | null)[];
  /** Set only under per-turn credit; under episode credit every turn shares `advantages`. */
  perTurnAdvantages: (number[] | null)[];
  warnings: string[];
}

export function assignGroupCredit(
  members: readonly CreditMember[],
  options: { creditAssignment: CreditAssignment; advantage: AdvantageMode },
): GroupCredit {
  const excluded = members.map((m) => m.excluded !== undefined);
  const baseline = groupAdvantages(
    members.map((m) => m.score),
    options.advantage,
    excluded,
  );
  // A scored member left out of the baseline gets what its exclusion says; a failed one, none.
  const advantages = members.map((m, i) =>
    m.excluded !== undefined && m.score !== null ? m.excluded.advantage : (baseline[i] ?? null),
  );
  const problems = members.map((m) =>
    m.score === null ? null : perTurnRewardsProblem(m.perTurnRewards, m.sampledTurns),
  );
  const perTurnRewards = members.map((m, i) =>
    m.score !== null && problems[i] === null ? (m.perTurnRewards as number[]) : null,
  );
  const none = members.map(() => null);
  if (options.creditAssignment === "per_episode") {
    return {
      creditAssignment: "per_episode",
      advantages,
      perTurnRewards,
      perTurnAdvantages: none,
      warnings: [],
    };
  }
  const warnings = members.flatMap((m, i) =>
    problems[i] ? [`episode ${m.id}: ${problems[i]}`] : [],
  );
  if (warnings.length > 0) {
    warnings.push("per_turn credit fell back to per_episode for the whole group");
    return {
      creditAssignment: "per_episode",
      advantages,
      perTurnRewards,
      perTurnAdvantages: none,
      warnings,
    };
  }
  const counted = members.filter((m, i) => m.score !== null && !excluded[i]).length;
  const baselineTurns =
    counted < 2
      ? none
      : perTurnAdvantages(
          perTurnRewards.map((v, i) => (excluded[i] ? null : v)),
          options.advantage,
        );
  // A member excluded with advantage 0 gets 0 at each of its turns too.
  const perTurn = baselineTurns.map((v, i) =>
    members[i]?.excluded?.advantage === 0 ? (perTurnRewards[i]?.map(() => 0) ?? null) : v,
  );
  return {
    creditAssignment: "per_turn",
    advantages,
    perTurnRewards,
    perTurnAdvantages: perTurn,
    warnings,
  };
}
