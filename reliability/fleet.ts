/**
 * `npm run test:fleet [-- --short]`: a fleet of four simulated hosts, each a process of its own.
 * One is ten times slower than the rest from the start; another is SIGKILLed while groups are
 * mid-episode, and started again on the same port once edgeroll has ejected it. Groups started
 * after it is readmitted show it taking work again. Every group must land, none as failed, every
 * episode complete, and the killed host be ejected and readmitted (`fleetVerdict`). Writes
 * reliability/results/fleet.json and the fleet section of docs/reliability.md.
 */
import pMap from "p-map";
import { EdgerollClient } from "../src/client/edgeroll-client";
import { sleep } from "../src/utils/backoff";
import { type FleetFigures, fleetVerdict, type HostEvent } from "./fleet-verdict";
import { countBy, flag, serveEverything, withStack, writeResult } from "./harness";
import { renderReport } from "./report";
import { type SimProcess, startSimProcess } from "./sim-process";

const short = flag("short");
const EARLY = short ? 30 : 90;
const LATE = short ? 10 : 30;
const SIZE = 8;
const RUN = "fleet";
const KILLED = 1;
const SLOW = 2;
const SLOW_FACTOR = 10;
/**
 * Marathon episodes of TURNS turns, each at least a first token and 32 more away: every episode
 * is still running when the host dies, whatever the machine, so the kill always finds work.
 */
const TURNS = 24;
const KILL_AT_S = 3;
/** How long the killed host stays down after edgeroll has ejected it. */
const DOWN_S = 5;
const latency = { ttftMs: 100, msPerToken: 5 };

const flags = [
  "--ttft-ms",
  String(latency.ttftMs),
  "--ms-per-token",
  String(latency.msPerToken),
  "--kv-blocks",
  "8192",
];
const hosts: SimProcess[] = [];
const url = (i: number) => (hosts[i] as SimProcess).url;
/** Seconds since the stack was up and the first groups were about to start. */
let started = Date.now();
const since = () => (Date.now() - started) / 1000;

try {
  for (let i = 0; i < 4; i++)
    hosts.push(
      await startSimProcess(i === SLOW ? [...flags, "--slow", `0:${SLOW_FACTOR}`] : flags),
    );
  const figures = await withStack(
    {
      inferenceUrl: hosts.map((h) => h.url).join(","),
      vars: { HOST_PROBE_S: "1", MAX_INFLIGHT_GENERATIONS: "4096", HEARTBEAT_S: "10" },
    },
    async (stack): Promise<FleetFigures> => {
      const client = new EdgerollClient({
        baseUrl: stack.apiUrl,
        token: stack.tokens.admin,
        attempts: 5,
      });
      started = Date.now();
      const watch = watchHosts(client);
      try {
        return await play(client, watch);
      } finally {
        await watch.stop();
      }
    },
  );
  const result = { ...figures, ...fleetVerdict(figures) };
  writeResult("fleet", result);
  renderReport();
  console.log(JSON.stringify({ ...result, timeline: result.timeline.length }, null, 2));
  for (const problem of result.problems) console.error(`fleet: ${problem}`);
  process.exitCode = result.ok ? 0 : 1;
} finally {
  await Promise.all(hosts.map((h) => h.stop()));
}

/** Every change of any host's state, as GET /v1/hosts shows it, four times a second. */
function watchHosts(client: EdgerollClient) {
  const timeline: HostEvent[] = [];
  const last = new Map<string, string>();
  let watching = true;
  const loop = (async () => {
    while (watching) {
      const view = await client.listHosts().catch(() => null);
      for (const h of view?.hosts ?? [])
        if (last.get(h.url) !== h.state) {
          last.set(h.url, h.state);
          timeline.push({
            atSeconds: since(),
            host: h.url,
            state: h.state,
            lastError: h.last_error,
          });
        }
      await sleep(250);
    }
  })();
  return {
    timeline,
    stateOf: (host: string) => last.get(host),
    stop: async () => {
      watching = false;
      await loop;
    },
  };
}

