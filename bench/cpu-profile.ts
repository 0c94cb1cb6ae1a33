/**
 * `npm run bench:profile`: a V8 CPU profile of the Worker while it plays the overhead workload
 * (guess-number groups, simulator latency 0; or `-- N marathon` for the ideal-ratio workload),
 * through wrangler's inspector. Prints the
 * functions with the most self time; the tool behind the CPU-per-turn work in docs/benchmarks.md.
 */
import { guessRequest } from "../reliability/harness";
import { freePort } from "../src/cli/ports";
import { connectWorker, sourceLines } from "./devtools";
import { playGroups, withBenchStack } from "./stack";

interface CallFrame {
  scriptId: string;
  functionName: string;
  url: string;
  lineNumber: number;
}
interface Profile {
  nodes: { id: number; callFrame: CallFrame }[];
  samples: number[];
}

const GROUPS = Number(process.argv[2] ?? "32");
/** `marathon`: the ideal-ratio workload (12-turn episodes, 1 s generations) instead. */
const MARATHON = process.argv[3] === "marathon";

const inspectorPort = await freePort();
await withBenchStack(
  async (bench) => {
    const cdp = await connectWorker(inspectorPort);
    await cdp.send("Debugger.enable");
    await cdp.send("Profiler.enable");
    await cdp.send("Profiler.setSamplingInterval", { interval: 200 });
    await cdp.send("Profiler.start");
    const batch = Array.from({ length: GROUPS }, (_, i) =>
      MARATHON
        ? {
            env: "marathon",
            example: { id: `p${i}`, input: "Go.", metadata: { turns: 12, reply_bytes: 200 } },
            group_size: 8,
            run_id: "profile",
            sampling: { model: "sim+latency:1000", seed: i, max_completion_tokens: 16 },
          }
        : guessRequest("profile", i, "sim", {
            group_size: 8,
            sampling: { model: "sim", temperature: 1, seed: i, max_completion_tokens: 64 },
          }),
    );
    await playGroups(bench.client, batch);
    const { profile } = await cdp.send<{ profile: Profile }>("Profiler.stop");

    const frames = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
    const self = new Map<string, { frame: CallFrame | undefined; count: number }>();
    for (const sample of profile.samples) {
      const frame = frames.get(sample);
      const where = frame
        ? `${frame.functionName || "(anonymous)"} ${frame.url.split("/").slice(-2).join("/")}:${frame.lineNumber + 1}`
        : "?";
      const entry = self.get(where) ?? { frame, count: 0 };
      entry.count++;
      self.set(where, entry);
    }
    const lineOf = sourceLines(cdp, 100);
    const total = profile.samples.length;
    for (const [where, { frame, count }] of [...self]
      .sort((a, b) => b[1].count - a[1].count)
      .slice(0, 45)) {
      const share = ((100 * count) / total).toFixed(1).padStart(5);
      console.log(`${share}%  ${where}  | ${await lineOf(frame)}`);
    }
    cdp.close();
  },
  { inspectorPort },
);
