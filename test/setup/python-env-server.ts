// A Python environment served by `python3 -m edgeroll_env serve` (Node), for the end-to-end
// test and the bench: started on a free port, ready once it prints where it listens.
import { type ChildProcess, spawn } from "node:child_process";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dirname, "../..");

export function servePythonEnvironment(
  file: string,
  name: string,
  options: { token?: string; detached?: boolean } = {},
): Promise<{ url: string; child: ChildProcess }> {
  const args = ["-m", "edgeroll_env", "serve", file, "--port", "0", "--name", name];
  const child = spawn("python3", options.token ? args.concat(["--token", options.token]) : args, {
    cwd: ROOT,
    env: { ...process.env, PYTHONPATH: join(ROOT, "python") },
    detached: options.detached ?? false,
  });
  return new Promise((done, fail) => {
    let out = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const url = /serving \S+ on (http:\/\/\S+)/.exec(out)?.[1];
      if (url) done({ url, child });
    });
    child.stderr?.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.on("exit", (code) =>
      fail(new Error(`the Python server ${name} exited (${code}):\n${out}`)),
    );
  });
}
