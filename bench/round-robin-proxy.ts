/**
 * A plain round-robin load balancer in front of several hosts, the baseline of the fleet part:
 * each request goes to the next host in turn, whatever it carries, as a load balancer that knows
 * nothing of conversations does. Requests and responses are piped through, streams included.
 */
import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";

export interface Proxy {
  /** `http://127.0.0.1:port/v1`: one base URL for the whole fleet. */
  url: string;
  close(): Promise<void>;
}

export async function startRoundRobinProxy(baseUrls: readonly string[]): Promise<Proxy> {
  const targets = baseUrls.map((u) => new URL(u));
  let next = 0;
  const server = createServer((req, res) => {
    const target = targets[next++ % targets.length] as URL;
    const upstream = request(
      {
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: target.host },
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on("error", () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    req.pipe(upstream);
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
