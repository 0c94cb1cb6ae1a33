/** CPU time and memory of a process tree, read from /proc (Linux). */
import { readdirSync, readFileSync } from "node:fs";
import { clockTicksPerSecond } from "./machine";

/** /proc counts CPU time in clock ticks; their rate is the kernel's, read once. */
const TICKS_PER_SECOND = clockTicksPerSecond();

interface Sample {
  pid: number;
  comm: string;
  cpuMs: number;
  rssMb: number;
}

/** Process `pid` if it is in process group `pgid`; its memory is read only then. */
function read(pid: number, pgid: number): Sample | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(fields[2]) !== pgid) return null;
    const cpu = Number(fields[11]) + Number(fields[12]);
    const rss = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
    return { pid, comm, cpuMs: (cpu * 1000) / TICKS_PER_SECOND, rssMb: Number(rss ?? 0) / 1024 };
  } catch {
    return null;
  }
}

/** Every live process in process group `pgid` whose name matches `name`. */
export function processesOf(pgid: number, name = "workerd"): Sample[] {
  const out: Sample[] = [];
  for (const entry of readdirSync("/proc")) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    const sample = read(pid, pgid);
    if (sample?.comm.includes(name)) out.push(sample);
  }
  return out;
}

/** CPU milliseconds spent so far by the group's workerd processes. */
export function workerdCpuMs(pgid: number): number {
  return processesOf(pgid).reduce((sum, p) => sum + p.cpuMs, 0);
}

/** Samples the largest resident set of the group's workerd processes until stopped. */
export function rssSampler(pgid: number, everyMs = 250) {
  let peak = 0;
  const timer = setInterval(() => {
    for (const p of processesOf(pgid)) peak = Math.max(peak, p.rssMb);
  }, everyMs);
  return {
    stop(): number {
      clearInterval(timer);
      return peak;
    },
  };
}
