// A group's side of the in-flight limit (src/rollout/permits.ts) against the real limiter object:
// permits asked for in one batch still respect the limit and queue fairly, and nothing a driver
// gave up on stays held.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { groupPermits } from "../../src/rollout/limiter/permits";

const LEASE = 60_000;
let n = 0;

/** A fresh limiter per test, and its stats. */
function freshLimiter() {
  const name = `permits-test-${n++}`;
  const stub = env.INFLIGHT_LIMITER.get(env.INFLIGHT_LIMITER.idFromName(name));
  return { name, stats: () => stub.stats(), stub };
}

/** Polls until `check` passes: releases are batched, so they land a little later. */
async function eventually(check: () => Promise<void>): Promise<void> {
  for (let i = 0; ; i++) {
    try {
      return await check();
    } catch (error) {
      if (i >= 50) throw error;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 50));

describe("a group's permits", () => {
  it("asks for a group's permits at once, grants up to the limit and queues the rest", async () => {
    const limiter = freshLimiter();
    const permits = groupPermits(env, "g", 2, limiter.name);
    permits.prefetch([0, 1, 2, 3], LEASE);
    const granted: number[] = [];
    const holds = [0, 1, 2, 3].map((e) => permits.hold(e, LEASE).then(() => granted.push(e)));
    await settle();
    expect(granted.sort()).toEqual([0, 1]);
    expect(await limiter.stats()).toEqual({ inFlight: 2, waiting: 2 });

    permits.drop(0);
    await settle();
    expect(granted).toHaveLength(3);
    permits.drop(1);
    await Promise.all(holds);
    expect(granted.sort()).toEqual([0, 1, 2, 3]);
    await eventually(async () =>
      expect(await limiter.stats()).toEqual({ inFlight: 2, waiting: 0 }),
    );

    permits.drop(2);
    permits.drop(3);
    await eventually(async () =>
      expect(await limiter.stats()).toEqual({ inFlight: 0, waiting: 0 }),
    );
  });

  it("withdraws a queued ask when its episode's driver ends, so no permit is taken later", async () => {
    const limiter = freshLimiter();
    await limiter.stub.acquire("other:0", "other", LEASE, 1);
    const permits = groupPermits(env, "g", 1, limiter.name);
    permits.prefetch([0], LEASE);
    await settle();
    expect(await limiter.stats()).toEqual({ inFlight: 1, waiting: 1 });
    // The episode failed at its opening while its permit was still queued.
    permits.drop(0);
    await eventually(async () =>
      expect(await limiter.stats()).toEqual({ inFlight: 1, waiting: 0 }),
    );
    await limiter.stub.release("other:0");
    expect(await limiter.stats()).toEqual({ inFlight: 0, waiting: 0 });
  });

  it("gives up a queued ask when interrupted (its run paused), and takes no permit later", async () => {
    const limiter = freshLimiter();
    await limiter.stub.acquire("other:0", "other", LEASE, 1);
    const permits = groupPermits(env, "g", 1, limiter.name);
    const pause = new AbortController();
    const holding = permits.hold(0, LEASE, pause.signal);
    await settle();
    expect(await limiter.stats()).toEqual({ inFlight: 1, waiting: 1 });
    pause.abort();
    expect(await holding).toBe(false);
    await eventually(async () =>
      expect(await limiter.stats()).toEqual({ inFlight: 1, waiting: 0 }),
    );
    // The permit it queued for goes to nobody: the episode asks again once the run resumes.
    await limiter.stub.release("other:0");
    await settle();
    expect(await limiter.stats()).toEqual({ inFlight: 0, waiting: 0 });
    expect(await permits.hold(0, LEASE, new AbortController().signal)).toBe(true);
    expect(await limiter.stats()).toEqual({ inFlight: 1, waiting: 0 });
    permits.drop(0);
  });

  it("queues once for an episode that goes straight to a generation as its driver starts", async () => {
    const limiter = freshLimiter();
    await limiter.stub.acquire("other:0", "other", LEASE, 1);
    const permits = groupPermits(env, "g", 1, limiter.name);
    // A driver resumed in `generating` asks for its permit as the group's prefetch goes out.
    const holding = permits.hold(0, LEASE);
    permits.prefetch([0], LEASE);
    await settle();
    expect(await limiter.stats()).toEqual({ inFlight: 1, waiting: 1 });
    await limiter.stub.release("other:0");
    await holding;
    permits.drop(0);
    await eventually(async () =>
      expect(await limiter.stats()).toEqual({ inFlight: 0, waiting: 0 }),
    );
    // No second ask left in line to take a permit nobody releases.
    await settle();
    expect(await limiter.stats()).toEqual({ inFlight: 0, waiting: 0 });
  });

  it("asks again on its own when an episode wants its permit back after parking", async () => {
    const limiter = freshLimiter();
    const permits = groupPermits(env, "g", 1, limiter.name);
    permits.prefetch([0], LEASE);
    await permits.hold(0, LEASE);
    permits.drop(0);
    await eventually(async () =>
      expect(await limiter.stats()).toEqual({ inFlight: 0, waiting: 0 }),
    );
    // No prefetch this time: a parked generation's driver comes back and holds it again.
    await permits.hold(0, LEASE);
    expect(await limiter.stats()).toEqual({ inFlight: 1, waiting: 0 });
  });
});
