// The judge's in-flight limit (issue 33): one JudgeGate object holds JUDGE_MAX_INFLIGHT slots for
// the whole deployment; a call past the limit waits its turn, gives up at its deadline, and a
// slot whose holder died comes back when its lease ends.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { configFrom } from "../../src/config";

const gate = (name: string) => env.JUDGE_GATE.get(env.JUDGE_GATE.idFromName(name));

describe("the judge gate", () => {
  it("holds at most JUDGE_MAX_INFLIGHT calls; the next waits for a release, in order", async () => {
    const limit = configFrom(env).JUDGE_MAX_INFLIGHT;
    const g = gate("gate-order");
    const held = await Promise.all(
      Array.from({ length: limit }, (_, i) => g.acquire(`t${i}`, limit, 60_000, 1000)),
    );
    expect(held.every(Boolean)).toBe(true);
    const first = g.acquire("late-1", limit, 60_000, 5000);
    const second = g.acquire("late-2", limit, 60_000, 5000);
    expect(await g.load()).toEqual({ held: limit, waiting: 2, limit });
    await g.release("t0");
    expect(await first).toBe(true);
    expect(await g.load()).toEqual({ held: limit, waiting: 1, limit });
    await g.release("t1");
    expect(await second).toBe(true);
  });

  it("tells a waiter no at its deadline, and frees a slot whose lease ended", async () => {
    const limit = configFrom(env).JUDGE_MAX_INFLIGHT;
    const g = gate("gate-leases");
    for (let i = 1; i < limit; i++)
      expect(await g.acquire(`s${i}`, limit, 60_000, 1000)).toBe(true);
    // The last slot's holder "dies": its lease ends 300 ms on, and a waiter gets the slot then.
    const started = Date.now();
    expect(await g.acquire("doomed", limit, 300, 1000)).toBe(true);
    expect(await g.acquire("heir", limit, 60_000, 5000)).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(200);
    // Every slot is held for a minute now: a waiter of 200 ms is told no.
    expect(await g.acquire("impatient", limit, 60_000, 200)).toBe(false);
    expect(await g.load()).toEqual({ held: limit, waiting: 0, limit });
  });
});
