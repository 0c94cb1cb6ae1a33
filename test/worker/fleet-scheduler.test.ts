// The fleet scheduler object on its own (src/fleet/fleet-scheduler.ts): per-host caps and the fair
// queue it grew out of, routing with affinity and bounded load, health with ejection, probing and
// readmission, pauses, declared versions, and leases. Each test has a fleet object of its own.
import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { FleetApi, Grant, Route } from "../../src/fleet/fleet-api";
import type { FleetHost } from "../../src/fleet/hosts-config";
import { rendezvousOrder } from "../../src/fleet/routing";

let n = 0;
const LEASE = 60_000;
const settle = () => new Promise((resolve) => setTimeout(resolve, 30));
/** A host that answers (the test run's simulator) and ones that cannot (nothing listens there). */
const LIVE = env.INFERENCE_BASE_URL.replace(/\/+$/, "");
const dead = (port: number) => `http://127.0.0.1:${port}/v1`;

const host = (url: string, maxInflight = Number.POSITIVE_INFINITY): FleetHost => ({
  url,
  name: new URL(url).host,
  weight: 1,
  maxInflight,
  adaptive: false,
  price: null,
});

/** A fleet object of the test's own, over `hosts`. */
async function fleet(hosts: FleetHost[]) {
  const name = `fleet-test-${n++}`;
  const stub = env.FLEET.get(env.FLEET.idFromName(name));
  await stub.useHosts(hosts);
  return stub as unknown as FleetApi & typeof stub;
}

const route = (key: string, extra: Partial<Route> = {}): Route => ({
  key,
  preferred: [],
  policy: null,
  avoid: null,
  eval: null,
  model: "sim",
  ...extra,
});

async function totals(stub: FleetApi) {
  const hosts = await stub.hosts();
  return {
    inFlight: hosts.reduce((a, h) => a + h.in_flight, 0),
    waiting: hosts[0]?.waiting ?? 0,
  };
}

const urlOf = (grant: Grant | null) => grant?.host ?? null;

describe("the fleet scheduler, one host with a cap (the in-flight limit it grew out of)", () => {
  it("grants up to the cap at once and queues the rest; they wait, they are not failed", async () => {
    const stub = await fleet([host(LIVE, 2)]);
    const granted: string[] = [];
    const take = (ticket: string, group: string) =>
      stub.acquire(ticket, group, LEASE, route(group)).then((g) => {
        if (g) granted.push(ticket);
      });
    await Promise.all([take("a:0", "a"), take("a:1", "a")]);
    const waiting = take("a:2", "a");
    await settle();
    expect(granted).toEqual(["a:0", "a:1"]);
    expect(await totals(stub)).toEqual({ inFlight: 2, waiting: 1 });
    await stub.releaseMany("a", ["a:0"]);
    await waiting;
    expect(granted).toEqual(["a:0", "a:1", "a:2"]);
    expect(await totals(stub)).toEqual({ inFlight: 2, waiting: 0 });
  });

  it("serves groups in turn, so a big group cannot starve a small one", async () => {
    const stub = await fleet([host(LIVE, 1)]);
    const granted: string[] = [];
    const take = (ticket: string, group: string) =>
      stub.acquire(ticket, group, LEASE, route(group)).then(() => granted.push(ticket));
    await take("hold", "holder");
    const queued = [take("big:0", "big"), take("big:1", "big"), take("big:2", "big")];
    await settle();
    queued.push(take("small:0", "small"));
    await settle();
    for (const [ticket, group] of [
      ["hold", "holder"],
      ["big:0", "big"],
      ["small:0", "small"],
      ["big:1", "big"],
    ] as const) {
      await stub.releaseMany(group, [ticket]);
      await settle();
    }
    await Promise.all(queued);
    expect(granted).toEqual(["hold", "big:0", "small:0", "big:1", "big:2"]);
  });

  it("frees what a restarted group held, and answers its dead waiters", async () => {
    const stub = await fleet([host(LIVE, 2)]);
    await stub.acquire("g:0", "g", LEASE, route("g"));
    await stub.acquire("g:1", "g", LEASE, route("g"));
    const dropped = stub.acquire("g:2", "g", LEASE, route("g"));
    await settle();
    await stub.releaseGroup("g");
    expect(await dropped).toBeNull();
    expect(await totals(stub)).toEqual({ inFlight: 0, waiting: 0 });
  });

  it("reclaims a permit whose lease ran out, so a lost release cannot leak it forever", async () => {
    const stub = await fleet([host(LIVE, 1)]);
    await stub.acquire("lost:0", "lost", 50, route("lost"));
    const waiting = stub.acquire("next:0", "next", LEASE, route("next"));
    await new Promise((resolve) => setTimeout(resolve, 80));
    await runDurableObjectAlarm(stub);
    expect(urlOf(await waiting)).toBe(LIVE);
    expect(await totals(stub)).toEqual({ inFlight: 1, waiting: 0 });
  });

  it("renewing a ticket it holds takes no second permit", async () => {
    const stub = await fleet([host(LIVE, 1)]);
    await stub.acquire("x:0", "x", LEASE, route("x"));
    await stub.acquire("x:0", "x", LEASE, route("x"));
    expect(await totals(stub)).toEqual({ inFlight: 1, waiting: 0 });
  });
});

