/**
 * The machine a run measured, detected rather than written: CPU, cores, memory, whether a GPU
 * is there, and the clock-tick rate /proc counts CPU time in.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { availableParallelism, cpus, totalmem } from "node:os";

export interface Machine {
  cpu: string;
  cores: number;
  ramGb: number;
  /** The GPUs nvidia-smi lists, or the /dev/nvidia* devices; empty when neither is there. */
  gpus: string[];
  /** How the GPU answer was found. */
  gpuProbe: string;
  node: string;
  platform: string;
  clockTicksPerSecond: number;
}

function run(command: string, args: string[]): string | null {
  try {
    return execFileSync(command, args, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
  } catch {
    return null;
  }
}

/** The kernel's USER_HZ, which /proc/<pid>/stat counts CPU time in (`getconf CLK_TCK`). */
export function clockTicksPerSecond(): number {
  const ticks = Number(run("getconf", ["CLK_TCK"])?.trim());
  if (!Number.isInteger(ticks) || ticks <= 0)
    throw new Error("`getconf CLK_TCK` gave no clock-tick rate: CPU times cannot be read");
  return ticks;
}

function gpus(): { gpus: string[]; probe: string } {
  const smi = run("nvidia-smi", ["--query-gpu=name,memory.total", "--format=csv,noheader"]);
  if (smi !== null) {
    const listed = smi
      .split("\n")
      .map((l) => l.trim())
      .filter((l) => l !== "");
    return { gpus: listed, probe: "nvidia-smi" };
  }
  const devices = existsSync("/dev")
    ? readdirSync("/dev").filter((d) => /^nvidia\d+$/.test(d))
    : [];
  if (devices.length > 0)
    return { gpus: devices.map((d) => `/dev/${d}`), probe: "/dev/nvidia* (no nvidia-smi)" };
  return { gpus: [], probe: "no nvidia-smi, no /dev/nvidia*" };
}

export function detectMachine(): Machine {
  const found = gpus();
  return {
    cpu: cpus()[0]?.model.trim() || "unknown CPU",
    cores: availableParallelism(),
    ramGb: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    gpus: found.gpus,
    gpuProbe: found.probe,
    node: process.version,
    platform: process.platform,
    clockTicksPerSecond: clockTicksPerSecond(),
  };
}

export function describeMachine(m: Machine): string {
  const gpu = m.gpus.length > 0 ? `GPU: ${m.gpus.join(", ")}` : `no GPU (${m.gpuProbe})`;
  return `${m.cores} cores of ${m.cpu}, ${m.ramGb} GB RAM, ${gpu}, Node ${m.node}, ${m.platform}`;
}
