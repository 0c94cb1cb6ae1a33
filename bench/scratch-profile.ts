// Temporary: CPU per turn of the pipeline under variants.
import { EdgerollClient } from "../src/client/edgeroll-client";
import { withStack } from "../reliability/harness";
import { processesOf, workerdCpuMs } from "./proc";

const variant = process.argv[2] ?? "base";
const vars: Record<string, string> = { HEARTBEAT_S: "30", MAX_INFLIGHT_GENERATIONS: variant === "nolimit" ? "0" : "4096" };
if (variant === "nostream") vars.INFERENCE_STREAM = "false";
await withStack({ vars, sim: { latency: { ttftMs: 0, msPerToken: 0, msPerPromptToken: 0 } } }, async (stack) => {
  const client = new EdgerollClient({ baseUrl: stack.apiUrl, token: stack.tokens.admin });
  const pgid = stack.wrangler.pid as number;
  console.log(processesOf(pgid).map((p) => `${p.pid} ${p.comm}`).join(", "));
  const groups = 32;
  const before = workerdCpuMs(pgid);
  const t0 = Date.now();
  await Promise.all(Array.from({ length: groups }, (_, i) => client.startGroup({ env: "marathon", example: { id: `m${i}`, input: "Go.", metadata: { turns: 20, reply_bytes: 200 } }, group_size: 8, run_id: "prof", sampling: { model: "sim", max_completion_tokens: 32 } })));
  for (;;) {
    const p = await client.getRun("prof");
    if (p.groups.landed + p.groups.failed === groups) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  const seconds = (Date.now() - t0) / 1000;
  const cpu = workerdCpuMs(pgid) - before;
  const turns = groups * 8 * 20;
  console.log(`${variant}: ${turns} turns in ${seconds.toFixed(1)} s = ${(turns / seconds).toFixed(0)} turns/s; workerd CPU ${(cpu / 1000).toFixed(1)} s = ${(cpu / turns).toFixed(2)} ms/turn; per process: ${processesOf(pgid).map((p) => p.cpuMs.toFixed(0)).join(", ")}`);
  console.log(JSON.stringify(stack.simulator?.stats().turnOverheadMs));
});
