import { describe, expect, it } from "vitest";
import {
  assignGroupCredit,
  type CreditMember,
  groupAdvantages,
  perTurnAdvantages,
  perTurnRewardsProblem,
  STD_EPSILON,
} from "../../src/sdk";

describe("group-relative episode advantages", () => {
  it("mean: r - mean(r)", () => {
    expect(groupAdvantages([1, 0, 0, 1], "mean")).toEqual([0.5, -0.5, -0.5, 0.5]);
  });

  it("mean_std: (r - mean) / (sample std + 1e-6)", () => {
    const std = Math.sqrt(1 / 3); // sample std of [1, 0, 0, 1]
    const [a, b] = groupAdvantages([1, 0, 0, 1], "mean_std") as number[];
    expect(a).toBeCloseTo(0.5 / (std + STD_EPSILON), 9);
    expect(b).toBeCloseTo(-0.5 / (std + STD_EPSILON), 9);
  });

  it("gives a uniform group zero advantage without dividing by zero", () => {
    expect(groupAdvantages([0.5, 0.5, 0.5], "mean_std")).toEqual([0, 0, 0]);
  });

  it("gives equal rewards exactly zero, not the mean's rounding error", () => {
    // In floating point mean([0.2, 0.2, 0.2]) is 0.20000000000000004.
    expect(0.2 - (0.2 + 0.2 + 0.2) / 3).not.toBe(0);
    expect(groupAdvantages([0.2, 0.2, 0.2], "mean")).toEqual([0, 0, 0]);
    expect(groupAdvantages([0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1], "mean_std")).toEqual(
      Array(7).fill(0),
    );
    expect(
      perTurnAdvantages(
        [
          [1, 0.2],
          [0, 0.2],
          [1, 0.2],
        ],
        "mean",
      )[1]?.[1],
    ).toBe(0);
    // A real difference, however small against the rewards, is kept.
    expect(groupAdvantages([1, 1 + 1e-9], "mean")[0]).toBeCloseTo(-5e-10, 15);
  });

  it("leaves failed episodes out of the statistics and without an advantage", () => {
    expect(groupAdvantages([1, null, 0], "mean")).toEqual([0.5, null, -0.5]);
  });

  it("leaves excluded members out of the statistics and without an advantage", () => {
    expect(groupAdvantages([1, 0, 0.5, 1, 0], "mean", [false, false, true])).toEqual([
      0.5,
      -0.5,
      null,
      0.5,
      -0.5,
    ]);
    expect(groupAdvantages([1, 0], "mean", [true])).toEqual([null, null]);
  });

  it("gives no advantage when there is nothing to compare (a group of one)", () => {
    expect(groupAdvantages([0.7], "mean")).toEqual([null]);
    expect(groupAdvantages([0.7, null], "mean")).toEqual([null, null]);
  });
});

describe("per-turn advantages", () => {
  it("subtract the mean at each turn index over the members that have that turn", () => {
    const advantages = perTurnAdvantages([[1, 0.2, 1], [0, 0.2], [0.2]], "mean");
    const mean0 = (1 + 0 + 0.2) / 3;
    expect(advantages[0]?.[0]).toBeCloseTo(1 - mean0, 12);
    expect(advantages[1]?.[0]).toBeCloseTo(0 - mean0, 12);
    expect(advantages[2]?.[0]).toBeCloseTo(0.2 - mean0, 12);
    expect(advantages[0]?.[1]).toBe(0);
    expect(advantages[0]?.[2]).toBe(0); // the only member with a third turn
    expect(advantages[2]).toHaveLength(1);
  });

  it("skip members without a vector", () => {
    expect(perTurnAdvantages([[1], null, [0]], "mean")).toEqual([[0.5], null, [-0.5]]);
  });
});

describe("validating per_turn_rewards", () => {
  it("accepts one finite number per sampled turn", () => {
    expect(perTurnRewardsProblem([1, 0, 0.2], 3)).toBeNull();
  });

  it("names what is wrong", () => {
    expect(perTurnRewardsProblem(undefined, 2)).toBe("per_turn_rewards is missing");
    expect(perTurnRewardsProblem("1,0", 2)).toBe("per_turn_rewards is not a list");
    expect(perTurnRewardsProblem([1], 2)).toBe("per_turn_rewards has 1 values for 2 sampled turns");
    expect(perTurnRewardsProblem([1, Number.NaN], 2)).toBe(
      "per_turn_rewards[1] is not a finite number (NaN)",
    );
    expect(perTurnRewardsProblem([1, Number.POSITIVE_INFINITY], 2)).toMatch(
      /\[1\] is not a finite/,
    );
    expect(perTurnRewardsProblem([1, "0"], 2)).toMatch(/\[1\] is not a finite number/);
  });
});