describe("routing over several hosts", () => {
  const four = [dead(1001), dead(1002), dead(1003), dead(1004)];

  it("sends a group's episodes to its home host, the first in the group's rendezvous order", async () => {
    const stub = await fleet(four.map((u) => host(u)));
    const home = rendezvousOrder(
      "group-a",
      four.map((u) => host(u)),
    )[0]?.url;
    const first = await stub.acquire("group-a:0", "group-a", LEASE, route("group-a"));
    expect(first?.host).toBe(home);
    // Its other episodes prefer the home the group stored.
    const asks = [1, 2, 3].map((e) => ({ ticket: `group-a:${e}`, preferred: null }));
    const rest = await stub.acquireMany(
      asks,
      "group-a",
      LEASE,
      route("group-a", { preferred: [home ?? null] }),
    );
    expect(rest.map((r) => r.grant.host)).toEqual([home, home, home]);
  });

  it("keeps a new group's episodes together before the group has stored a home", async () => {
    const stub = await fleet(four.map((u) => host(u)));
    // Four: within the slack, so the load bound does not split them.
    const asks = Array.from({ length: 4 }, (_, e) => ({ ticket: `fresh:${e}`, preferred: null }));
    const granted = await stub.acquireMany(asks, "fresh", LEASE, route("fresh"));
    expect(new Set(granted.map((g) => g.grant.host)).size).toBe(1);
  });

  it("keeps an episode on its own host, and spreads groups evenly over the fleet", async () => {
    const stub = await fleet(four.map((u) => host(u)));
    const own = await stub.acquire("e:0", "e", LEASE, route("e", { preferred: [dead(1003)] }));
    expect(own?.host).toBe(dead(1003));
    // 64 groups of 4 episodes: every host ends within 1.5x the mean (64) plus the slack (4).
    for (let g = 0; g < 64; g++) {
      const key = `spread-${g}`;
      const first = await stub.acquire(`${key}:0`, key, LEASE, route(key));
      const asks = [1, 2, 3].map((e) => ({ ticket: `${key}:${e}`, preferred: null }));
      await stub.acquireMany(asks, key, LEASE, route(key, { preferred: [first?.host ?? null] }));
    }
    const loads = (await stub.hosts()).map((h) => h.in_flight);
    expect(loads.reduce((a, b) => a + b, 0)).toBe(257);
    // Each group homed on the least loaded host: no two hosts a group's size apart.
    expect(Math.max(...loads) - Math.min(...loads)).toBeLessThanOrEqual(4);
  });

  it("takes a host behind the run's max_lag out of the run's routing, and a paused host out of all", async () => {
    const stub = await fleet([host(dead(1011)), host(dead(1012))]);
    await stub.setHost(dead(1011), { policyVersion: 3 });
    await stub.setHost(dead(1012), { policyVersion: 5 });
    const run = { version: 5, maxLag: 1 };
    for (let e = 0; e < 6; e++) {
      const g = await stub.acquire(
        `v:${e}`,
        "v",
        LEASE,
        route("v", { policy: run, preferred: [dead(1011)] }),
      );
      expect(g?.host).toBe(dead(1012));
      expect(g?.policyVersion).toBe(5);
    }
    // Paused, the only recent host takes nothing new: the run's episodes wait.
    await stub.setHost(dead(1012), { paused: true });
    expect((await stub.hosts()).find((h) => h.url === dead(1012))?.state).toBe("paused");
    const waiting = stub.acquire("v:9", "v", LEASE, route("v", { policy: run }));
    await settle();
    expect((await totals(stub)).waiting).toBe(1);
    await stub.setHost(dead(1012), { paused: false });
    expect(urlOf(await waiting)).toBe(dead(1012));
  });
});

