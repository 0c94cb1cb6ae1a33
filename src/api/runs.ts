/** A run's progress at a glance, and its policy: what the trainer says it is training now. */
import { zValidator } from "@hono/zod-validator";
import { Hono } from "hono";
import { z } from "zod";
import { runProgress } from "../db/queries";
import { type RunPolicy, readRunPolicy, setRunPolicy } from "../db/run-policies";
import { runProgressView } from "../views/responses";
import type { AuthVariables } from "./auth";
import { ApiError, invalidRequest } from "./errors";

const PolicyRequestSchema = z.strictObject({
  version: z
    .number()
    .int()
    .min(0)
    .max(2 ** 31 - 1),
  /** How many versions behind a group's policy may be when it starts; null lifts the limit. */
  max_lag: z.number().int().min(0).nullable().optional(),
  paused: z.boolean().optional(),
});

function policyView(policy: RunPolicy) {
  return {
    run_id: policy.runId,
    version: policy.version,
    max_lag: policy.maxLag,
    paused: policy.paused,
    updated_at: policy.updatedAt,
  };
}

export const runRoutes = new Hono<{ Bindings: Env; Variables: AuthVariables }>()
  .get("/runs/:id", async (c) => {
    const id = c.req.param("id");
    return c.json(runProgressView(id, await runProgress(c.env.DB, id)));
  })
  .get("/runs/:id/policy", async (c) => {
    const id = c.req.param("id");
    const policy = await readRunPolicy(c.env.DB, id);
    if (policy === null)
      throw new ApiError(
        404,
        "not_found",
        `run "${id}" has no policy: its trainer has not set one (POST /v1/runs/${id}/policy)`,
      );
    return c.json(policyView(policy));
  })
  .post(
    "/runs/:id/policy",
    zValidator("json", PolicyRequestSchema, (result) => {
      if (!result.success) throw invalidRequest(result.error);
    }),
    async (c) => {
      const id = c.req.param("id");
      const body = c.req.valid("json");
      const set = await setRunPolicy(
        c.env.DB,
        id,
        { version: body.version, maxLag: body.max_lag, paused: body.paused },
        c.get("principal"),
      );
      if (!set.ok)
        throw new ApiError(
          409,
          "policy_version_regressed",
          `version: run "${id}" is at policy version ${set.current.version}; a run's version only moves forward (start a new run to train from an older checkpoint)`,
        );
      return c.json(policyView(set.policy));
    },
  );
