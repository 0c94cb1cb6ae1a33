// Rules of the codebase that a reader relies on, checked over the source itself. (The import
// rules, no cycles and layers only downward, are dependency-cruiser's: `npm run check`.)
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { EndReasonSchema } from "../../src/domain/episode-outcomes";
import { environmentNames } from "../../src/environments/registry";

const ROOT = resolve(import.meta.dirname, "../..");
const SCANNED = ["src", "test", "fixtures", "reliability", "bench"];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === "node_modules" ? [] : sourceFiles(path);
    return /\.tsx?$/.test(name) ? [relative(ROOT, path)] : [];
  });
}

const files = SCANNED.flatMap((dir) => sourceFiles(join(ROOT, dir)));
const text = new Map(files.map((f) => [f, readFileSync(join(ROOT, f), "utf8")]));

/** Where an end reason's string appears meaning something else, and what it means there. */
const OTHER_MEANINGS: Record<string, Record<string, string>> = {
  internal_error: {
    "src/views/error-body.ts": "the API's error code for a 500",
    "src/api/errors.ts": "the API's error code for a 500, rendered",
    "src/cli/build-gate.ts": "the API's error code, for a wrangler dev that did not answer",
  },
  done: {
    "src/cli/env-templates-python.ts": "the remote protocol's step field, in Python",
    "src/producer/producer-storage.ts": "a run producer's state: every epoch covered",
    "src/producer/run-producer.ts": "a run producer's state: every epoch covered",
    "test/worker/producer.test.ts": "a run producer's state: every epoch covered",
    "reliability/producer-crash.ts": "a run producer's state: every epoch covered",
    "bench/signal-share.ts": "a run producer's state: every epoch covered",
    "test/worker/run-costs.test.ts": "a run producer's state: every epoch covered",
    "reliability/budget-crash.ts": "a run producer's state: every epoch covered",
  },
  env_error: {
    "src/cli/env-serve.ts": "the remote protocol's error code for an environment that threw",
    "test/setup/remote-env-server.ts": "the remote protocol's error code, sent on purpose",
  },
};

describe("the house rules", () => {
  it("names every end reason in domain/episode-outcomes.ts alone; everything else uses END", () => {
    const strays: string[] = [];
    for (const reason of EndReasonSchema.options) {
      const literal = new RegExp(`["']${reason}["']`);
      for (const [file, source] of text) {
        if (file === "src/domain/episode-outcomes.ts" || OTHER_MEANINGS[reason]?.[file]) continue;
        if (literal.test(source)) strays.push(`${file}: "${reason}"`);
      }
    }
    expect(strays).toEqual([]);
  });

  // The producer's own stub is cast in src/producer/bindings.ts: rollout/bindings.ts is a layer
  // below it and cannot name its interface.
  it("casts another object's or service's stub only in rollout/bindings.ts (producer/bindings.ts for the producer)", () => {
    const binders = new Set(["src/rollout/bindings.ts", "src/producer/bindings.ts"]);
    const casts = [...text]
      .filter(([file]) => !file.startsWith("test/") && !file.endsWith(".test.ts"))
      .filter(([file, source]) => !binders.has(file) && /as unknown as/.test(source))
      .map(([file]) => file);
    expect(casts).toEqual([]);
  });

  it("creates a Durable Object's tables only in files named migrations.ts (its numbered steps, and the snapshot of where they lead)", () => {
    const creators = [...text]
      .filter(([file]) => file.startsWith("src/") && !file.endsWith("/migrations.ts"))
      .filter(([, source]) => /CREATE\s+(VIRTUAL\s+)?TABLE/i.test(source))
      .map(([file]) => file);
    expect(creators).toEqual([]);
  });

  it("reads JSON in tests as the types it has, never as `any`", () => {
    // Biome refuses `any`; this keeps a test from waving it through. A test reads an answer as
    // the client's exported view types, a wire format's, or `unknown` narrowed.
    const waived = [...text]
      .filter(([file]) => file.startsWith("test/"))
      .filter(([, source]) => /biome-ignore lint\/suspicious\/noExplicitAny/.test(source))
      .map(([file]) => file);
    expect(waived).toEqual([]);
  });

  it("registers no test-only environment in the deployed Worker", () => {
    // Only fixtures/register.ts adds them, where tests, reliability runs and benches run.
    expect(environmentNames()).not.toContain("chaos");
    expect(environmentNames()).not.toContain("marathon");
    expect(environmentNames()).toEqual(expect.arrayContaining(["guess-number", "tool-agent"]));
  });
});
