/** Routes trainers use: lease a batch of scored groups, then ack it or release it. */
import { zValidator } from "@hono/zod-validator";
import { Hono } from "hono";
import { configFrom } from "../config";
import { readBatchGroups } from "../trainer/batch-format";
import { LeaseRequestSchema } from "../trainer/lease-request";
import { ackBatch, claimGroups, releaseBatch, type Settlement } from "../trainer/leases";
import type { AuthVariables } from "./auth";
import { ApiError, invalidRequest } from "./errors";

function settled(batchId: string, settlement: Settlement, verb: "acked" | "released") {
  if (settlement.outcome === "not_found")
    throw new ApiError(404, "not_found", `no batch ${batchId}`);
  if (settlement.outcome === "not_yours") {
    throw new ApiError(
      403,
      "forbidden",
      `batch ${batchId} was leased by another trainer; only it may settle the batch`,
    );
  }
  if (settlement.outcome === "already") {
    if (settlement.state !== verb) {
      throw new ApiError(
        409,
        "batch_settled",
        `batch ${batchId} was already ${settlement.state}; it cannot be ${verb}`,
      );
    }
    return { batch_id: batchId, [`${verb}_groups`]: 0, lost_groups: 0, [`already_${verb}`]: true };
  }
  return {
    batch_id: batchId,
    [`${verb}_groups`]: settlement.groups,
    // Groups whose lease ran out and went to another trainer (or were parked) before this call.
    lost_groups: settlement.lost,
    [`already_${verb}`]: false,
  };
}

export const batchRoutes = new Hono<{ Bindings: Env; Variables: AuthVariables }>()
  .post(
    "/batches/lease",
    zValidator("json", LeaseRequestSchema, (result) => {
      if (!result.success) throw invalidRequest(result.error);
    }),
    async (c) => {
      const request = c.req.valid("json");
      const claim = await claimGroups(
        c.env.DB,
        request,
        configFrom(c.env).MAX_DELIVERIES,
        c.get("principal"),
      );
      if (claim.groupIds.length === 0)
        return c.json({ batch_id: null, lease_expires_at: null, groups: [] });
      const groups = await readBatchGroups(c.env.DB, claim.groupIds, request.include);
      return c.json({ batch_id: claim.batchId, lease_expires_at: claim.leaseExpiresAt, groups });
    },
  )
  .post("/batches/:id/ack", async (c) => {
    const id = c.req.param("id");
    return c.json(settled(id, await ackBatch(c.env.DB, id, c.get("principal")), "acked"));
  })
  .post("/batches/:id/release", async (c) => {
    const id = c.req.param("id");
    return c.json(settled(id, await releaseBatch(c.env.DB, id, c.get("principal")), "released"));
  });
