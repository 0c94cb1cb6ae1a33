/**
 * Where `wrangler dev --persist-to` keeps what the bench measures in bytes: a group object's
 * SQLite file, local D1's, and local R2's objects (miniflare's layout under `v3/`).
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { openReadOnly } from "./sqlite-bytes";

const sqliteFiles = (dir: string) =>
  readdirSync(dir)
    .filter((f) => f.endsWith(".sqlite") && f !== "metadata.sqlite")
    .map((f) => join(dir, f));

/** The group object file written last: the one group running when there is only one. */
export function newestGroupObjectFile(persistTo: string): string {
  const root = join(persistTo, "v3", "do");
  const dir = readdirSync(root).find((d) => d.endsWith("-RolloutGroup"));
  if (dir === undefined) throw new Error(`no RolloutGroup objects under ${root}`);
  const files = sqliteFiles(join(root, dir)).sort(
    (a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs,
  );
  if (files[0] === undefined) throw new Error("no group object has a SQLite file");
  return files[0];
}

/** Local D1's database file (the stack has one database). */
export function d1File(persistTo: string): string {
  const [file] = sqliteFiles(join(persistTo, "v3", "d1", "miniflare-D1DatabaseObject"));
  if (file === undefined) throw new Error("no local D1 database");
  return file;
}

/** An object's bytes as local R2 stores them, found by its key in the bucket's index. */
export function r2ObjectBytes(persistTo: string, bucket: string, key: string): Uint8Array {
  const r2 = join(persistTo, "v3", "r2");
  for (const file of sqliteFiles(join(r2, "miniflare-R2BucketObject"))) {
    const db = openReadOnly(file);
    try {
      const row = db.prepare("SELECT blob_id, size FROM _mf_objects WHERE key = ?").get(key) as
        | { blob_id: string; size: number }
        | undefined;
      if (row === undefined) continue;
      const bytes = new Uint8Array(readFileSync(join(r2, bucket, "blobs", row.blob_id)));
      if (bytes.length !== row.size) throw new Error(`R2 object ${key}: blob size mismatch`);
      return bytes;
    } finally {
      db.close();
    }
  }
  throw new Error(`no R2 object ${key} in ${bucket}`);
}
