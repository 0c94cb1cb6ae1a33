/**
 * `npm run bench:profile`: a V8 CPU profile of the Worker while it plays the overhead workload
 * (guess-number groups, simulator latency 0; or `-- N marathon` for the ideal-ratio workload),
 * through wrangler's inspector. Prints the
 * functions with the most self time; the tool behind the CPU-per-turn work in docs/benchmarks.md.
 */
import pMap from "p-map";
import WebSocket from "ws";
import { guessRequest } from "../reliability/harness";
import { freePort } from "../src/cli/ports";
import { waitForRun, withBenchStack } from "./stack";

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

/** A minimal Chrome DevTools Protocol client over the inspector's WebSocket. */
async function devtools(url: string) {
  // The `ws` package: Node's built-in WebSocket is refused by workerd's inspector.
  const socket = new WebSocket(url);
  await new Promise((open, fail) => {
    socket.once("open", open);
    socket.once("error", fail);
  });
  let next = 0;
  const pending = new Map<number, (result: unknown) => void>();
  socket.on("message", (data) => {
    const message = JSON.parse(String(data)) as { id?: number; result?: unknown };
    if (message.id !== undefined) pending.get(message.id)?.(message.result);
  });
  return {
    send<T>(method: string, params: object = {}): Promise<T> {
      const id = ++next;
      socket.send(JSON.stringify({ id, method, params }));
      return new Promise((resolve) => pending.set(id, resolve as (result: unknown) => void));
    },
    close: () => socket.close(),
  };
}

const inspectorPort = await freePort();
await withBenchStack(
  async (bench) => {
    const targets = (await (await fetch(`http://127.0.0.1:${inspectorPort}/json`)).json()) as {
      webSocketDebuggerUrl: string;
    }[];
    const target = targets[0];
    if (target === undefined) throw new Error("the inspector lists no Worker");
    const cdp = await devtools(target.webSocketDebuggerUrl);
    await cdp.send("Debugger.enable");
    await cdp.send("Profiler.enable");
    await cdp.send("Profiler.setSamplingInterval", { interval: 200 });
    await cdp.send("Profiler.start");
    await pMap(
      Array.from({ length: GROUPS }, (_, i) => i),
      (i) =>
        bench.client.startGroup(
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
        ),
      { concurrency: 16 },
    );
    await waitForRun(bench.client, "profile", GROUPS);
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
    // The bundle's line numbers mean little; show each hot line's source next to it.
    const sources = new Map<string, string[]>();
    const lineOf = async (frame: CallFrame | undefined) => {
      if (frame === undefined || frame.scriptId === "0" || frame.lineNumber < 0) return "";
      if (!sources.has(frame.scriptId)) {
        const { scriptSource } = await cdp.send<{ scriptSource: string }>(
          "Debugger.getScriptSource",
          { scriptId: frame.scriptId },
        );
        sources.set(frame.scriptId, (scriptSource ?? "").split("\n"));
      }
      return (sources.get(frame.scriptId)?.[frame.lineNumber] ?? "").trim().slice(0, 100);
    };
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
