/** Local ports: a free one for tests, whether one is free, the next free one above another. */
import { createServer } from "node:net";

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

export async function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/** The first free port above `port` that `taken` does not hold. */
export async function nextFreePort(port: number, taken: ReadonlySet<number>): Promise<number> {
  let candidate = port + 1;
  while (taken.has(candidate) || !(await portIsFree(candidate))) candidate++;
  return candidate;
}