describe("evaluation groups beside training (EVAL_SHARE 0.25)", () => {
  const evaluation = (key: string, version = 3) => route(key, { eval: version });

  it("sends an evaluation only to hosts serving its version, or declaring none", async () => {
    const stub = await fleet([host(dead(1021)), host(dead(1022)), host(dead(1023))]);
    await stub.setHost(dead(1021), { policyVersion: 4 });
    await stub.setHost(dead(1022), { policyVersion: 3 });
    for (let e = 0; e < 4; e++) {
      const g = await stub.acquire(`p:${e}`, "p", LEASE, evaluation("p"));
      expect([dead(1022), dead(1023)]).toContain(g?.host);
    }
    // Once the last host declares another version, only the one serving 3 is left.
    await stub.setHost(dead(1023), { policyVersion: 5 });
    const g = await stub.acquire("p:9", "p", LEASE, evaluation("p", 3));
    expect(g?.host).toBe(dead(1022));
  });

  it("gives a waiting evaluation the first permits training frees, up to its share, and more only when no training waits", async () => {
    // A cap of 8 keeps 2 for evaluations while one waits.
    const stub = await fleet([host(LIVE, 8)]);
    for (let e = 0; e < 8; e++)
      expect(await stub.acquire(`t:${e}`, "t", LEASE, route("t"))).not.toBeNull();
    const order: string[] = [];
    const take = (ticket: string, group: string, r: Route) =>
      stub.acquire(ticket, group, LEASE, r).then((g) => {
        if (g) order.push(ticket);
      });
    // Training asked first and waits; then an evaluation of six episodes.
    const waiters = [0, 1, 2, 3].map((e) => take(`t:${8 + e}`, "t", route("t")));
    await settle();
    waiters.push(...[0, 1, 2, 3, 4, 5].map((e) => take(`e:${e}`, "e", evaluation("e"))));
    await settle();
    for (let e = 0; e < 6; e++) {
      await stub.releaseMany("t", [`t:${e}`]);
      await settle();
    }
    // Its share first, ahead of training that waited longer; past its share, nothing more
    // while training waits: training keeps the rest of the cap.
    expect(order).toEqual(["e:0", "e:1", "t:8", "t:9", "t:10", "t:11"]);
    const [h] = await stub.hosts();
    expect(h).toMatchObject({ in_flight: 8, eval_in_flight: 2, waiting: 4 });
    // With no training waiting, the evaluation takes what training frees.
    await stub.releaseMany("t", ["t:6", "t:7"]);
    await settle();
    expect(order.slice(6)).toEqual(["e:2", "e:3"]);
    await stub.releaseGroup("e");
    await stub.releaseGroup("t");
    await Promise.all(waiters);
  });

  it("keeps no share while no evaluation waits: training uses the whole cap", async () => {
    const stub = await fleet([host(LIVE, 4)]);
    for (let e = 0; e < 4; e++)
      expect(await stub.acquire(`w:${e}`, "w", LEASE, route("w"))).not.toBeNull();
    // An evaluation arriving at a full host waits for the first permit training frees.
    const waiting = stub.acquire("x:0", "x", LEASE, evaluation("x"));
    const training = stub.acquire("w:4", "w", LEASE, route("w"));
    await settle();
    await stub.releaseMany("w", ["w:0"]);
    expect(urlOf(await waiting)).toBe(LIVE);
    await stub.releaseMany("w", ["w:1"]);
    expect(urlOf(await training)).toBe(LIVE);
  });

  it("keeps no share of a host for an evaluation pinned to a version the host does not serve", async () => {
    const stub = await fleet([host(LIVE, 4)]);
    await stub.setHost(LIVE, { policyVersion: 7 });
    for (let e = 0; e < 3; e++)
      expect(await stub.acquire(`s:${e}`, "s", LEASE, route("s"))).not.toBeNull();
    const pinned = stub.acquire("q:0", "q", LEASE, evaluation("q", 3));
    await settle();
    // The host serves 7: the evaluation of 3 waits for another host, and training takes the cap.
    expect(await stub.acquire("s:3", "s", LEASE, route("s"))).not.toBeNull();
    expect((await totals(stub)).waiting).toBe(1);
    await stub.releaseGroup("q");
    expect(await pinned).toBeNull();
  });
});

