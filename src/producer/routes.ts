/**
 * `POST`, `GET` and `DELETE /v1/runs/:run_id/producer`: a run that produces itself from a
 * dataset in DATASETS. Before the producer exists, the POST makes every check POST /v1/groups
 * makes, on the dataset's first example: the group fields (a 400 naming the field), the
 * environment's name and version (a 409 when it declares another than the pin), the example
 * and its tools, a teacher's tokenizer. An unknown dataset is a 404. Another example the
 * environment refuses is counted in the view's `rejections` at its start.
 */
import { Hono } from "hono";
import type { AuthVariables } from "../api/auth";
import { ApiError, invalidRequest } from "../api/errors";
import { checkGroupStart } from "../api/groups";
import { validated } from "../api/validated";
import { readDataset } from "../datasets/dataset-store";
import { RUN_ID_PATTERN, RUN_ID_RULE, StartGroupRequestSchema } from "../rollout/group-spec";
import { parseDatasetJsonl } from "../sdk";
import { runProducer } from "./bindings";
import { groupTemplate, ProducerRequestSchema } from "./producer-request";

function runIdOf(id: string): string {
  if (!RUN_ID_PATTERN.test(id))
    throw new ApiError(400, "invalid_request", `run_id: ${RUN_ID_RULE}`);
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

export const producerRoutes = new Hono<{ Bindings: Env; Variables: AuthVariables }>()
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
    // The version the run's groups will pin: the one asked for, which must be the declared one.
    const checked = await checkGroupStart(c.env, asGroup.data, "producer");
    const envVersion = checked.request.env_version;
    const outcome = await runProducer(c.env, runId).start({
      runId,
      request,
      envVersion,
      examples: dataset.examples,
      datasetSha256: dataset.sha256,
      principal: c.get("principal"),
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
