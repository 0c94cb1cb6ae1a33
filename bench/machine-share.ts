/**
 * What else used the machine while the bench ran: CPU time of every process outside the bench's
 * own tree (this process, the simulator in it, wrangler and workerd, vitest, Python), sampled
 * from /proc every two seconds, so the report can say whether the run had the machine to itself.
 */
import { readdirSync, readFileSync } from "node:fs";
import { clockTicksPerSecond } from "./machine";

export interface MachineShare {
  seconds: number;
  /** CPU seconds used by the bench's own processes, and by everything else. */
  benchCpuS: number;
  otherCpuS: number;
  /** Everything else's CPU over the run's wall time, in cores (1.0: one core all of the time). */
  otherCores: number;
  /** The largest other users, by command name. */
  others: { command: string; cpuS: number }[];
}

interface ProcStat {
  ppid: number;
  comm: string;
  ticks: number;
  /** When it started, in clock ticks since boot. */
  startTicks: number;
}

/** Seconds since boot. */
const uptimeS = () => Number(readFileSync("/proc/uptime", "utf8").split(" ")[0]);

function readAll(): Map<number, ProcStat> {
  const out = new Map<number, ProcStat>();
  for (const entry of readdirSync("/proc")) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      out.set(pid, {
        ppid: Number(fields[1]),
        comm,
        ticks: Number(fields[11]) + Number(fields[12]),
        startTicks: Number(fields[19]),
      });
    } catch {
      // ended meanwhile
    }
  }
  return out;
}

function isOurs(pid: number, all: Map<number, ProcStat>): boolean {
  for (let p = pid, hops = 0; p > 1 && hops < 64; hops++) {
    if (p === process.pid) return true;
    const parent = all.get(p)?.ppid;
    if (parent === undefined) return false;
    p = parent;
  }
  return false;
}

export function machineShareSampler(everyMs = 2000) {
  const hz = clockTicksPerSecond();
  const started = performance.now();
  const startedTicks = uptimeS() * hz;
  const seen = new Map<number, { ticks: number; ours: boolean; comm: string }>();
  let benchTicks = 0;
  const otherTicks = new Map<string, number>();
  const count = (ours: boolean, comm: string, ticks: number) => {
    if (ours) benchTicks += ticks;
    else otherTicks.set(comm, (otherTicks.get(comm) ?? 0) + ticks);
  };
  const sample = () => {
    const all = readAll();
    for (const [pid, p] of all) {
      const last = seen.get(pid);
      let delta: number;
      if (last === undefined) {
        // Started during the run: all of its CPU is the run's; before it, only what follows.
        const ours = isOurs(pid, all);
        seen.set(pid, { ticks: p.ticks, ours, comm: p.comm });
        delta = p.startTicks >= startedTicks ? p.ticks : 0;
        if (delta > 0) count(ours, p.comm, delta);
        continue;
      }
      delta = p.ticks - last.ticks;
      last.ticks = p.ticks;
      if (delta > 0) count(last.ours, last.comm, delta);
    }
  };
  sample();
  const timer = setInterval(sample, everyMs);
  timer.unref();
  return {
    stop(): MachineShare {
      clearInterval(timer);
      sample();
      const seconds = (performance.now() - started) / 1000;
      const otherCpuS = [...otherTicks.values()].reduce((a, b) => a + b, 0) / hz;
      return {
        seconds,
        benchCpuS: benchTicks / hz,
        otherCpuS,
        otherCores: otherCpuS / seconds,
        others: [...otherTicks]
          .map(([command, ticks]) => ({ command, cpuS: ticks / hz }))
          .sort((a, b) => b.cpuS - a.cpuS)
          .slice(0, 5),
      };
    },
  };
}
