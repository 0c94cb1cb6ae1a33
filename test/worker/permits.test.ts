// A group's side of the fleet scheduler (src/fleet/host-permits.ts) against the real scheduler
// object: permits asked for in one batch still respect each host's cap and queue fairly, nothing a
// driver gave up on stays held, and a failed host moves the episode and is remembered.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { FleetApi, Grant, Route } from "../../src/fleet/fleet-api";
import { fleetPermits, type Routing } from "../../src/fleet/host-permits";

const LEASE = 60_000;
let n = 0;
const LIVE = env.INFERENCE_BASE_URL.replace(/\/+$/, "");
const OTHER = "http://127.0.0.1:1061/v1";

/** A fresh scheduler per test over `hosts` (one live host with `cap` by default), and its totals. */
async function freshLimiter(cap = 1, urls: string[] = [LIVE]) {
  const name = `permits-test-${n++}`;
  const stub = env.FLEET.get(env.FLEET.idFromName(name)) as unknown as FleetApi;
  await stub.useHosts(
    urls.map((url) => ({
      url,
      name: url,
      weight: 1,
      maxInflight: cap,
      adaptive: false,
      price: null,
    })),
  );
  const route = (key: string): Route => ({
    key,
    preferred: [],
    policy: null,
    avoid: null,
    model: "sim",
    eval: null,
  });
  return {
    stub,
    stats: async () => {
      const hosts = await stub.hosts();
      return {
        inFlight: hosts.reduce((a, h) => a + h.in_flight, 0),
        waiting: hosts[0]?.waiting ?? 0,
      };
    },
    take: (ticket: string, group: string) => stub.acquire(ticket, group, LEASE, route(group)),
    give: (ticket: string, group: string) => stub.releaseMany(group, [ticket]),
  };
}

/** A group's routing kept in memory, as the group object keeps it in storage. */
function memoryRouting(groupId: string) {
  const hosts = new Map<number, string>();
  let home: string | null = null;
  const routing: Routing = {
    groupRoute: () => ({
      key: groupId,
      preferred: [home],
      policy: null,
      avoid: null,
      model: "sim",
      eval: null,
    }),
    hostOf: (e) => hosts.get(e) ?? null,
    granted: (e, grant: Grant) => {
      hosts.set(e, grant.host);
      home ??= grant.host;
    },
  };
  return { routing, hosts };
}

const groupPermits = (stub: FleetApi, group: string) =>
  fleetPermits(stub, group, memoryRouting(group).routing);

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
    const limiter = await freshLimiter(2);
    const permits = groupPermits(limiter.stub, "g");
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
    const limiter = await freshLimiter(1);
    await limiter.take("other:0", "other");
    const permits = groupPermits(limiter.stub, "g");
    permits.prefetch([0], LEASE);
    await settle();
    expect(await limiter.stats()).toEqual({ inFlight: 1, waiting: 1 });
    // The episode failed at its opening while its permit was still queued.
    permits.drop(0);
    await eventually(async () =>
      expect(await limiter.stats()).toEqual({ inFlight: 1, waiting: 0 }),
    );
    await limiter.give("other:0", "other");
    expect(await limiter.stats()).toEqual({ inFlight: 0, waiting: 0 });
  });

  it("gives up a queued ask when interrupted (its run paused), and takes no permit later", async () => {
    const limiter = await freshLimiter(1);
    await limiter.take("other:0", "other");
    const permits = groupPermits(limiter.stub, "g");
    const pause = new AbortController();
    const holding = permits.hold(0, LEASE, pause.signal);
    await settle();
    expect(await limiter.stats()).toEqual({ inFlight: 1, waiting: 1 });
    pause.abort();
    expect(await holding).toBeNull();
    await eventually(async () =>
      expect(await limiter.stats()).toEqual({ inFlight: 1, waiting: 0 }),
    );
    // The permit it queued for goes to nobody: the episode asks again once the run resumes.
    await limiter.give("other:0", "other");
    await settle();
    expect(await limiter.stats()).toEqual({ inFlight: 0, waiting: 0 });
    expect((await permits.hold(0, LEASE, new AbortController().signal))?.host).toBe(LIVE);
    expect(await limiter.stats()).toEqual({ inFlight: 1, waiting: 0 });
    permits.drop(0);
  });

  it("queues once for an episode that goes straight to a generation as its driver starts", async () => {
    const limiter = await freshLimiter(1);
    await limiter.take("other:0", "other");
    const permits = groupPermits(limiter.stub, "g");
    // A driver resumed in `generating` asks for its permit as the group's prefetch goes out.
    const holding = permits.hold(0, LEASE);
    permits.prefetch([0], LEASE);
    await settle();
    expect(await limiter.stats()).toEqual({ inFlight: 1, waiting: 1 });
    await limiter.give("other:0", "other");
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
    const limiter = await freshLimiter(1);
    const permits = groupPermits(limiter.stub, "g");
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

  it("moves an episode whose host did not answer to another, and keeps it there", async () => {
    const limiter = await freshLimiter(4, [OTHER, LIVE]);
    const { routing, hosts } = memoryRouting("f");
    // The group's home: the dead host, as a restarted object would have stored it.
    routing.granted(0, { host: OTHER, policyVersion: null, tokenFields: null });
    const permits = fleetPermits(limiter.stub, "f", routing);
    expect((await permits.hold(0, LEASE))?.host).toBe(OTHER);
    const moved = await permits.failed(
      0,
      { host: OTHER, at: Date.now(), error: "connection refused", unreachable: true },
      LEASE,
    );
    expect(moved?.host).toBe(LIVE);
    expect(hosts.get(0)).toBe(LIVE);
    // Its next turn holds the permit it has: no ask, the same host.
    expect((await permits.hold(0, LEASE))?.host).toBe(LIVE);
    expect((await limiter.stub.hosts()).map((h) => [h.url, h.in_flight])).toEqual([
      [OTHER, 0],
      [LIVE, 1],
    ]);
  });
});
