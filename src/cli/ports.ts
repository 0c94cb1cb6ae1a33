/** Local ports: a free one for tests, and one check of every port a command wants to listen on. */
import { createServer } from "node:net";
import { CliError } from "./project";

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

export interface WantedPort {
  port: number;
  /** What would listen there, e.g. "the Worker". */
  what: string;
  /** The flag that moves it, e.g. "--port". */
  flag: string;
}

/** The first free port above `port` that none of `taken` holds. */
async function nextFreePort(port: number, taken: Set<number>): Promise<number> {
  let candidate = port + 1;
  while (taken.has(candidate) || !(await portIsFree(candidate))) candidate++;
  return candidate;
}

/**
 * Refuses to start when any wanted port is busy, naming every busy one in one message with
 * the flags, and free ports, that fix it all at once.
 */
export async function ensurePortsFree(wanted: readonly WantedPort[], command: string) {
  const busy: WantedPort[] = [];
  for (const w of wanted) if (!(await portIsFree(w.port))) busy.push(w);
  if (busy.length === 0) return;
  const taken = new Set(wanted.map((w) => w.port));
  const fixes: string[] = [];
  for (const w of busy) {
    const free = await nextFreePort(w.port, taken);
    taken.add(free);
    fixes.push(`${w.flag} ${free}`);
  }
  const list = busy.map((w) => `${w.port} (${w.what}, ${w.flag})`).join(", ");
  throw new CliError(
    `${busy.length === 1 ? "port" : "ports"} ${list} ${busy.length === 1 ? "is" : "are"} busy: stop what uses ${busy.length === 1 ? "it" : "them"}, or run \`${command} -- ${fixes.join(" ")}\``,
  );
}
