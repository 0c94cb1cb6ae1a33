// Episodes of a group record their answers in shared write turns (src/rollout/write-turn.ts), so
// their writes share one SQLite commit. What must hold: those who arrive before the turn fires
// share it, and a later arrival waits for the next one instead of being left behind.
import { describe, expect, it } from "vitest";
import { sharedWriteTurn } from "../../src/rollout/write-turn";

describe("a group's write turns", () => {
  it("lets every episode that arrives before the turn fires record in it", async () => {
    const writeTurn = sharedWriteTurn();
    const order: string[] = [];
    const first = writeTurn().then(() => order.push("a"));
    const second = writeTurn().then(() => order.push("b"));
    expect(writeTurn()).toBe(writeTurn());
    order.push("before the turn");
    await Promise.all([first, second]);
    expect(order).toEqual(["before the turn", "a", "b"]);
  });

  it("gives a later arrival the next turn", async () => {
    const writeTurn = sharedWriteTurn();
    const turn = writeTurn();
    await turn;
    const next = writeTurn();
    expect(next).not.toBe(turn);
    await expect(next).resolves.toBeUndefined();
  });
});
