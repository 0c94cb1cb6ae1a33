// The README's project-layout map is true: it names every folder under src/ and no folder that
// is not there, and the files its answers name ("where does a turn happen?") exist.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");
const README = readFileSync(join(ROOT, "README.md"), "utf8");
const MARKER = "<!-- test/structure/layout-map.test.ts";

/**
 * Folders the map names before they exist, each skipped while absent and checked like any other
 * once it exists. None now: issue 26's policy module has landed.
 */
const PLANNED: string[] = [];

/** An entry line: its name two spaces a level deep; descriptions and their wraps sit further right. */
const ENTRY = /^((?: {2}){0,5})([\w.-]+(?:\/[\w.-]+)*\/?)(?: {2,}\S.*)?$/;

/** Every path the map's block names, folders with a trailing slash, nested entries in full. */
function mappedPaths(): string[] {
  const after = README.slice(README.indexOf(MARKER));
  const block = /```\n([\s\S]*?)```/.exec(after)?.[1] ?? "";
  const parents: string[] = [];
  const paths: string[] = [];
  for (const line of block.split("\n")) {
    const entry = ENTRY.exec(line);
    if (!entry) continue;
    const depth = (entry[1] ?? "").length / 2;
    const name = entry[2] ?? "";
    parents.length = depth;
    const path = parents.join("") + name;
    paths.push(path);
    if (name.endsWith("/")) parents.push(name);
  }
  return paths;
}

function foldersUnder(dir: string): string[] {
  return readdirSync(join(ROOT, dir))
    .filter((name) => statSync(join(ROOT, dir, name)).isDirectory())
    .flatMap((name) => {
      const path = `${dir}/${name}`;
      return [path, ...foldersUnder(path)];
    });
}

const mapped = mappedPaths();
const mappedFolders = mapped.filter((p) => p.endsWith("/")).map((p) => p.slice(0, -1));
const planned = (path: string) => PLANNED.some((p) => path === p || path.startsWith(`${p}/`));
const present = (path: string) => existsSync(join(ROOT, path)) || planned(path);

/** The README's "Where things happen, by file" row for a question. */
function answer(question: string): string {
  return README.split("\n").find((line) => line.startsWith(`| ${question} `)) ?? "";
}

describe("the README's project layout", () => {
  it("is found, and reads as a map of src/", () => {
    expect(mapped).toContain("src/");
    expect(mappedFolders).toContain("src/environments/remote");
  });

  it("names every folder under src/", () => {
    const missing = foldersUnder("src").filter((folder) => !mappedFolders.includes(folder));
    expect(missing, "add each to the map in README.md, with a one-line role").toEqual([]);
  });

  it("names no folder or file that does not exist (but the planned ones)", () => {
    const stale = mapped.filter((path) => !present(path));
    expect(stale).toEqual([]);
  });

  it("answers where a turn happens, where rewards are computed and where data lands", () => {
    expect(answer("where does a turn happen?")).toContain("`src/rollout/turn.ts`");
    expect(answer("where are rewards computed?")).toContain("`src/rollout/rewards.ts`");
    expect(answer("where does data land?")).toContain("`src/rollout/landing.ts`");
  });

  it("names, anywhere in the README, only src/ files and folders that exist (but the planned ones)", () => {
    const named = [...README.matchAll(/`(src\/[\w./-]+?)\/?`/g)].map((m) => m[1] ?? "");
    expect(named.length).toBeGreaterThan(10);
    expect(named.filter((path) => !present(path))).toEqual([]);
  });
});
