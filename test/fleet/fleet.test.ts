// The fleet, end to end in workerd: the Worker over four simulated hosts with prefix caches
// (test/setup/inference-fleet.ts). A group's episodes share a host and each keeps it, durably;
// a dead host's generations finish elsewhere and the host is readmitted once it answers; a paused
// host and a host behind the run's max_lag get nothing; X-Session-ID and cached_tokens arrive.
import { evictDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import type { HostsView } from "../../src/fleet/hosts-wire";
import { rendezvousOrder } from "../../src/fleet/routing";
import type { RolloutGroupApi } from "../../src/rollout/group-api";
import { newGroupId } from "../../src/rollout/group-ids";
import { episodeId } from "../../src/rollout/group-spec";
import {
  api,
  d1,
  getGroup,
  getJson,
  groupStub,
  guessExample,
  setPolicy,
  startGroup,
  TOKENS,
  until,
  waitForGroup,
} from "../worker/helpers";

const HOSTS = env.INFERENCE_BASE_URL.split(",");
const weighted = HOSTS.map((url) => ({ url, weight: 1 }));
const rootOf = (url: string) => url.replace(/\/v1$/, "");
let keys = 0;

async function control(action: "kill" | "revive" | "slow", host: string, factor = 1) {
  const i = HOSTS.indexOf(host);
  const response = await fetch(
    `${env.TEST_FLEET_CONTROL_URL}/${action}?host=${i}&factor=${factor}`,
    { method: "POST" },
  );
  if (!response.ok) throw new Error(`${action} ${host}: ${response.status}`);
}

const hosts = () => getJson<HostsView>("/v1/hosts").then((v) => v.hosts);
const stateOf = async (host: string) => (await hosts()).find((h) => h.url === host)?.state;

function setHost(body: object) {
  return api("/v1/hosts", {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${TOKENS.trainer}` },
    body: JSON.stringify(body),
  });
}

/** A fresh idempotency key, its group's id, and the group's hosts in rendezvous order. */
async function plannedGroup() {
  const key = `fleet-${Date.now()}-${keys++}`;
  const id = await newGroupId(key);
  return { key, id, order: rendezvousOrder(id, weighted).map((h) => h.url) };
}

/** A planned group whose first choice is `host`. */
async function groupHomedOn(host: string) {
  for (;;) {
    const planned = await plannedGroup();
    if (planned.order[0] === host) return planned;
  }
}

function start(key: string, run: string, model = "sim", size = 4) {
  return startGroup(
    {
      env: "guess-number",
      example: guessExample(key, 37),
      group_size: size,
      run_id: run,
      sampling: { model, temperature: 1, seed: 5 },
    },
    { "idempotency-key": key },
  );
}

interface Sampled {
  episode_id: string;
  turn: number;
  host: string | null;
  cached_tokens: number | null;
  policy_version: number | null;
}

const sampled = (groupId: string) =>
  d1<Sampled>(
    "SELECT episode_id, turn, host, cached_tokens, policy_version FROM messages WHERE group_id = ? AND sampled = 1 ORDER BY episode_id, turn",
    groupId,
  );

afterEach(async () => {
  for (const host of HOSTS) {
    await control("revive", host);
    await control("slow", host, 1);
    await setHost({ url: host, paused: false, policy_version: null });
  }
  await until(
    async () => (await hosts()).every((h) => h.state !== "ejected"),
    "every host readmitted",
  );
});

describe("the fleet", () => {
  it("keeps a group's episodes on its home host, each on its own across turns, sends X-Session-ID, and lands cached_tokens", async () => {
    const planned = await plannedGroup();
    const id = await start(planned.key, "fleet-affinity");
    expect(id).toBe(planned.id);
    const group = await waitForGroup(id);
    expect(group.status).toBe("landed");
    const rows = await sampled(id);
    expect(rows.length).toBeGreaterThan(8);
    // Every turn of every episode on the group's first host in its rendezvous order.
    expect(new Set(rows.map((r) => r.host))).toEqual(new Set([planned.order[0]]));
    // The host's prefix cache held each conversation for its next turn.
    const later = rows.filter((r) => r.turn > 0);
    expect(later.length).toBeGreaterThan(0);
    for (const row of later) expect(row.cached_tokens ?? 0).toBeGreaterThan(0);
    // Each episode's requests carried its id.
    const root = rootOf(planned.order[0] ?? "");
    for (const idx of [0, 1, 2, 3]) {
      const episode = episodeId(id, idx);
      const turns = rows.filter((r) => r.episode_id === episode).length;
      const sessions = (await (
        await fetch(`${root}/sim/sessions?id=${encodeURIComponent(episode)}`)
      ).json()) as { requests: number };
      expect(sessions.requests).toBe(turns);
    }
    // host_stats counts the host's requests and its cache hits.
    const [stats] = await d1<{ host: string; requests: number; cache_hit_rate: number | null }>(
      "SELECT host, requests, cache_hit_rate FROM host_stats WHERE run_id = 'fleet-affinity'",
    );
    expect(stats?.host).toBe(planned.order[0]);
    expect(stats?.requests).toBe(rows.length);
    expect(stats?.cache_hit_rate ?? 0).toBeGreaterThan(0.3);
  });

  it("routes a restarted object's episodes to the hosts it stored, not to a fresh choice", async () => {
    const planned = await plannedGroup();
    const [first, , , last] = planned.order;
    // Only its last choice is open when it starts: that is where its episodes go.
    for (const host of planned.order.slice(0, 3)) await setHost({ url: host, paused: true });
    // Each episode's third turn is refused once with a long Retry-After (a busy host, which does
    // not count against its health): the episode parks behind a timer and the object goes idle.
    const id = await start(planned.key, "fleet-restart", "sim+fail:429:1@2+retryafter:1.5");
    await until(async () => {
      const live = await (groupStub(id) as unknown as RolloutGroupApi).status();
      const open = live?.episodes.filter((e) => e.status === "generating") ?? [];
      return open.length > 0 && open.every((e) => e.retryAt !== null);
    }, "every open episode parked");
    for (const host of planned.order.slice(0, 3)) await setHost({ url: host, paused: false });
    await evictDurableObject(groupStub(id));
    const group = await waitForGroup(id);
    expect(group.status).toBe("landed");
    const rows = await sampled(id);
    expect(rows.some((r) => r.turn >= 2)).toBe(true);
    // A fresh choice would now be its first host; the stored routing keeps the one it had.
    expect(rows.every((r) => r.host === last)).toBe(true);
    expect(rows.some((r) => r.host === first)).toBe(false);
  });

  it("finishes a dead host's generations elsewhere with nothing failed, ejects it, and readmits it once it answers", async () => {
    const planned = await plannedGroup();
    const home = planned.order[0] as string;
    const id = await start(planned.key, "fleet-failover", "sim+latency:150");
    await until(
      async () => (await getGroup(id)).episodes.some((e) => e.turns >= 1),
      "a first turn done",
    );
    await control("kill", home);
    const group = await waitForGroup(id);
    expect(group.status).toBe("landed");
    expect(group.episodes.every((e) => e.state === "completed")).toBe(true);
    const rows = await sampled(id);
    const moved = rows.filter((r) => r.host !== home);
    expect(moved.length).toBeGreaterThan(0);
    // Moved episodes went, together, to the group's next host.
    expect(new Set(moved.map((r) => r.host))).toEqual(new Set([planned.order[1]]));
    expect(await stateOf(home)).toBe("ejected");
    const [failures] = await d1<{ failures: number }>(
      "SELECT failures FROM host_stats WHERE run_id = 'fleet-failover' AND host = ?",
      home,
    );
    expect(failures?.failures ?? 0).toBeGreaterThan(0);
    // Probed on a timer, it comes back once it answers.
    await control("revive", home);
    await until(async () => (await stateOf(home)) !== "ejected", "the host readmitted", 10_000);
    // On trial with nothing on it, a probe a period later makes it healthy.
    await until(async () => (await stateOf(home)) === "healthy", "the host healthy", 10_000);
  });

  it("sends a paused host no new request", async () => {
    const paused = HOSTS[2] as string;
    const requests = async () =>
      ((await (await fetch(`${rootOf(paused)}/sim/stats`)).json()) as { requests: number })
        .requests;
    const response = await setHost({ url: paused, paused: true });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { host: { state: string } }).host.state).toBe("paused");
    const before = await requests();
    const planned = await groupHomedOn(paused);
    const id = await start(planned.key, "fleet-paused");
    expect((await waitForGroup(id)).status).toBe("landed");
    expect(await requests()).toBe(before);
    expect((await sampled(id)).every((r) => r.host === planned.order[1])).toBe(true);
  });

  it("sends a host behind the run's max_lag none of the run's episodes, and records the version that sampled each turn", async () => {
    const behind = HOSTS[1] as string;
    await setPolicy("fleet-lag", { version: 5, max_lag: 0 });
    for (const host of HOSTS) await setHost({ url: host, policy_version: host === behind ? 4 : 5 });
    const planned = await groupHomedOn(behind);
    const id = await start(planned.key, "fleet-lag");
    expect((await waitForGroup(id)).status).toBe("landed");
    const rows = await sampled(id);
    expect(rows.some((r) => r.host === behind)).toBe(false);
    expect(rows.every((r) => r.policy_version === 5)).toBe(true);
  });

  it("sends an evaluation only to the host serving its version, while training goes on; each turn recorded at that version, and measured", async () => {
    // A trainer at version 6 evaluates an old checkpoint, 3, which only one host still serves.
    const old = HOSTS[3] as string;
    await setPolicy("fleet-eval", { version: 6, max_lag: 1 });
    for (const host of HOSTS) await setHost({ url: host, policy_version: host === old ? 3 : 6 });
    const training = await start(`fleet-eval-train-${keys++}`, "fleet-eval");
    const evalKey = `fleet-eval-${keys++}`;
    const evaluation = await startGroup(
      {
        env: "guess-number",
        example: guessExample(evalKey, 37),
        group_size: 4,
        run_id: "fleet-eval",
        kind: "eval",
        policy_version: 3,
        sampling: { model: "sim", temperature: 1, seed: 5 },
      },
      { "idempotency-key": evalKey },
    );
    expect((await waitForGroup(evaluation)).status).toBe("landed");
    expect((await waitForGroup(training)).status).toBe("landed");
    const evalRows = await sampled(evaluation);
    expect(evalRows.every((r) => r.host === old && r.policy_version === 3)).toBe(true);
    // Training, within max_lag of 6, never went to the host serving 3.
    expect((await sampled(training)).some((r) => r.host === old)).toBe(false);
    const [k1] = await getJson<{ k: number; episodes: number; unmeasured_episodes: number }[]>(
      "/v1/runs/fleet-eval/evals",
    );
    expect(k1).toMatchObject({ k: 1, episodes: 4, unmeasured_episodes: 0 });
  });

  it("interrupts one host for a rolling sync: its generations are aborted at once and finish elsewhere, other hosts' go on", async () => {
    const [synced, other] = [HOSTS[0] as string, HOSTS[1] as string];
    const requestsOn = async (host: string) =>
      ((await (await fetch(`${rootOf(host)}/sim/stats`)).json()) as { requests: number }).requests;
    // 1.6 s a generation (16 tokens, one every 100 ms), inside the fleet tests' 3-s deadline.
    const model = "sim+tag:rolling+trickle:100+pad:16";
    // A trainer's run: its streams are read as they arrive, so an abort counts what it cut.
    await setPolicy("fleet-rolling", { version: 0 });
    const first = await groupHomedOn(synced);
    const second = await groupHomedOn(other);
    const before = await requestsOn(synced);
    const [a, b] = [
      await start(first.key, "fleet-rolling", model),
      await start(second.key, "fleet-rolling", model),
    ];
    await until(async () => (await requestsOn(synced)) >= before + 4, "4 generations on the host");
    // Some tokens of each have streamed (a chunk of two every 200 ms) before the interrupt.
    await new Promise((r) => setTimeout(r, 600));
    const response = await setHost({ url: synced, paused: true, interrupt: true });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({
      host: { url: synced, state: "paused" },
      in_flight_generations: 0,
    });
    const sentToSynced = await requestsOn(synced);
    for (const id of [a, b]) expect((await waitForGroup(id)).status).toBe("landed");
    // Nothing more went to the paused host; its group's episodes finished on the next one.
    expect(await requestsOn(synced)).toBe(sentToSynced);
    // (Turns it had answered before the interrupt stay its own; the rest went to the next host
    // in its order, or past it when that one timed out under a loaded machine.)
    const rows = await sampled(a);
    const elsewhere = rows.flatMap((r) => (r.host === null || r.host === synced ? [] : [r.host]));
    expect(elsewhere.length).toBeGreaterThan(0);
    expect(elsewhere.every((host) => first.order.slice(1).includes(host))).toBe(true);
    const discarded = (id: string) =>
      d1<{ discarded_tokens: number }>(
        "SELECT discarded_tokens FROM episodes WHERE group_id = ? ORDER BY idx",
        id,
      ).then((rows) => rows.map((r) => r.discarded_tokens));
    expect((await discarded(a)).every((n) => n > 0)).toBe(true);
    expect(await discarded(b)).toEqual([0, 0, 0, 0]);
  });

  it("refuses an interrupt without a pause", async () => {
    const response = await setHost({ url: HOSTS[0], interrupt: true, policy_version: 3 });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { message: string } }).error.message).toMatch(
      /interrupt: only with paused: true/,
    );
  });

  it("refuses a POST /v1/hosts for a host that is not in the fleet, or that changes nothing", async () => {
    const unknown = await setHost({ url: "http://elsewhere:8000/v1", paused: true });
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { message: string } }).error.message).toContain(
      HOSTS[0],
    );
    const empty = await setHost({ url: HOSTS[0] });
    expect(empty.status).toBe(400);
  });
});
