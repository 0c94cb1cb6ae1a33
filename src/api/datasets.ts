/**
 * Datasets in R2 (src/datasets/): a trainer pushes a JSONL file under a name, as the body itself,
 * streamed and checked line by line; everyone lists them and reads them back. A refused push
 * stores nothing.
 */
import { Hono } from "hono";
import { z } from "zod";
import { listDatasets, readDataset } from "../datasets/dataset-store";
import {
  DATASET_CONTENT_TYPE,
  type DatasetList,
  DatasetNameSchema,
  MAX_DATASET_BYTES,
  MAX_LISTED_PROBLEMS,
} from "../datasets/dataset-wire";
import { type PushOutcome, pushDataset } from "../datasets/push-dataset";
import { describeLineProblem } from "../sdk";
import type { AuthVariables } from "./auth";
import { ApiError } from "./errors";
import { validated } from "./validated";

const NameParamSchema = z.object({ name: DatasetNameSchema });
const PushQuerySchema = z.object({ replace: z.enum(["true", "false"]).optional() });
const JSON_LINES_TYPE = /^application\/x-ndjson\s*(;|$)/i;

/** The body is the file: said so by its content-type, which is the one way to tell. */
function requireJsonLines(type: string | undefined): void {
  if (type !== undefined && JSON_LINES_TYPE.test(type)) return;
  const sent = type === undefined ? "no content-type" : `content-type "${type}"`;
  // curl -d reads a file as form data and drops its newlines: one line, refused as such.
  const curl = type?.startsWith("application/x-www-form-urlencoded")
    ? " (what curl -d sends; curl --data-binary @file.jsonl keeps the newlines)"
    : "";
  throw new ApiError(
    415,
    "unsupported_media_type",
    `a dataset is pushed as the JSONL file itself, with content-type: ${DATASET_CONTENT_TYPE}; this body came with ${sent}${curl}`,
  );
}

/** The API's answer to a refused push; a stored one is answered by the route. */
function refusal(name: string, outcome: Exclude<PushOutcome, { kind: "stored" }>): ApiError {
  switch (outcome.kind) {
    case "invalid": {
      const first =
        outcome.problems.length === MAX_LISTED_PROBLEMS
          ? `the first ${MAX_LISTED_PROBLEMS} bad lines`
          : "bad lines";
      return new ApiError(
        400,
        "invalid_dataset",
        `dataset "${name}" has ${first}, so nothing was stored: ${outcome.problems.map((p) => describeLineProblem(name, p)).join("; ")}`,
        outcome.problems,
      );
    }
    case "empty":
      return new ApiError(
        400,
        "invalid_dataset",
        `dataset "${name}" has no examples (every line is blank), so nothing was stored`,
      );
    case "too_large":
      return new ApiError(413, "payload_too_large", `dataset "${name}": ${outcome.message}`);
    case "conflict": {
      const held = `sha256 ${outcome.existing.sha256}, ${outcome.existing.examples} examples, pushed at ${outcome.existing.uploaded_at}`;
      const why = outcome.raced
        ? `another push to "${name}" landed while this one streamed; it holds other bytes (${held})`
        : `"${name}" already holds other bytes (${held}); to replace them, push again with ?replace=true (edgeroll dataset push --replace), or push under another name`;
      return new ApiError(
        409,
        "dataset_conflict",
        `dataset ${why}. This file's sha256 is ${outcome.sha256}; nothing of it was stored`,
        { existing: outcome.existing, sha256: outcome.sha256 },
      );
    }
  }
}

export const datasetRoutes = new Hono<{ Bindings: Env; Variables: AuthVariables }>()
  .get("/datasets", async (c) => {
    const list: DatasetList = { datasets: await listDatasets(c.env.DATASETS) };
    return c.json(list);
  })
  .get("/datasets/:name", validated("param", NameParamSchema), async (c) => {
    const { name } = c.req.valid("param");
    const dataset = await readDataset(c.env.DATASETS, name);
    if (dataset === null) throw new ApiError(404, "not_found", `no dataset "${name}"`);
    return new Response(dataset.body, {
      headers: {
        "content-type": DATASET_CONTENT_TYPE,
        "content-length": String(dataset.view.bytes),
        etag: `"${dataset.view.sha256}"`,
        "x-dataset-examples": String(dataset.view.examples),
      },
    });
  })
  .post(
    "/datasets/:name",
    validated("param", NameParamSchema),
    validated("query", PushQuerySchema),
    async (c) => {
      const { name } = c.req.valid("param");
      requireJsonLines(c.req.header("content-type"));
      const declared = Number(c.req.header("content-length") ?? 0);
      if (declared > MAX_DATASET_BYTES)
        throw new ApiError(
          413,
          "payload_too_large",
          `dataset "${name}": ${declared} bytes is over ${MAX_DATASET_BYTES}, the most one push may carry; split it`,
        );
      const body = c.req.raw.body ?? new ReadableStream({ start: (stream) => stream.close() });
      const outcome = await pushDataset(c.env.DATASETS, name, body, {
        replace: c.req.valid("query").replace === "true",
      });
      if (outcome.kind !== "stored") throw refusal(name, outcome);
      return c.json(outcome.dataset, outcome.dataset.result === "unchanged" ? 200 : 201);
    },
  );
