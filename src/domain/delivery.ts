/** A landed group on its way to a trainer: its delivery state, and the state of its batch. */
import { z } from "zod";

/**
 * `available` to lease, `leased` to a trainer (until its lease expires), `acked` by it, or
 * `parked`: delivered MAX_DELIVERIES times without an ack, poison kept for inspection.
 */
export const DeliveryStateSchema = z.enum(["available", "leased", "acked", "parked"]);
export type DeliveryState = z.infer<typeof DeliveryStateSchema>;

/** A batch is `leased` until its trainer settles it; a lease past its expiry stays `leased`. */
export const BatchStateSchema = z.enum(["leased", "acked", "released"]);
export type BatchState = z.infer<typeof BatchStateSchema>;
