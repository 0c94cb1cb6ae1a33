// Temporary: a V8 CPU profile of the Worker under load, through wrangler's inspector.
import WebSocket from "ws";
import { EdgerollClient } from "../src/client/edgeroll-client";
import { freePort } from "../src/cli/local-stack";
import { withStack } from "../reliability/harness";

const inspectorPort = await freePort();
await withStack({ inspectorPort, vars: { HEARTBEAT_S: "30", MAX_INFLIGHT_GENERATIONS: process.argv[2] ?? "4096" }, sim: { latency: { ttftMs: 0, msPerToken: 0, msPerPromptToken: 0 } } }, async (stack) => {
  const client = new EdgerollClient({ baseUrl: stack.apiUrl, token: stack.tokens.admin });
  const targets = (await (await fetch(`http://127.0.0.1:${inspectorPort}/json`)).json()) as { webSocketDebuggerUrl: string; title: string }[];
  console.log(targets.map((t) => t.title));
  const ws = new WebSocket(targets[0]?.webSocketDebuggerUrl as string);
  await new Promise((r) => ws.on("open", r));
  let id = 0;
  const pending = new Map<number, (v: unknown) => void>();
  ws.on("message", (data) => {
    const msg = JSON.parse(String(data));
    if (msg.id && pending.has(msg.id)) pending.get(msg.id)?.(msg.result);
  });
  const send = (method: string, params = {}) => new Promise<any>((resolve) => { id++; pending.set(id, resolve); ws.send(JSON.stringify({ id, method, params })); });
  await send("Debugger.enable");
  await send("Profiler.enable");
  await send("Profiler.setSamplingInterval", { interval: 200 });
  await send("Profiler.start");
  const groups = 32;
  await Promise.all(Array.from({ length: groups }, (_, i) => client.startGroup({ env: "marathon", example: { id: `m${i}`, input: "Go.", metadata: { turns: 20, reply_bytes: 200 } }, group_size: 8, run_id: "prof", sampling: { model: "sim", max_completion_tokens: 32 } })));
  for (;;) { const p = await client.getRun("prof"); if (p.groups.landed + p.groups.failed === groups) break; await new Promise((r) => setTimeout(r, 250)); }
  const { profile } = await send("Profiler.stop");
  const self = new Map<string, number>();
  const byId = new Map<number, any>(profile.nodes.map((n: any) => [n.id, n]));
  const counts = new Map<number, number>();
  for (const s of profile.samples) counts.set(s, (counts.get(s) ?? 0) + 1);
  let total = 0;
  const frames = new Map<string, any>();
  for (const [nid, c] of counts) { const n = byId.get(nid); const cf = n.callFrame; const key = `${cf.functionName || "(anon)"} ${cf.url.split("/").slice(-2).join("/")}:${cf.lineNumber}`; frames.set(key, cf); self.set(key, (self.get(key) ?? 0) + c); total += c; }
  const top = [...self].sort((a, b) => b[1] - a[1]).slice(0, 40);
  const sources = new Map<string, string[]>();
  for (const [k, c] of top) {
    const cf = frames.get(k);
    let text = "";
    if (cf.scriptId && cf.scriptId !== "0" && cf.lineNumber >= 0) {
      if (!sources.has(cf.scriptId)) sources.set(cf.scriptId, ((await send("Debugger.getScriptSource", { scriptId: cf.scriptId }))?.scriptSource ?? "").split("\n"));
      text = (sources.get(cf.scriptId)?.[cf.lineNumber] ?? "").trim().slice(0, 90);
    }
    console.log(`${((100 * c) / total).toFixed(1).padStart(5)}%  ${k}  | ${text}`);
  }
  ws.close();
});
