/**
 * Leases, acks and releases of scored groups in D1. The claim is one D1 `batch()` (one
 * transaction): two trainers leasing at once can never receive the same group. An expired
 * lease makes its groups available again; a group delivered MAX_DELIVERIES times without an
 * ack is parked as poison.
 */

import type { BatchState } from "../domain/delivery";
import { timeOrderedId } from "../utils/ids";
import { type LeaseRequest, minPolicyVersion } from "./lease-request";

export interface Claim {
  batchId: string;
  leaseExpiresAt: string;
  groupIds: string[];
}

export function newBatchId(): string {
  return timeOrderedId("b_");
}

/** Claims whole groups for a new batch, oldest landed first. */
export async function claimGroups(
  db: D1Database,
  request: LeaseRequest,
  maxDeliveries: number,
  /** Who leases: only they may ack or release the batch. */
  owner: string,
): Promise<Claim> {
  const now = new Date().toISOString();
  const batchId = newBatchId();
  const leaseExpiresAt = new Date(Date.now() + request.lease_seconds * 1000).toISOString();
  const free =
    "(delivery_state = 'available' OR (delivery_state = 'leased' AND lease_expires_at <= ?1))";
  const eligible = request.include_parked ? `(${free} OR delivery_state = 'parked')` : free;
  const where = [
    "status = 'landed'",
    // An evaluation's episodes measure a policy; they never train one.
    "kind = 'train'",
    eligible,
    request.include_parked ? "1" : "deliveries < ?2",
    // The span's lowest version: a group is as old as its oldest turn.
    "COALESCE(policy_version_min, policy_version) >= ?3",
    "(?4 IS NULL OR run_id = ?4)",
    "(?5 IS NULL OR env = ?5)",
    request.skip_uniform_groups ? "uniform = 0" : "1",
  ].join(" AND ");
  const params = [
    now,
    maxDeliveries,
    minPolicyVersion(request),
    request.run_id ?? null,
    request.env ?? null,
  ];
  const maxGroups = request.max_groups ?? 1000;
  const maxEpisodes = request.max_episodes ?? Number.MAX_SAFE_INTEGER;

  const [, , , , claimed] = await db.batch([
    // Groups delivered too often without an ack become poison rather than being served again.
    db
      .prepare(`UPDATE groups SET delivery_state = 'parked', lease_id = NULL
        WHERE status = 'landed' AND deliveries >= ?2 AND ${free}`)
      .bind(now, maxDeliveries),
    db
      .prepare(`UPDATE groups
        SET delivery_state = 'leased', lease_id = ?6, lease_expires_at = ?7, deliveries = deliveries + 1
        WHERE id IN (
          SELECT id FROM (
            SELECT id, group_size,
              SUM(group_size) OVER (ORDER BY finished_at, id ROWS UNBOUNDED PRECEDING) AS running
            FROM groups WHERE ${where}
            ORDER BY finished_at, id LIMIT ?8
          ) WHERE running <= ?9 OR running = group_size
        )`)
      .bind(...params, batchId, leaseExpiresAt, maxGroups, maxEpisodes),
    db
      .prepare(
        "INSERT INTO batch_groups (batch_id, group_id) SELECT ?1, id FROM groups WHERE lease_id = ?1",
      )
      .bind(batchId),
    db
      .prepare(`INSERT INTO batches (id, owner, state, group_count, episode_count, created_at, lease_expires_at)
        SELECT ?1, ?4, 'leased', COUNT(*), SUM(group_size), ?2, ?3 FROM groups WHERE lease_id = ?1 HAVING COUNT(*) > 0`)
      .bind(batchId, now, leaseExpiresAt, owner),
    db.prepare("SELECT id FROM groups WHERE lease_id = ?1 ORDER BY finished_at, id").bind(batchId),
  ]);
  const groupIds = (claimed?.results ?? []).map((r) => (r as { id: string }).id);
  return { batchId, leaseExpiresAt, groupIds };
}

/** The state a trainer settles its batch in. */
export type SettledState = Exclude<BatchState, "leased">;

export type Settlement =
  | { outcome: "settled"; groups: number; lost: number }
  | { outcome: "already"; state: BatchState }
  | { outcome: "not_found" }
  | { outcome: "not_yours" };

async function settle(
  db: D1Database,
  batchId: string,
  to: SettledState,
  principal: string,
): Promise<Settlement> {
  const batch = await db
    .prepare("SELECT state, group_count, owner FROM batches WHERE id = ?1")
    .bind(batchId)
    .first<{ state: BatchState; group_count: number; owner: string }>();
  if (batch === null) return { outcome: "not_found" };
  // A batch id is not a capability: only the trainer that leased it may settle it.
  if (batch.owner !== principal) return { outcome: "not_yours" };
  const now = new Date().toISOString();
  const groups =
    to === "acked"
      ? db
          .prepare(`UPDATE groups SET delivery_state = 'acked', acked_at = ?2
            WHERE lease_id = ?1 AND delivery_state = 'leased'`)
          .bind(batchId, now)
      : db
          .prepare(`UPDATE groups SET delivery_state = 'available', lease_id = NULL, lease_expires_at = NULL
            WHERE lease_id = ?1 AND delivery_state = 'leased'`)
          .bind(batchId);
  // The batch row moves only from `leased`: a second ack (or release) changes nothing.
  const [changedGroups, changedBatch] = await db.batch([
    groups,
    db
      .prepare("UPDATE batches SET state = ?2, settled_at = ?3 WHERE id = ?1 AND state = 'leased'")
      .bind(batchId, to, now),
  ]);
  if ((changedBatch?.meta.changes ?? 0) === 0) {
    const current = await db
      .prepare("SELECT state FROM batches WHERE id = ?1")
      .bind(batchId)
      .first<{ state: BatchState }>();
    return { outcome: "already", state: current?.state ?? batch.state };
  }
  const settled = changedGroups?.meta.changes ?? 0;
  return { outcome: "settled", groups: settled, lost: batch.group_count - settled };
}

/** Marks the batch's groups consumed. Groups whose lease expired and went elsewhere are `lost`. */
export function ackBatch(db: D1Database, batchId: string, principal: string): Promise<Settlement> {
  return settle(db, batchId, "acked", principal);
}

/**
 * Undoes a claim whose batch could not be read (a storage fault before the trainer saw it):
 * the groups are available again and the delivery is not counted, so a fault of edgeroll's
 * never parks a group as poison.
 */
export async function unclaim(db: D1Database, batchId: string): Promise<void> {
  await db.batch([
    db
      .prepare(`UPDATE groups SET delivery_state = 'available', lease_id = NULL, lease_expires_at = NULL,
          deliveries = MAX(deliveries - 1, 0)
        WHERE lease_id = ?1 AND delivery_state = 'leased'`)
      .bind(batchId),
    db
      .prepare(
        "UPDATE batches SET state = 'released', settled_at = ?2 WHERE id = ?1 AND state = 'leased'",
      )
      .bind(batchId, new Date().toISOString()),
  ]);
}

/** Hands the batch's groups back at once. */
export function releaseBatch(
  db: D1Database,
  batchId: string,
  principal: string,
): Promise<Settlement> {
  return settle(db, batchId, "released", principal);
}