describe("health", () => {
  const failure = (hostUrl: string, at: number, okAt = 0) => ({
    host: hostUrl,
    at,
    okAt,
    error: "could not reach the inference host",
    unreachable: true,
  });

  it("ejects a host after consecutive failures, moves the failed episode at once, and readmits it when a probe answers", async () => {
    const stub = await fleet([host(LIVE), host(dead(1021))]);
    const r = route("h", { preferred: [dead(1021)] });
    const first = await stub.acquire("h:0", "h", LEASE, r);
    expect(first?.host).toBe(dead(1021));
    // An unreachable host: the episode moves at once, though one failure does not eject it.
    const moved = await stub.reportFailure("h:0", "h", LEASE, r, failure(dead(1021), Date.now()));
    expect(moved?.host).toBe(LIVE);
    const stateOf = async (u: string) => (await stub.hosts()).find((h) => h.url === u)?.state;
    expect(await stateOf(dead(1021))).toBe("healthy");
    await stub.reportFailure("h:1", "h", LEASE, r, failure(dead(1021), Date.now()));
    await stub.reportFailure("h:2", "h", LEASE, r, failure(dead(1021), Date.now()));
    expect(await stateOf(dead(1021))).toBe("ejected");
    // Ejected, it gets no new episode even where one prefers it.
    expect((await stub.acquire("h:3", "h", LEASE, r))?.host).toBe(LIVE);
    // A probe that finds nothing there keeps it out; the reason is kept.
    await runDurableObjectAlarm(stub);
    expect(await stateOf(dead(1021))).toBe("ejected");
    expect((await stub.hosts()).find((h) => h.url === dead(1021))?.last_error).toMatch(
      /GET \/models/,
    );
  });

  /** A failure with an answer: an error status (the host is there, but failing). */
  const erred = (hostUrl: string, at: number) => ({
    ...failure(hostUrl, at),
    error: "the inference host answered 503",
    unreachable: false,
  });

  it("keeps a host that got no answer three times but answers when asked (idle keep-alive connections closed under requests)", async () => {
    const stub = await fleet([host(LIVE), host(dead(1061))]);
    const r = route("k");
    for (let i = 0; i < 3; i++)
      await stub.reportFailure(`k:${i}`, "k", LEASE, r, failure(LIVE, Date.now()));
    expect((await stub.hosts()).find((h) => h.url === LIVE)?.state).toBe("healthy");
  });

  it("readmits an ejected host whose probe answers, on trial: its next failure ejects it again", async () => {
    const stub = await fleet([host(LIVE), host(dead(1031))]);
    const r = route("p");
    for (let i = 0; i < 3; i++)
      await stub.reportFailure(`p:${i}`, "p", LEASE, r, erred(LIVE, Date.now()));
    const stateOf = async () => (await stub.hosts()).find((h) => h.url === LIVE)?.state;
    expect(await stateOf()).toBe("ejected");
    await runDurableObjectAlarm(stub);
    expect(await stateOf()).toBe("probing");
    await stub.reportFailure("p:9", "p", LEASE, r, erred(LIVE, Date.now()));
    expect(await stateOf()).toBe("ejected");
    await runDurableObjectAlarm(stub);
    // A success reported with a release makes it healthy again.
    await stub.releaseMany("p", [], { [LIVE]: Date.now() + 1 });
    expect(await stateOf()).toBe("healthy");
  });

  it("does not eject for failures some group saw the host answer after", async () => {
    const stub = await fleet([host(LIVE), host(dead(1041))]);
    const r = route("s");
    const t = Date.now();
    await stub.reportFailure("s:0", "s", LEASE, r, failure(dead(1041), t));
    await stub.reportFailure("s:1", "s", LEASE, r, failure(dead(1041), t + 1));
    // Another group saw it answer after those two: the streak starts over.
    await stub.reportFailure("s:2", "s", LEASE, r, failure(dead(1041), t + 3, t + 2));
    expect((await stub.hosts()).find((h) => h.url === dead(1041))?.state).toBe("healthy");
  });

  it("never empties the fleet: with every host ejected, all of them are used", async () => {
    const stub = await fleet([host(dead(1051)), host(dead(1052))]);
    const r = route("x");
    for (const u of [dead(1051), dead(1052)])
      for (let i = 0; i < 3; i++)
        await stub.reportFailure(`x:${i}`, "x", LEASE, r, failure(u, Date.now()));
    expect((await stub.hosts()).map((h) => h.state)).toEqual(["ejected", "ejected"]);
    const grant = await stub.acquire("y:0", "y", LEASE, route("y"));
    expect([dead(1051), dead(1052)]).toContain(grant?.host);
  });

  it("remembers a host that refused the token fields for a model, and says so in every grant for it", async () => {
    const stub = await fleet([host(LIVE)]);
    expect((await stub.acquire("t:0", "t", LEASE, route("t")))?.tokenFields).toBeNull();
    await stub.learnTokenFieldsRefused(LIVE, "sim");
    expect((await stub.acquire("t:1", "t", LEASE, route("t")))?.tokenFields).toBe(false);
    // Another model on the same host was never refused.
    const other = await stub.acquire("t:2", "t", LEASE, route("t", { model: "sim+other" }));
    expect(other?.tokenFields).toBeNull();
  });
});
