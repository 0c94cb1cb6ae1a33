/**
 * `npm run bench:heap [-- pipeline|floor [C]]`: where workerd's memory is at the height of an
 * ideal-ratio point (C = 1,024 by default, 12 turns of 1 s generations), for the pipeline or the
 * floor Worker in a fresh process: its resident set split by /proc/<pid>/smaps_rollup, V8's heap
 * (`Runtime.getHeapUsage`), and a heap snapshot taken through wrangler's inspector, summarized by
 * constructor (count and self size); `--allocations` and `--series` below. The tool behind the
 * memory findings in docs/benchmarks.md.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { freePort } from "../src/cli/ports";
import { connectWorker, type DevTools, sourceLines } from "./devtools";
import { measureFloorPoint, rssNowMb, withFloorStack } from "./floor-point";
import { MODEL, measureIdeal } from "./ideal";
import { processesOf } from "./proc";
import { withBenchStack } from "./stack";

const side = process.argv[2] === "floor" ? "floor" : "pipeline";
const concurrency = Number(process.argv[3] ?? "1024");
/** `--allocations`: where the point's JavaScript allocates, garbage included, instead. */
const allocations = process.argv.includes("--allocations");
/**
 * `--series`: instead, every 500 ms of the point, workerd's RSS (and its anonymous memory inside
 * V8's pointer cage and outside it) beside V8's heap (used / total) and its ArrayBuffer backing
 * stores, to tell the phases apart (turns, then scoring and landing).
 */
const series = process.argv.includes("--series");
/**
 * `--landing`: the snapshot once the simulator has been asked for every generation of the point
 * (its groups finishing, scoring and landing) instead of half way through its turns.
 */
const landing = process.argv.includes("--landing");
/** `--statements N`: the floor's objects each run N distinct statements more (floor-point.ts). */
const statementsAt = process.argv.indexOf("--statements");
const statements = statementsAt > 0 ? Number(process.argv[statementsAt + 1]) : 0;
/** `--var NAME=VALUE` (repeatable): the pipeline's Worker runs with it, e.g. INFERENCE_STREAM=false. */
const vars = Object.fromEntries(
  process.argv.flatMap((a, i) => (process.argv[i - 1] === "--var" ? [a.split("=", 2)] : [])),
);
const TURNS = 12;

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
  nodes: number[];
  strings: string[];
}

/** Self size and count by (type, name), largest first. */
export function summarize(snapshot: Snapshot, top = 30) {
  const fields = snapshot.snapshot.meta.node_fields;
  const types = snapshot.snapshot.meta.node_types[0];
  const width = fields.length;
  const at = { type: fields.indexOf("type"), name: fields.indexOf("name") };
  const size = fields.indexOf("self_size");
  const byName = new Map<string, { count: number; bytes: number }>();
  const byType = new Map<string, number>();
  let total = 0;
  for (let i = 0; i < snapshot.nodes.length; i += width) {
    const type = types[snapshot.nodes[i + at.type] as number] ?? "?";
    const bytes = snapshot.nodes[i + size] as number;
    const name = `${type}: ${(snapshot.strings[snapshot.nodes[i + at.name] as number] ?? "?").slice(0, 60)}`;
    const entry = byName.get(name) ?? { count: 0, bytes: 0 };
    entry.count++;
    entry.bytes += bytes;
    byName.set(name, entry);
    byType.set(type, (byType.get(type) ?? 0) + bytes);
    total += bytes;
  }
  return {
    totalMb: total / 2 ** 20,
    byType: [...byType].sort((a, b) => b[1] - a[1]).map(([t, b]) => [t, +(b / 2 ** 20).toFixed(1)]),
    top: [...byName]
      .sort((a, b) => b[1].bytes - a[1].bytes)
      .slice(0, top)
      .map(([name, e]) => ({ name, count: e.count, mb: +(e.bytes / 2 ** 20).toFixed(2) })),
  };
}

async function takeSnapshot(cdp: DevTools): Promise<Snapshot> {
  const chunks: string[] = [];
  cdp.on("HeapProfiler.addHeapSnapshotChunk", (p) => chunks.push((p as { chunk: string }).chunk));
  await cdp.send("HeapProfiler.enable");
  await cdp.send("HeapProfiler.takeHeapSnapshot", { reportProgress: false });
  return JSON.parse(chunks.join("")) as Snapshot;
}

/** The group's largest workerd process: the one serving the Worker and its objects. */
const largestWorkerd = (pgid: number) => processesOf(pgid).sort((a, b) => b.rssMb - a.rssMb)[0];

