/**
 * `POST`, `GET` and `DELETE /v1/runs/:run_id/producer`: a run that produces itself from a
 * dataset in DATASETS. The POST checks everything a group start would, against the dataset's
 * first example, before the producer exists: a bad field is a 400 naming it, an unknown dataset
 * a 404, an environment at another version than the one pinned a 409.
 */
import { Hono } from "hono";
import { ApiError, invalidRequest } from "../api/errors";
import { checkEnvironmentName } from "../api/example-check";
import { validated } from "../api/validated";
import { readDataset } from "../datasets/dataset-store";
import { environmentsOf } from "../env-workers/environments";
import { RemoteEnvError } from "../environments/remote/client";
import { environmentVersion } from "../environments/versions";
import { StartGroupRequestSchema } from "../rollout/group-spec";
import { parseDatasetJsonl } from "../sdk";
import { runProducer } from "./bindings";
import { groupTemplate, ProducerRequestSchema } from "./producer-request";

const RUN_ID = /^[A-Za-z0-9][\w.:-]{0,127}$/;

function runIdOf(id: string): string {
  if (!RUN_ID.test(id))
    throw new ApiError(
      400,
      "invalid_request",
      "run_id: letters, digits and . _ : - only, at most 128",
    );
  return id;
}

/** The dataset's examples, as pushed; a name with no push is a 404. */
async function readPushed(env: Env, name: string) {
  const dataset = await readDataset(env.DATASETS, name);
  if (dataset === null)
    throw new ApiError(
      404,
      "not_found",
      `dataset: no dataset "${name}" (push it with POST /v1/datasets/${name}, or edgeroll dataset push)`,
    );
  // Checked line by line as it was pushed: parsing it again finds the same examples.
  const parsed = parseDatasetJsonl(await new Response(dataset.body).text(), name);
  return { examples: parsed.examples, sha256: dataset.view.sha256 };
}

/** The version the run's groups will pin: the one asked for, which must be the declared one. */
async function pinnedEnvVersion(env: Env, name: string, asked: unknown): Promise<string> {
  const remote = environmentsOf(env);
  checkEnvironmentName(name, remote);
  const declared = await environmentVersion(name, remote).catch((error: unknown) => {
    if (error instanceof RemoteEnvError)
      throw new ApiError(
        503,
        "environment_unavailable",
        `environment "${name}": /info: ${error.message}`,
      );
    throw error;
  });
  if (typeof asked === "string" && asked !== declared)
    throw new ApiError(
      409,
      "env_version_mismatch",
      `env_version: the producer pins "${asked}" but environment "${name}" is at version "${declared}"`,
    );
  return declared;
}

export const producerRoutes = new Hono<{ Bindings: Env }>()
  .post("/runs/:id/producer", validated("json", ProducerRequestSchema), async (c) => {
    const runId = runIdOf(c.req.param("id"));
    const request = c.req.valid("json");
    const dataset = await readPushed(c.env, request.dataset);
    // Every group field is checked as POST /v1/groups checks it, on the first example.
    const asGroup = StartGroupRequestSchema.safeParse({
      ...groupTemplate(request),
      example: dataset.examples[0],
      run_id: runId,
    });
    if (!asGroup.success) throw invalidRequest(asGroup.error);
    const envVersion = await pinnedEnvVersion(c.env, request.env, request.env_version);
    const outcome = await runProducer(c.env, runId).start({
      runId,
      request,
      envVersion,
      examples: dataset.examples,
      datasetSha256: dataset.sha256,
    });
    if (outcome === "conflict")
      throw new ApiError(
        409,
        "producer_running",
        `run "${runId}" has a producer running with another request: DELETE /v1/runs/${runId}/producer first`,
      );
    const view = await runProducer(c.env, runId).status();
    return c.json(view, outcome === "started" ? 202 : 200);
  })
  .get("/runs/:id/producer", async (c) => {
    const runId = runIdOf(c.req.param("id"));
    const view = await runProducer(c.env, runId).status();
    if (view === null) throw new ApiError(404, "not_found", `run "${runId}" has no producer`);
    return c.json(view);
  })
  .delete("/runs/:id/producer", async (c) => {
    const runId = runIdOf(c.req.param("id"));
    const view = await runProducer(c.env, runId).stop("stopped by DELETE");
    if (view === null) throw new ApiError(404, "not_found", `run "${runId}" has no producer`);
    return c.json(view);
  });
