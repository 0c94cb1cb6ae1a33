/** Routes trainers use: lease a batch of scored groups, then ack it or release it. */
import { Hono } from "hono";
import { configFrom } from "../config";
import { readBatchGroups } from "../trainer/batch-format";
import { LeaseRequestSchema } from "../trainer/lease-request";
import {
  ackBatch,
  claimGroups,
  releaseBatch,
  type SettledState,
  type Settlement,
  unclaim,
} from "../trainer/leases";
import { ackView, batchView, releaseView } from "../views/responses";
import type { AuthVariables } from "./auth";
import { ApiError } from "./errors";
import { validated } from "./validated";

/** What a settlement means for the caller: done now, done before, or refused with a 4xx. */
function settled(batchId: string, settlement: Settlement, verb: SettledState) {
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
    return "already";
  }
  return settlement;
}

export const batchRoutes = new Hono<{ Bindings: Env; Variables: AuthVariables }>()
  .post("/batches/lease", validated("json", LeaseRequestSchema), async (c) => {
    const request = c.req.valid("json");
    const claim = await claimGroups(
      c.env.DB,
      request,
      configFrom(c.env).MAX_DELIVERIES,
      c.get("principal"),
    );
    if (claim.groupIds.length === 0) return c.json(batchView(null, []));
    let groups: Awaited<ReturnType<typeof readBatchGroups>>;
    try {
      groups = await readBatchGroups(c.env.DB, claim.groupIds, request.include, {
        bucket: c.env.TOKENS,
        encoding: request.token_encoding,
      });
    } catch (error) {
      // The trainer never saw these groups: they go back at once, their delivery uncounted.
      await unclaim(c.env.DB, claim.batchId);
      throw error;
    }
    return c.json(batchView(claim, groups));
  })
  .post("/batches/:id/ack", async (c) => {
    const id = c.req.param("id");
    const settlement = await ackBatch(c.env.DB, id, c.get("principal"));
    return c.json(ackView(id, settled(id, settlement, "acked")));
  })
  .post("/batches/:id/release", async (c) => {
    const id = c.req.param("id");
    const settlement = await releaseBatch(c.env.DB, id, c.get("principal"));
    return c.json(releaseView(id, settled(id, settlement, "released")));
  });