/** The resident set of the group's largest workerd, by kind (kB in smaps_rollup, here MB). */
function smaps(pgid: number): Record<string, number> {
  const workerd = largestWorkerd(pgid);
  if (workerd === undefined) return {};
  const out: Record<string, number> = {};
  for (const line of readFileSync(`/proc/${workerd.pid}/smaps_rollup`, "utf8").split("\n")) {
    const m = /^(\w+):\s+(\d+) kB/.exec(line);
    if (m && ["Rss", "Anonymous", "Pss_File", "Pss_Anon", "Shared_Clean"].includes(m[1] as string))
      out[m[1] as string] = Math.round(Number(m[2]) / 1024);
  }
  return out;
}

async function atPeak(pgid: number, cdp: DevTools, point: Promise<unknown>, asked: () => number) {
  // With --landing, once every generation was asked for (the groups finishing and landing);
  // else half way through the point's turns (every group started, none landed).
  if (landing) while (asked() < concurrency * TURNS) await new Promise((r) => setTimeout(r, 50));
  else await new Promise((r) => setTimeout(r, (TURNS / 2) * 1000 + 2000));
  const rss = smaps(pgid);
  const heap = await cdp.send<{ usedSize: number; totalSize: number }>("Runtime.getHeapUsage");
  const snapshot = summarize(await takeSnapshot(cdp));
  await point;
  return {
    side,
    concurrency,
    rssMb: rss,
    heapUsedMb: +(heap.usedSize / 2 ** 20).toFixed(1),
    heapTotalMb: +(heap.totalSize / 2 ** 20).toFixed(1),
    snapshot,
  };
}

interface SamplingNode {
  callFrame: { functionName: string; url: string; lineNumber: number; scriptId: string };
  selfSize: number;
  children: SamplingNode[];
}

