/**
 * A simulated inference host in a process of its own (`edgeroll sim`), so that a run can
 * SIGKILL it as a GPU host dies: its connections reset at once, its port refuses, nothing in it
 * answers again until a new process starts on the same port.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { resolve } from "node:path";
import { freePort } from "../src/cli/ports";

const CLI = resolve(import.meta.dirname, "../bin/edgeroll.mjs");

export interface SimProcess {
  url: string;
  port: number;
  /** SIGKILL: the host dies mid-request. */
  kill(): Promise<void>;
  /** A new process on the same port and flags (an empty cache, its counts from zero). */
  restart(): Promise<void>;
  /** Requests it answered since its process started (`GET /sim/stats`). */
  requests(): Promise<number>;
  stop(): Promise<void>;
}

function started(child: ChildProcess): Promise<void> {
  return new Promise((done, fail) => {
    let out = "";
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      fail(new Error(`sim did not start: ${out}`));
    }, 30_000);
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes("listening on")) {
        clearTimeout(timer);
        done();
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      fail(new Error(`sim exited with ${code}: ${out}`));
    });
  });
}

const exited = (child: ChildProcess) =>
  child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve()
    : new Promise<void>((done) => child.once("exit", () => done()));

/** `edgeroll sim --port <port> <flags>` in a child process, ready when it listens. */
export async function startSimProcess(flags: readonly string[]): Promise<SimProcess> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/v1`;
  const launch = async () => {
    const child = spawn(process.execPath, [CLI, "sim", "--port", String(port), ...flags], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    await started(child);
    return child;
  };
  let child = await launch();
  return {
    url,
    port,
    kill: async () => {
      child.kill("SIGKILL");
      await exited(child);
    },
    restart: async () => {
      await exited(child);
      child = await launch();
    },
    requests: async () => {
      const stats = (await (await fetch(`http://127.0.0.1:${port}/sim/stats`)).json()) as {
        requests: number;
      };
      return stats.requests;
    },
    stop: async () => {
      child.kill("SIGTERM");
      await exited(child);
    },
  };
}
