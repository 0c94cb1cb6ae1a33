/**
 * `npm run schema:remote-env`: writes one JSON Schema (draft 2020-12) per message of the remote
 * environment protocol into docs/remote-env-schema/, derived from the zod schemas edgeroll itself
 * validates with (src/environments/remote/protocol.ts), so the published schemas cannot drift
 * from what edgeroll accepts. A test checks the committed files against a fresh derivation.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { z } from "zod";
import { PROTOCOL_MESSAGES } from "../src/environments/remote/protocol";

export const SCHEMA_DIR = resolve(import.meta.dirname, "../docs/remote-env-schema");

/** Each message's schema file name and text. */
export function remoteEnvSchemas(): Record<string, string> {
  return Object.fromEntries(
    Object.entries(PROTOCOL_MESSAGES).map(([name, schema]) => {
      const json = z.toJSONSchema(schema, { target: "draft-2020-12", io: "input" });
      const titled = { $id: `edgeroll/remote-env/${name}.json`, title: name, ...json };
      return [`${name}.json`, `${JSON.stringify(titled, null, 2)}\n`];
    }),
  );
}

if (import.meta.filename === process.argv[1]) {
  mkdirSync(SCHEMA_DIR, { recursive: true });
  for (const [file, text] of Object.entries(remoteEnvSchemas()))
    writeFileSync(join(SCHEMA_DIR, file), text);
  console.log(`wrote ${Object.keys(remoteEnvSchemas()).length} schemas to docs/remote-env-schema/`);
}
