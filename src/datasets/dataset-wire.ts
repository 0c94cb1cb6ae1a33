/**
 * A dataset as it crosses the wire: its name's rule, the limits an upload is held to, and what
 * the API answers about one. The HTTP client imports its types from here.
 */
import { z } from "zod";

/** What an upload's body must say it is: JSON lines, one task example a line. */
export const DATASET_CONTENT_TYPE = "application/x-ndjson";

/**
 * 100 MB: Cloudflare's request body limit on the Free and Pro plans, so a push that works
 * locally works deployed on any plan (Business and Enterprise allow more; nothing past this is
 * read). A larger dataset is better split: it is read again, whole, by whoever samples it.
 */
export const MAX_DATASET_BYTES = 100_000_000;

/**
 * The duplicate-id check holds every id of the file in memory, and a Worker has 128 MB: a
 * million short ids take some tens of MB.
 */
export const MAX_DATASET_EXAMPLES = 1_000_000;

/** One example must fit in the body of `POST /v1/groups` (1 MiB), or no group could carry it. */
export const MAX_LINE_BYTES = 1024 * 1024;

/** A refusal names at most this many bad lines: enough to fix, short enough to read. */
export const MAX_LISTED_PROBLEMS = 10;

/** Safe in a URL path and an R2 key: a letter or digit, then letters, digits, `.`, `_` or `-`. */
export const DATASET_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export const DatasetNameSchema = z
  .string()
  .regex(
    DATASET_NAME_PATTERN,
    "a dataset name is 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit",
  );

export const DatasetViewSchema = z.object({
  name: z.string(),
  /** The file's size, exactly as it was sent. */
  bytes: z.number().int(),
  /** Its non-blank lines: one example each. */
  examples: z.number().int(),
  /** Lowercase hex SHA-256 of the file's bytes: what `sha256sum` prints for the local copy. */
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  uploaded_at: z.string(),
});
export type DatasetView = z.infer<typeof DatasetViewSchema>;

/**
 * What a push did: stored a new name, replaced another file under its name (`?replace=true`),
 * or found these very bytes already stored under it and stored nothing.
 */
export type PushResult = "created" | "replaced" | "unchanged";

export type PushedDataset = DatasetView & { result: PushResult };

export interface DatasetList {
  datasets: DatasetView[];
}
