/**
 * Before a local stack starts: every reason it cannot (busy ports, a state directory another
 * stack holds) in one message, with one command line that fixes them all at once.
 */
import { existsSync } from "node:fs";
import { nextFreePort, portIsFree } from "./ports";
import { CliError, resolveStateDir } from "./project";
import { stateDirHolder } from "./state-lock";

export interface WantedPort {
  port: number;
  /** What would listen there, e.g. "the Worker". */
  what: string;
  /** The flag that moves it, e.g. "--port". */
  flag: string;
}

/** `<dir>-2`, `<dir>-3`, ...: the first that no live stack holds. */
function freeStateDir(dir: string): string {
  for (let n = 2; ; n++) {
    const candidate = `${dir.replace(/\/+$/, "")}-${n}`;
    if (!existsSync(resolveStateDir(candidate)) || !stateDirHolder(resolveStateDir(candidate)))
      return candidate;
  }
}

export async function ensureCanStart(
  command: string,
  ports: readonly WantedPort[],
  stateDir: string,
): Promise<void> {
  const problems: string[] = [];
  const fixes: string[] = [];
  const busy: WantedPort[] = [];
  for (const p of ports) if (!(await portIsFree(p.port))) busy.push(p);
  if (busy.length > 0) {
    const list = busy.map((p) => `${p.port} (${p.what}, ${p.flag})`).join(", ");
    problems.push(busy.length === 1 ? `port ${list} is busy` : `ports ${list} are busy`);
    const taken = new Set(ports.map((p) => p.port));
    for (const p of busy) {
      const free = await nextFreePort(p.port, taken);
      taken.add(free);
      fixes.push(`${p.flag} ${free}`);
    }
  }
  const holder = stateDirHolder(resolveStateDir(stateDir));
  if (holder !== null) {
    problems.push(
      `the state directory ${stateDir} is in use by another edgeroll stack (process ${holder.pid}, serving ${holder.api_url})`,
    );
    fixes.push(`--persist-to ${freeStateDir(stateDir)}`);
  }
  if (problems.length === 0) return;
  throw new CliError(
    `cannot start: ${problems.join(", and ")}. Stop what holds ${fixes.length === 1 ? "it" : "them"}, or run \`${command} -- ${fixes.join(" ")}\``,
  );
}