/** The run itself: waves of groups, the kill, the restart, everything landed and served. */
async function play(
  client: EdgerollClient,
  watch: ReturnType<typeof watchHosts>,
): Promise<FleetFigures> {
  const { timeline } = watch;
  const until = async (what: string, holds: () => boolean, timeoutS = 120) => {
    const deadline = Date.now() + timeoutS * 1000;
    while (!holds()) {
      if (Date.now() > deadline) return null;
      await sleep(100);
    }
    console.log(`fleet: ${what} at ${since().toFixed(1)} s`);
    return since();
  };
  const start = (from: number, count: number) =>
    pMap(
      Array.from({ length: count }, (_, k) => from + k),
      async (i) =>
        (
          await client.startGroup(
            {
              env: "marathon",
              example: {
                id: `${RUN}-${i}`,
                input: `Keep going, ${i}.`,
                metadata: { turns: TURNS, reply_bytes: 200 },
              },
              group_size: SIZE,
              run_id: RUN,
              sampling: { model: "sim+babble", seed: i * 31, max_completion_tokens: 32 },
            },
            { idempotencyKey: `${RUN}:${i}` },
          )
        ).group_id,
      { concurrency: 50 },
    );

  const early = await start(0, EARLY);
  await sleep(Math.max(0, KILL_AT_S - since()) * 1000);
  const before = await client.listHosts();
  const inFlightOnKilledHost = before.hosts.find((h) => h.url === url(KILLED))?.in_flight ?? 0;
  await hosts[KILLED]?.kill();
  const killedAtSeconds = since();
  console.log(
    `fleet: host ${KILLED} (${url(KILLED)}) SIGKILLed at ${killedAtSeconds.toFixed(1)} s`,
  );
  const ejectedAtSeconds = await until(
    "host ejected",
    () => watch.stateOf(url(KILLED)) === "ejected",
  );
  await sleep(DOWN_S * 1000);
  await hosts[KILLED]?.restart();
  const revivedAtSeconds = since();
  console.log(`fleet: host ${KILLED} started again at ${revivedAtSeconds.toFixed(1)} s`);
  // Readmitted: probed, answered, taking episodes again on trial (`probing`); never, if it
  // was never out.
  const readmittedAtSeconds =
    ejectedAtSeconds === null
      ? null
      : await until("host readmitted", () => watch.stateOf(url(KILLED)) !== "ejected");
  const late = await start(EARLY, LATE);
  const groups = await pMap(
    [...early, ...late],
    (id) => client.waitForGroup(id, { timeoutMs: 900_000, intervalMs: 1000 }),
    { concurrency: 50 },
  );
  const seconds = since();
  const { groups: served, episodeIds } = await serveEverything(client, RUN);
  const distinct = new Set(episodeIds).size;
  const episodes = groups.flatMap((g) => g.episodes);
  const ends = episodes.map((e) => e.state);
  return {
    date: new Date().toISOString(),
    short,
    hosts: hosts.length,
    groups: EARLY + LATE,
    groupSize: SIZE,
    turns: TURNS,
    lateGroups: LATE,
    killedHost: KILLED,
    slowHost: SLOW,
    slowFactor: SLOW_FACTOR,
    killedAtSeconds,
    inFlightOnKilledHost,
    ejectedAtSeconds,
    revivedAtSeconds,
    readmittedAtSeconds,
    healthyAgainAtSeconds:
      timeline.find(
        (e) => e.host === url(KILLED) && e.state === "healthy" && e.atSeconds > revivedAtSeconds,
      )?.atSeconds ?? null,
    otherEjections: timeline.filter((e) => e.host !== url(KILLED) && e.state === "ejected").length,
    requestsByHost: await Promise.all(hosts.map((h) => h.requests())),
    timeline,
    landed: groups.filter((g) => g.status === "landed").length,
    failedGroups: groups.filter((g) => g.status === "failed").length,
    served: served.size,
    episodes: episodeIds.length,
    lost: (EARLY + LATE) * SIZE - distinct,
    duplicated: episodeIds.length - distinct,
    episodeEnds: {
      completed: ends.filter((s) => s === "completed").length,
      truncated: ends.filter((s) => s === "truncated").length,
      failed: ends.filter((s) => s === "failed").length,
    },
    failureReasons: countBy(
      episodes.filter((e) => e.failure_reason !== null),
      (e) => e.failure_reason ?? "",
    ),
    seconds,
    latency,
  };
}
