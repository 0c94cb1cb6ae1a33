/** The published JSON Schemas of the remote environment protocol are what edgeroll validates. */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { remoteEnvSchemas, SCHEMA_DIR } from "../../scripts/remote-env-schema";

describe("docs/remote-env-schema", () => {
  it("holds exactly the schemas derived from src/environments/remote/protocol.ts (npm run schema:remote-env)", () => {
    const derived = remoteEnvSchemas();
    expect(readdirSync(SCHEMA_DIR).sort()).toEqual(Object.keys(derived).sort());
    for (const [file, text] of Object.entries(derived))
      expect(readFileSync(join(SCHEMA_DIR, file), "utf8"), file).toBe(text);
  });
});
