/**
 * A fleet of simulated hosts on consecutive ports: what `edgeroll sim --hosts N` serves, and what
 * the fleet's tests, benchmark and reliability run drive. Each host is a whole simulator with its
 * own prefix cache; the fleet can kill, revive and slow any one of them.
 */
import { type Simulator, type SimulatorOptions, startSimulator } from "./server";

export interface SimFleet {
  hosts: Simulator[];
  /** The hosts' base URLs, comma-separated: an `INFERENCE_BASE_URL` for the whole fleet. */
  baseUrl: string;
  close(): Promise<void>;
}

/** N simulators from `options.port` up (or on free ports when it is 0 or absent). */
export async function startSimFleet(
  count: number,
  options: SimulatorOptions = {},
): Promise<SimFleet> {
  const hosts: Simulator[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const port = options.port ? options.port + i : 0;
      hosts.push(await startSimulator({ ...options, port }));
    }
  } catch (error) {
    await Promise.all(hosts.map((h) => h.close()));
    throw error;
  }
  return {
    hosts,
    baseUrl: hosts.map((h) => h.url).join(","),
    close: async () => {
      await Promise.all(hosts.map((h) => h.close()));
    },
  };
}
