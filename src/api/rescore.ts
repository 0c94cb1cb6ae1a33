/**
 * `POST /v1/groups/:id/rescore` (trainer): grades a landed group's `judge_error` episodes again
 * (or every episode that played to an end, with `all: true`) without generating again, once the
 * judge is back: src/rollout/rescore.ts. A group still running is a 409 (it grades itself), and
 * so is one whose batch is out with a trainer (its grades would change under the lease); a run
 * that has spent its `max_usd` is a 429 (start-limits.ts).
 */
import { Hono } from "hono";
import { z } from "zod";
import { isGroupId } from "../rollout/group-ids";
import { rescoreGroup } from "../rollout/rescore";
import { findGroupView } from "../views/group-view";
import { rescoredView } from "../views/responses";
import { ApiError } from "./errors";
import { admitRescore } from "./start-limits";
import { validated } from "./validated";

const RescoreRequestSchema = z.strictObject({
  /** Every episode that played to an end, not only those the judge failed. */
  all: z.boolean().default(false),
});

export const rescoreRoutes = new Hono<{ Bindings: Env }>().post(
  "/groups/:id/rescore",
  validated("json", RescoreRequestSchema),
  async (c) => {
    const id = c.req.param("id");
    const notFound = new ApiError(404, "not_found", `no group ${id}`);
    if (!isGroupId(id)) throw notFound;
    const result = await rescoreGroup(c.env, id, c.req.valid("json").all, (runId) =>
      admitRescore(c.env, runId),
    );
    if ("kind" in result) {
      switch (result.kind) {
        case "not_found":
          throw notFound;
        case "running":
          throw new ApiError(
            409,
            "group_running",
            `group ${id} is still running: it grades its episodes as it lands`,
          );
        case "leased":
          throw new ApiError(
            409,
            "group_leased",
            `group ${id} is leased to a trainer until ${result.until}: ack or release its batch first`,
          );
        case "conflict":
          throw new ApiError(409, "rescore_conflict", `group ${id} is being re-scored already`);
        case "unavailable":
          throw new ApiError(503, "score_unavailable", result.message);
      }
    }
    return c.json(rescoredView(id, result, await findGroupView(c.env, id)));
  },
);
