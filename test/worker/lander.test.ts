import { describe, expect, it } from "vitest";
import { CHARS_PER_COMMIT, GROUPS_PER_COMMIT, groupsForCommit } from "../../src/rollout/lander";

describe("the lander's group commit", () => {
  it("takes every waiting group up to GROUPS_PER_COMMIT when their rows are small", () => {
    const small = Math.floor(CHARS_PER_COMMIT / (GROUPS_PER_COMMIT + 5));
    expect(groupsForCommit(Array(10).fill(small))).toBe(10);
    expect(groupsForCommit(Array(GROUPS_PER_COMMIT + 5).fill(small))).toBe(GROUPS_PER_COMMIT);
  });

  it("stops before the group whose rows would pass CHARS_PER_COMMIT", () => {
    const big = Math.floor(CHARS_PER_COMMIT / 3);
    expect(groupsForCommit([big, big, big, big, 10])).toBe(3);
  });

  it("always takes the first group, however large, so no group waits forever", () => {
    expect(groupsForCommit([CHARS_PER_COMMIT * 2, 10])).toBe(1);
    expect(groupsForCommit([])).toBe(0);
  });
});