const member = (
  id: string,
  score: number | null,
  perTurn: unknown,
  turns: number,
): CreditMember => ({
  id,
  score,
  perTurnRewards: perTurn,
  sampledTurns: turns,
});

describe("assigning credit to a group", () => {
  const valid = [member("e0", 1, [0.2, 1], 2), member("e1", 0, [0, 0], 2)];

  it("per_episode: episode advantages, per-turn rewards kept for the logs, no per-turn advantages", () => {
    const credit = assignGroupCredit(valid, { creditAssignment: "per_episode", advantage: "mean" });
    expect(credit.creditAssignment).toBe("per_episode");
    expect(credit.advantages).toEqual([0.5, -0.5]);
    expect(credit.perTurnRewards).toEqual([
      [0.2, 1],
      [0, 0],
    ]);
    expect(credit.perTurnAdvantages).toEqual([null, null]);
    expect(credit.warnings).toEqual([]);
  });

  it("per_turn: each sampled turn gets its own group-relative advantage", () => {
    const credit = assignGroupCredit(valid, { creditAssignment: "per_turn", advantage: "mean" });
    expect(credit.creditAssignment).toBe("per_turn");
    expect(credit.perTurnAdvantages[0]?.[0]).toBeCloseTo(0.1, 12);
    expect(credit.perTurnAdvantages[0]?.[1]).toBeCloseTo(0.5, 12);
    expect(credit.perTurnAdvantages[1]?.[0]).toBeCloseTo(-0.1, 12);
  });

  const fallbacks: [string, unknown, string][] = [
    ["missing", undefined, "episode e1: per_turn_rewards is missing"],
    ["wrong length", [0], "episode e1: per_turn_rewards has 1 values for 2 sampled turns"],
    ["non-finite", [0, Number.NaN], "episode e1: per_turn_rewards[1] is not a finite number (NaN)"],
  ];
  for (const [label, vector, warning] of fallbacks) {
    it(`per_turn with a ${label} vector falls the whole group back to episode credit, with a warning`, () => {
      const members = [member("e0", 1, [0.2, 1], 2), member("e1", 0, vector, 2)];
      const credit = assignGroupCredit(members, {
        creditAssignment: "per_turn",
        advantage: "mean",
      });
      expect(credit.creditAssignment).toBe("per_episode");
      expect(credit.advantages).toEqual([0.5, -0.5]);
      expect(credit.perTurnAdvantages).toEqual([null, null]);
      expect(credit.warnings).toEqual([
        warning,
        "per_turn credit fell back to per_episode for the whole group",
      ]);
    });
  }

  it("does not hold a failed episode's missing vector against the group", () => {
    const members = [...valid, member("e2", null, undefined, 1)];
    const credit = assignGroupCredit(members, { creditAssignment: "per_turn", advantage: "mean" });
    expect(credit.creditAssignment).toBe("per_turn");
    expect(credit.advantages[2]).toBeNull();
    expect(credit.perTurnAdvantages[2]).toBeNull();
  });

  describe("with members excluded from the baseline (over-long episodes masked or filtered)", () => {
    const excluded = (advantage: 0 | null): CreditMember => ({
      ...member("e2", 0, [0.9, 0.9], 2),
      excluded: { advantage },
    });

    it("gives the others the advantages they would have without them", () => {
      for (const creditAssignment of ["per_episode", "per_turn"] as const) {
        const alone = assignGroupCredit(valid, { creditAssignment, advantage: "mean_std" });
        const credit = assignGroupCredit([...valid, excluded(0)], {
          creditAssignment,
          advantage: "mean_std",
        });
        expect(credit.advantages.slice(0, 2)).toEqual(alone.advantages);
        expect(credit.perTurnAdvantages.slice(0, 2)).toEqual(alone.perTurnAdvantages);
      }
    });

    it("masked: advantage 0, and 0 at every turn under per-turn credit", () => {
      const credit = assignGroupCredit([...valid, excluded(0)], {
        creditAssignment: "per_turn",
        advantage: "mean",
      });
      expect(credit.advantages[2]).toBe(0);
      expect(credit.perTurnAdvantages[2]).toEqual([0, 0]);
      expect(credit.perTurnRewards[2]).toEqual([0.9, 0.9]);
    });

    it("filtered: no advantage at all", () => {
      const credit = assignGroupCredit([...valid, excluded(null)], {
        creditAssignment: "per_turn",
        advantage: "mean",
      });
      expect(credit.advantages[2]).toBeNull();
      expect(credit.perTurnAdvantages[2]).toBeNull();
    });

    it("leaves a failed member without an advantage, excluded or not", () => {
      const failed = { ...excluded(0), score: null };
      const credit = assignGroupCredit([...valid, failed], {
        creditAssignment: "per_turn",
        advantage: "mean",
      });
      expect(credit.advantages[2]).toBeNull();
      expect(credit.perTurnAdvantages[2]).toBeNull();
    });
  });
});
