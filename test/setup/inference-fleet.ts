// Vitest global setup (runs in Node) for the fleet's workerd tests: four simulated hosts with
// prefix caches, whose comma-separated URLs reach workerd as INFERENCE_BASE_URL, and a control
// server the tests (in workerd) call to kill, revive and slow a host, since a killed host cannot
// be asked to come back itself.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { TestProject } from "vitest/node";
import { startSimFleet } from "../../src/sim/fleet";

declare module "vitest" {
  export interface ProvidedContext {
    fleetUrl: string;
    fleetControlUrl: string;
  }
}

export const FLEET_HOSTS = 4;

export default async function setup(project: TestProject) {
  const fleet = await startSimFleet(FLEET_HOSTS, {
    kvBlocks: 8192,
    latency: { msPerPromptToken: 0.05 },
  });
  const control = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://control");
    const host = fleet.hosts[Number(url.searchParams.get("host"))];
    const done = (status: number, body: object) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    if (req.method !== "POST" || host === undefined) return done(404, { error: "no such host" });
    const act =
      url.pathname === "/kill"
        ? host.kill()
        : url.pathname === "/revive"
          ? host.revive()
          : url.pathname === "/slow"
            ? Promise.resolve(host.setSlow(Number(url.searchParams.get("factor") ?? "1")))
            : null;
    if (act === null) return done(404, { error: `no control ${url.pathname}` });
    act.then(
      () => done(200, { ok: true }),
      (error) => done(500, { error: String(error) }),
    );
  });
  await new Promise<void>((resolve) => control.listen(0, "127.0.0.1", resolve));
  project.provide("fleetUrl", fleet.baseUrl);
  project.provide("fleetControlUrl", `http://127.0.0.1:${(control.address() as AddressInfo).port}`);
  return async () => {
    control.close();
    await fleet.close();
  };
}
