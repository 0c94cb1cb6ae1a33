/** Routes for rollout groups and their episodes. */
import { zValidator } from "@hono/zod-validator";
import { Hono } from "hono";
import { findGroup, groupEpisodes } from "../db/queries";
import {
  environmentNames,
  isRegisteredEnvironment,
  loadEnvironment,
} from "../environments/registry";
import { newGroupSpec } from "../rollout/group-ids";
import { type StartGroupRequest, StartGroupRequestSchema } from "../rollout/group-spec";
import { errorMessage, openEpisode, turnBudget } from "../sdk";
import { ApiError, invalidRequest } from "./errors";
import { landedGroupView, liveGroupView } from "./views";

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
const GROUP_ID = /^g_[0-9a-z]{20,32}$/;

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

function groupStub(env: Env, groupId: string) {
  return env.ROLLOUT_GROUP.get(env.ROLLOUT_GROUP.idFromName(groupId));
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
      const started = await groupStub(c.env, spec.groupId).start(spec);
      if (started.outcome === "conflict") {
        throw new ApiError(
          409,
          "idempotency_conflict",
          "Idempotency-Key was already used with a different request body",
        );
      }
      return c.json(
        {
          group_id: spec.groupId,
          status_url: `/v1/groups/${spec.groupId}`,
          created: started.outcome === "created",
        },
        202,
      );
    },
  )
  .get("/groups/:id", async (c) => {
    const id = c.req.param("id");
    const notFound = new ApiError(404, "not_found", `no group ${id}`);
    if (!GROUP_ID.test(id)) throw notFound;
    const landed = async () => {
      const group = await findGroup(c.env.DB, id);
      if (group === undefined || group.status === "running") return undefined;
      return landedGroupView(group, await groupEpisodes(c.env.DB, id));
    };
    const before = await landed();
    if (before) return c.json(before);
    const live = await groupStub(c.env, id).status();
    if (live) return c.json(liveGroupView(live));
    // It may have landed between the two reads.
    const after = await landed();
    if (after) return c.json(after);
    throw notFound;
  });
