// The README promises that any Node >= 20 installs edgeroll, and names the engine warnings npm
// prints there. This keeps both true as dependencies move.
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");
const lock = JSON.parse(readFileSync(resolve(ROOT, "package-lock.json"), "utf8")) as {
  packages: Record<string, { version?: string; dev?: boolean; engines?: { node?: string } }>;
};

/** Whether an `engines.node` range admits Node 20 (the ranges in this tree are `>=N[.m]`). */
function allowsNode20(range: string): boolean {
  return range.split("||").some((part) => {
    const floor = /^\s*>=\s*(\d+)/.exec(part)?.[1] ?? /^\s*\^?(\d+)/.exec(part)?.[1];
    return floor !== undefined && Number(floor) <= 20;
  });
}

const excluding20 = Object.entries(lock.packages)
  .filter(([path, p]) => path !== "" && p.engines?.node && !allowsNode20(p.engines.node))
  .map(([path, p]) => ({ name: path.replace(/^.*node_modules\//, ""), ...p }));

describe("engines", () => {
  it("every runtime dependency runs on Node 20", () => {
    expect(excluding20.filter((p) => !p.dev).map((p) => p.name)).toEqual([]);
  });

  it("the Node 20 engine warnings are exactly the ones the README names", () => {
    const readme = readFileSync(resolve(ROOT, "README.md"), "utf8");
    const named =
      /prints (\w+) `EBADENGINE` warnings, all for Cloudflare's tooling \(([^)]+)\)/.exec(readme);
    expect(named, "README: the EBADENGINE sentence").not.toBeNull();
    const warned = excluding20.map((p) => `${p.name}@${p.version}`).sort();
    expect(
      (named?.[2] ?? "")
        .split(",")
        .map((s) => s.trim().replace(/`/g, ""))
        .sort(),
    ).toEqual(warned);
    const words = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight"];
    expect(named?.[1]).toBe(words[warned.length]);
  });
});