/** Bytes allocated over a whole point, by function (V8's sampling heap profiler). */
async function allocationsOver(cdp: DevTools, point: Promise<unknown>) {
  await cdp.send("Debugger.enable");
  await cdp.send("HeapProfiler.enable");
  await cdp.send("HeapProfiler.startSampling", {
    samplingInterval: 16384,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  await point;
  const { profile } = await cdp.send<{ profile: { head: SamplingNode } }>(
    "HeapProfiler.stopSampling",
  );
  if (process.env.BENCH_HEAP_PROFILE_OUT)
    writeFileSync(process.env.BENCH_HEAP_PROFILE_OUT, JSON.stringify(profile));
  const bySite = new Map<string, { bytes: number; frame: SamplingNode["callFrame"] }>();
  let total = 0;
  const walk = (node: SamplingNode) => {
    const f = node.callFrame;
    const site = `${f.functionName || "(anonymous)"} ${f.url.split("/").slice(-2).join("/")}:${f.lineNumber + 1}`;
    const entry = bySite.get(site) ?? { bytes: 0, frame: f };
    entry.bytes += node.selfSize;
    bySite.set(site, entry);
    total += node.selfSize;
    for (const child of node.children) walk(child);
  };
  walk(profile.head);
  const lineOf = sourceLines(cdp, 90);
  const top = [...bySite].sort((a, b) => b[1].bytes - a[1].bytes).slice(0, 40);
  return {
    side,
    concurrency,
    allocatedMb: +(total / 2 ** 20).toFixed(1),
    top: await Promise.all(
      top.map(async ([site, { bytes, frame }]) => ({
        site,
        mb: +(bytes / 2 ** 20).toFixed(2),
        source: await lineOf(frame),
      })),
    ),
  };
}

const GIB4 = 2 ** 32;

/**
 * The largest workerd's anonymous resident memory split in two (MB): inside V8's pointer cage
 * (the 4 GiB reservation every isolate's heap lives in: the committed mappings of the 4 GiB
 * window holding its `---p` reservation) and outside it (the allocator's arenas: workerd's
 * native objects, SQLite, buffers). The two halves a memory difference can be in.
 */
function anonymousSplit(pgid: number): { cageMb: number; outsideMb: number } {
  const workerd = largestWorkerd(pgid);
  if (workerd === undefined) return { cageMb: 0, outsideMb: 0 };
  const maps: { start: number; end: number; perms: string; anon: boolean; rssKb: number }[] = [];
  for (const line of readFileSync(`/proc/${workerd.pid}/smaps`, "utf8").split("\n")) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ (\d+)\s*(.*)$/.exec(line);
    if (head)
      maps.push({
        start: Number.parseInt(head[1] as string, 16),
        end: Number.parseInt(head[2] as string, 16),
        perms: head[3] as string,
        anon: head[4] === "0" && (head[5] ?? "") === "",
        rssKb: 0,
      });
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    const last = maps.at(-1);
    if (rss && last) last.rssKb = Number(rss[1]);
  }
  const reservation = maps.find(
    (m) => m.anon && m.perms === "---p" && m.end - m.start > 3.5 * 2 ** 30,
  );
  const base = reservation === undefined ? -1 : Math.floor(reservation.start / GIB4) * GIB4;
  let cage = 0;
  let outside = 0;
  for (const m of maps.filter((m) => m.anon)) {
    if (base >= 0 && m.start >= base && m.end <= base + GIB4) cage += m.rssKb;
    else outside += m.rssKb;
  }
  return { cageMb: Math.round(cage / 1024), outsideMb: Math.round(outside / 1024) };
}

/** RSS and V8's heap over a whole point, sampled every 500 ms (MB). */
async function seriesOver(
  pgid: number,
  cdp: DevTools,
  point: Promise<unknown>,
  answered: () => number,
) {
  const rows: {
    s: number;
    /** Generations the simulator answered so far: flat once the turns are over (scoring, landing). */
    turns: number;
    rssMb: number;
    /** Anonymous memory inside V8's pointer cage, and outside it (anonymousSplit). */
    cageMb: number;
    outsideMb: number;
    heapUsedMb: number;
    heapTotalMb: number;
    backingMb: number;
  }[] = [];
  const started = Date.now();
  let done = false;
  point.finally(() => {
    done = true;
  });
  const mb = (bytes: number | undefined) => +((bytes ?? 0) / 2 ** 20).toFixed(1);
  while (!done) {
    const heap = await cdp.send<{
      usedSize: number;
      totalSize: number;
      backingStorageSize?: number;
    }>("Runtime.getHeapUsage");
    rows.push({
      s: +((Date.now() - started) / 1000).toFixed(1),
      turns: answered(),
      rssMb: Math.round(rssNowMb(pgid)),
      ...anonymousSplit(pgid),
      heapUsedMb: mb(heap.usedSize),
      heapTotalMb: mb(heap.totalSize),
      backingMb: mb(heap.backingStorageSize),
    });
    await new Promise((r) => setTimeout(r, 500));
  }
  await point;
  return rows;
}

const inspectorPort = await freePort();
if (series) {
  const rows = await (side === "pipeline"
    ? withBenchStack(
        async (bench) => {
          const cdp = await connectWorker(inspectorPort);
          const answered = () => bench.simRequests(MODEL);
          return seriesOver(
            bench.pgid,
            cdp,
            measureIdeal(bench, concurrency, TURNS),
            answered,
          ).finally(() => cdp.close());
        },
        { inspectorPort, vars },
      )
    : withFloorStack(
        async (floor) => {
          const cdp = await connectWorker(inspectorPort);
          return seriesOver(
            floor.pgid,
            cdp,
            measureFloorPoint(floor, concurrency, TURNS, statements),
            () => floor.simulator.stats().byModel[MODEL]?.requests ?? 0,
          ).finally(() => cdp.close());
        },
        { inspectorPort },
      ));
  console.log(`${side}, C = ${concurrency}: peak RSS ${Math.max(...rows.map((r) => r.rssMb))} MB`);
  console.table(rows);
  process.exit(0);
}
if (allocations) {
  const found = await (side === "pipeline"
    ? withBenchStack(
        async (bench) => {
          const cdp = await connectWorker(inspectorPort);
          return allocationsOver(cdp, measureIdeal(bench, concurrency, TURNS)).finally(() =>
            cdp.close(),
          );
        },
        { inspectorPort, vars },
      )
    : withFloorStack(
        async (floor) => {
          const cdp = await connectWorker(inspectorPort);
          return allocationsOver(
            cdp,
            measureFloorPoint(floor, concurrency, TURNS, statements),
          ).finally(() => cdp.close());
        },
        { inspectorPort },
      ));
  console.log(`${found.side}, C = ${found.concurrency}: ${found.allocatedMb} MB allocated`);
  for (const t of found.top)
    console.log(`${String(t.mb).padStart(7)} MB  ${t.site}  | ${t.source}`);
  process.exit(0);
}
const found =
  side === "pipeline"
    ? await withBenchStack(
        async (bench) => {
          const cdp = await connectWorker(inspectorPort);
          const point = measureIdeal(bench, concurrency, TURNS);
          return atPeak(bench.pgid, cdp, point, () => bench.simRequests(MODEL)).finally(() =>
            cdp.close(),
          );
        },
        { inspectorPort, vars },
      )
    : await withFloorStack(
        async (floor) => {
          const cdp = await connectWorker(inspectorPort);
          const point = measureFloorPoint(floor, concurrency, TURNS, statements);
          return atPeak(
            floor.pgid,
            cdp,
            point,
            () => floor.simulator.stats().byModel[MODEL]?.requests ?? 0,
          ).finally(() => cdp.close());
        },
        { inspectorPort },
      );
console.log(JSON.stringify({ ...found, snapshot: undefined }, null, 2));
console.log("V8 heap snapshot, self size by node type (MB):", found.snapshot.byType);
console.table(found.snapshot.top);
