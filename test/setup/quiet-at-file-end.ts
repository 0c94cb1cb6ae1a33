// Runs with each workerd test file. The files a worker runs share its runtime (vitest.config.ts,
// `isolate: false`): its D1, its objects and their alarms. So that the next file starts as a
// fresh runtime would, with no group of this one landing into its counts, a file ends only once
// none of the groups it started is still running.
import { env } from "cloudflare:workers";
import { afterAll } from "vitest";

const running = async () =>
  (
    await env.DB.prepare("SELECT COUNT(*) AS n FROM groups WHERE status = 'running'").first<{
      n: number;
    }>()
  )?.n ?? 0;

afterAll(async () => {
  const deadline = Date.now() + 45_000;
  for (let left = await running(); left > 0; left = await running()) {
    if (Date.now() > deadline) throw new Error(`${left} groups still running at the file's end`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}, 50_000);
