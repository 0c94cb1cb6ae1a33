/** Routes for rollout groups and their episodes. */
import { zValidator } from "@hono/zod-validator";
import { Hono } from "hono";
import {
  environmentNames,
  isRegisteredEnvironment,
  loadEnvironment,
} from "../environments/registry";
import { rolloutGroup } from "../rollout/bindings";
import { newGroupSpec } from "../rollout/group-ids";
import { type StartGroupRequest, StartGroupRequestSchema } from "../rollout/group-spec";
import { errorMessage, openEpisode, turnBudget } from "../sdk";
import { findGroupView } from "../views/group-view";
import { startedGroupView } from "../views/responses";
import { ApiError, invalidRequest } from "./errors";

const StartGroupBody = StartGroupRequestSchema.superRefine((request, ctx) => {
  if (!isRegisteredEnvironment(request.env)) {
    ctx.addIssue({
      code: "custom",
      path: ["env"],
      message: `unknown environment "${request.env}" (registered: ${environmentNames().join(", ")})`,
    });
  }
});

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/** The environment must accept the example before anything is stored. */
async function checkExample(request: StartGroupRequest): Promise<void> {
  const env = loadEnvironment(request.env);
  try {
    await openEpisode(env, request.example, request.prompt_text);
    turnBudget(env, request.example);
  } catch (error) {
    throw new ApiError(
      422,
      "example_rejected",
      `environment "${request.env}" rejected the example: ${errorMessage(error)}`,
    );
  }
}

export const groupRoutes = new Hono<{ Bindings: Env }>()
  .post(
    "/groups",
    zValidator("json", StartGroupBody, (result) => {
      if (!result.success) throw invalidRequest(result.error);
    }),
    async (c) => {
      const request = c.req.valid("json");
      const key = c.req.header("idempotency-key") ?? null;
      if (key !== null && !IDEMPOTENCY_KEY.test(key)) {
        throw new ApiError(
          400,
          "invalid_request",
          "Idempotency-Key: 1 to 255 printable ASCII characters",
        );
      }
      await checkExample(request);
      const spec = await newGroupSpec(request, key);
      const started = await rolloutGroup(c.env, spec.groupId).start(spec);
      if (started.outcome === "conflict") {
        throw new ApiError(
          409,
          "idempotency_conflict",
          "Idempotency-Key was already used with a different request body",
        );
      }
      return c.json(startedGroupView(spec.groupId, started.outcome === "created"), 202);
    },
  )
  .get("/groups/:id", async (c) => {
    const id = c.req.param("id");
    const group = await findGroupView(c.env, id);
    if (group === null) throw new ApiError(404, "not_found", `no group ${id}`);
    return c.json(group);
  });
