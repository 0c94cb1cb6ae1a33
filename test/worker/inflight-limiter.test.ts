import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";

let n = 0;
/** A fresh limiter per test, so no permits leak between tests. */
const limiter = () =>
  env.INFLIGHT_LIMITER.get(env.INFLIGHT_LIMITER.idFromName(`limiter-test-${n++}`));

const LEASE = 60_000;
const settle = () => new Promise((resolve) => setTimeout(resolve, 30));

/** Starts acquires and records the order in which they are granted. */
function tracker() {
  const granted: string[] = [];
  return {
    granted,
    acquire(stub: ReturnType<typeof limiter>, ticket: string, group: string, limit: number) {
      return stub.acquire(ticket, group, LEASE, limit).then(() => {
        granted.push(ticket);
      });
    },
  };
}

describe("the in-flight limiter", () => {
  it("grants up to the limit at once and queues the rest; they wait, they are not failed", async () => {
    const stub = limiter();
    const t = tracker();
    await Promise.all([t.acquire(stub, "a:0", "a", 2), t.acquire(stub, "a:1", "a", 2)]);
    const waiting = t.acquire(stub, "a:2", "a", 2);
    await settle();
    expect(t.granted).toEqual(["a:0", "a:1"]);
    expect(await stub.stats()).toEqual({ inFlight: 2, waiting: 1 });
    await stub.release("a:0");
    await waiting;
    expect(t.granted).toEqual(["a:0", "a:1", "a:2"]);
    expect(await stub.stats()).toEqual({ inFlight: 2, waiting: 0 });
  });

  it("serves groups in turn, so a big group cannot starve a small one", async () => {
    const stub = limiter();
    const t = tracker();
    await t.acquire(stub, "hold", "holder", 1);
    const queued = [
      t.acquire(stub, "big:0", "big", 1),
      t.acquire(stub, "big:1", "big", 1),
      t.acquire(stub, "big:2", "big", 1),
    ];
    await settle();
    queued.push(t.acquire(stub, "small:0", "small", 1));
    await settle();
    for (const ticket of ["hold", "big:0", "small:0", "big:1"]) {
      await stub.release(ticket);
      await settle();
    }
    await Promise.all(queued);
    expect(t.granted).toEqual(["hold", "big:0", "small:0", "big:1", "big:2"]);
  });

  it("frees what a restarted group held, and drops its dead waiters", async () => {
    const stub = limiter();
    const t = tracker();
    await Promise.all([t.acquire(stub, "g:0", "g", 2), t.acquire(stub, "g:1", "g", 2)]);
    void t.acquire(stub, "g:2", "g", 2);
    await settle();
    await stub.releaseGroup("g");
    expect(await stub.stats()).toEqual({ inFlight: 0, waiting: 0 });
    await t.acquire(stub, "h:0", "h", 2);
    expect(await stub.stats()).toEqual({ inFlight: 1, waiting: 0 });
  });

  it("reclaims a permit whose lease ran out, so a lost release cannot leak it forever", async () => {
    const stub = limiter();
    await stub.acquire("lost:0", "lost", 50, 1);
    const waiting = stub.acquire("next:0", "next", LEASE, 1);
    await new Promise((resolve) => setTimeout(resolve, 80));
    await runDurableObjectAlarm(stub);
    await waiting;
    expect(await stub.stats()).toEqual({ inFlight: 1, waiting: 0 });
  });

  it("withdraws a group's waiting tickets on release: their acquire answers false", async () => {
    const stub = limiter();
    await stub.acquire("hold", "holder", LEASE, 1);
    const waiting = stub.acquire("g:0", "g", LEASE, 1);
    await settle();
    await stub.releaseMany("g", ["g:0"]);
    expect(await waiting).toBe(false);
    expect(await stub.stats()).toEqual({ inFlight: 1, waiting: 0 });
  });

  it("re-acquiring a ticket it already holds does not take a second permit", async () => {
    const stub = limiter();
    await stub.acquire("x:0", "x", LEASE, 1);
    await stub.acquire("x:0", "x", LEASE, 1);
    expect(await stub.stats()).toEqual({ inFlight: 1, waiting: 0 });
  });
});
