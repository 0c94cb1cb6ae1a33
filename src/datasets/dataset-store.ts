/**
 * Datasets in the DATASETS bucket: each file under a key of its own upload
 * (`files/<name>/<uuid>.jsonl`), and a small manifest per name (`datasets/<name>`) whose custom
 * metadata says which file it is, with its digest, examples and size. A file's digest is known
 * only once all of it has streamed past, after its upload had to begin, so it cannot ride on
 * the file's own metadata; the manifest, written last and conditionally, is the commit: a name
 * shows a file only once it is whole and checked, and two pushes to one name cannot both win.
 */
import { z } from "zod";
import { DATASET_CONTENT_TYPE, type DatasetView } from "./dataset-wire";

const MANIFESTS = "datasets/";

/** R2 custom metadata is strings; these are the manifest's. */
const ManifestSchema = z.object({
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  examples: z.coerce.number().int().nonnegative(),
  bytes: z.coerce.number().int().nonnegative(),
  file: z.string().startsWith("files/"),
});
export type Manifest = z.infer<typeof ManifestSchema>;

/** A name's current manifest: what the API shows, the file it names, and its etag to swap it. */
export interface StoredDataset {
  view: DatasetView;
  file: string;
  etag: string;
}

/** Where a new upload of `name` goes: a key no other upload has. */
export function newFileKey(name: string): string {
  return `files/${name}/${crypto.randomUUID()}.jsonl`;
}

function stored(name: string, manifest: R2Object): StoredDataset {
  const { sha256, examples, bytes, file } = ManifestSchema.parse(manifest.customMetadata);
  return {
    view: { name, bytes, examples, sha256, uploaded_at: manifest.uploaded.toISOString() },
    file,
    etag: manifest.etag,
  };
}

export async function findDataset(bucket: R2Bucket, name: string): Promise<StoredDataset | null> {
  const manifest = await bucket.head(`${MANIFESTS}${name}`);
  return manifest === null ? null : stored(name, manifest);
}

/** Every dataset, by name. */
export async function listDatasets(bucket: R2Bucket): Promise<DatasetView[]> {
  const views: DatasetView[] = [];
  let cursor: string | undefined;
  do {
    const page = await bucket.list({ prefix: MANIFESTS, include: ["customMetadata"], cursor });
    for (const object of page.objects)
      views.push(stored(object.key.slice(MANIFESTS.length), object).view);
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor !== undefined);
  return views;
}

/**
 * Points `name` at a stored file, if the name still shows what the caller read before it
 * uploaded (`previous`, null: no dataset of that name); null when another push got there first.
 */
export async function commitDataset(
  bucket: R2Bucket,
  name: string,
  manifest: Manifest,
  previous: StoredDataset | null,
): Promise<StoredDataset | null> {
  const written = await bucket.put(`${MANIFESTS}${name}`, JSON.stringify({ name, ...manifest }), {
    onlyIf:
      previous === null ? new Headers({ "if-none-match": "*" }) : { etagMatches: previous.etag },
    httpMetadata: { contentType: "application/json" },
    customMetadata: {
      sha256: manifest.sha256,
      examples: String(manifest.examples),
      bytes: String(manifest.bytes),
      file: manifest.file,
    },
  });
  return written === null ? null : stored(name, written);
}

/** The dataset's file as it was pushed, with its view; null when there is no such dataset. */
export async function readDataset(
  bucket: R2Bucket,
  name: string,
): Promise<{ view: DatasetView; body: ReadableStream } | null> {
  // A push that replaces the file deletes the old one once the manifest names the new: a read
  // that fell between the two reads the manifest again.
  for (let attempt = 0; attempt < 2; attempt++) {
    const dataset = await findDataset(bucket, name);
    if (dataset === null) return null;
    const file = await bucket.get(dataset.file);
    if (file !== null) return { view: dataset.view, body: file.body };
  }
  throw new Error(`dataset "${name}": its manifest names a file that is not in the bucket`);
}

/** What the file's own object carries: enough to tell, in the bucket, whose it is. */
export function fileOptions(name: string): R2MultipartOptions {
  return { httpMetadata: { contentType: DATASET_CONTENT_TYPE }, customMetadata: { name } };
}
