/**
 * A push of a dataset under a name: the file streamed into its own R2 upload while it is checked
 * (body-reader.ts), then named by the manifest only if all of it was sound. The same bytes
 * pushed again store nothing and succeed; other bytes under a taken name are refused unless the
 * push says to replace them, so a run's examples never change under it by accident.
 */
import type { LineProblem } from "../sdk";
import { readDatasetBody } from "./body-reader";
import {
  commitDataset,
  fileOptions,
  findDataset,
  newFileKey,
  type StoredDataset,
} from "./dataset-store";
import type { DatasetView, PushedDataset } from "./dataset-wire";
import { PartWriter } from "./part-writer";

export type PushOutcome =
  | { kind: "stored"; dataset: PushedDataset }
  | { kind: "invalid"; problems: LineProblem[] }
  | { kind: "empty" }
  | { kind: "too_large"; message: string }
  /** The name holds other bytes: `existing`; `raced` when another push took it meanwhile. */
  | { kind: "conflict"; existing: DatasetView; sha256: string; raced: boolean };

export async function pushDataset(
  bucket: R2Bucket,
  name: string,
  body: ReadableStream<Uint8Array>,
  options: { replace: boolean },
): Promise<PushOutcome> {
  const previous = await findDataset(bucket, name);
  // A taken name that may not be replaced stores nothing: its body is read only to compare.
  const upload = previous !== null && !options.replace ? null : await openUpload(bucket, name);
  const read = await readDatasetBody(body, upload && ((chunk) => upload.writer.write(chunk))).catch(
    async (error: unknown) => {
      await upload?.writer.abort();
      throw error;
    },
  );
  if (read.kind !== "whole") {
    await upload?.writer.abort();
    return read;
  }
  if (previous !== null && previous.view.sha256 === read.sha256) {
    await upload?.writer.abort();
    return { kind: "stored", dataset: { ...previous.view, result: "unchanged" } };
  }
  // No upload was opened only because the name is taken.
  if (upload === null) return conflict(previous as StoredDataset, read.sha256, false);
  const { bytes, examples, sha256 } = read;
  await upload.writer.complete();
  const manifest = { sha256, examples, bytes, file: upload.file };
  const committed = await commitDataset(bucket, name, manifest, previous);
  if (committed === null) {
    await bucket.delete(manifest.file);
    const now = await findDataset(bucket, name);
    if (now === null) throw new Error(`dataset "${name}" changed while pushed, then vanished`);
    return now.view.sha256 === sha256
      ? { kind: "stored", dataset: { ...now.view, result: "unchanged" } }
      : conflict(now, sha256, true);
  }
  // The manifest names the new file now: the old one is no one's.
  if (previous !== null) await bucket.delete(previous.file);
  return {
    kind: "stored",
    dataset: { ...committed.view, result: previous === null ? "created" : "replaced" },
  };
}

async function openUpload(bucket: R2Bucket, name: string) {
  const file = newFileKey(name);
  return { file, writer: await PartWriter.open(bucket, file, fileOptions(name)) };
}

function conflict(existing: StoredDataset, sha256: string, raced: boolean): PushOutcome {
  return { kind: "conflict", existing: existing.view, sha256, raced };
}
