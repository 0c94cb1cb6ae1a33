/** Local ports: a free one for tests, whether one is free, the next free one above another. */
import { createServer } from "node:net";

/**
 * Ports `freePort` has handed out in this process. A port is free when it is handed out, and
 * bound by its user a moment later; in between, the system could give it to the next caller (or
 * to a listener on port 0), and a stack's second server then fails with "address in use". Never
 * handing one out twice closes that window within a process.
 */
const handedOut = new Set<number>();

export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = await anyFreePort();
    if (!handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error("no free port that this process has not handed out already");
}

function anyFreePort(): Promise<number> {
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
