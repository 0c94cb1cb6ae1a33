// Which token a client on this machine sends: for a local URL, the token of the stack serving
// that URL's port (its note in the stacks directory), so a second stack on another state
// directory gets its own token, not the default state's.
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { freePort } from "../../src/cli/ports";
import { claimStateDir, stacksDir } from "../../src/cli/state-lock";
import {
  discoverToken,
  LOCAL_TOKENS_FILE,
  type LocalStackNote,
  localStackServing,
} from "../../src/client/local-token";

let dir: string;
let stacks: string;
let first: string;
let second: string;

function stateWith(name: string, admin: string): string {
  const state = join(dir, name);
  mkdirSync(state, { recursive: true });
  writeFileSync(join(state, LOCAL_TOKENS_FILE), JSON.stringify({ admin }));
  return state;
}

function note(port: number, stateDir: string, pid = process.pid): void {
  const noted: LocalStackNote = {
    pid,
    api_url: `http://127.0.0.1:${port}`,
    state_dir: stateDir,
    started_at: new Date().toISOString(),
  };
  writeFileSync(join(stacks, `${port}.json`), JSON.stringify(noted));
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "edgeroll-local-token-"));
  stacks = join(dir, "stacks");
  mkdirSync(stacks);
  first = stateWith("state", "first-admin");
  second = stateWith("state-2", "second-admin");
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const find = (url: string, env: Record<string, string | undefined> = {}) =>
  discoverToken(url, { stateDirs: [first], stacksDir: stacks, env })?.token ?? null;

describe("discoverToken", () => {
  it("sends the token of the stack serving the URL's port", () => {
    note(8788, second);
    expect(find("http://127.0.0.1:8788")).toBe("second-admin");
    expect(find("http://localhost:8788/v1")).toBe("second-admin");
    // No stack noted on 8787: the default state directory's.
    expect(find("http://127.0.0.1:8787")).toBe("first-admin");
  });

  it("ignores the note of a stack whose process is gone", () => {
    note(8788, second, 2 ** 22 + 4321);
    expect(localStackServing("http://127.0.0.1:8788", stacks)).toBeNull();
    expect(find("http://127.0.0.1:8788")).toBe("first-admin");
  });

  it("prefers EDGEROLL_TOKEN, and never sends a local token to a deployment", () => {
    note(443, second);
    expect(find("http://127.0.0.1:8788", { EDGEROLL_TOKEN: "set" })).toBe("set");
    expect(find("https://edgeroll.example.com")).toBeNull();
  });
});

describe("a stack's claim of its state directory", () => {
  it("notes its port and state directory while it runs, and removes the note when released", async () => {
    const port = await freePort();
    const release = claimStateDir(second, `http://127.0.0.1:${port}`);
    const file = join(stacksDir(), `${port}.json`);
    try {
      expect(localStackServing(`http://127.0.0.1:${port}`, stacksDir())).toMatchObject({
        pid: process.pid,
        state_dir: second,
      });
    } finally {
      release();
    }
    expect(existsSync(file)).toBe(false);
  });
});
