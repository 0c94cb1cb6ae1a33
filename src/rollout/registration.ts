/**
 * A group's first D1 writes, at start: its row, so SQL sees it `running` at once, and the
 * lookup that lets a retried start recognise a group that already landed and left.
 */
import { eq } from "drizzle-orm";
import { drizzle } from "drizzle-orm/d1";
import { groups } from "../db/schema";
import type { GroupStatus } from "../domain/group-status";
import type { GroupSpec } from "./group-spec";

/** The group's D1 row as it starts; landing upserts the same row with its outcome. */
export function groupRow(spec: GroupSpec, status: GroupStatus): typeof groups.$inferInsert {
  const { request } = spec;
  return {
    id: spec.groupId,
    runId: request.run_id,
    env: request.env,
    envVersion: request.env_version ?? null,
    exampleId: request.example.id,
    example: request.example,
    policyVersion: request.policy_version,
    groupSize: request.group_size,
    status,
    creditAssignment: request.credit_assignment,
    advantage: request.advantage,
    generation: request.generation,
    algorithm: request.algorithm,
    teacherModel: request.teacher?.model ?? null,
    kind: request.kind,
    overlong: request.overlong,
    warnings: [],
    sampling: request.sampling,
    maxContextTokens: request.max_context_tokens,
    promptText: request.prompt_text,
    requestHash: spec.requestHash,
    idempotencyKey: spec.idempotencyKey,
    createdAt: spec.createdAt,
    startedBy: spec.startedBy,
  };
}

/** Makes the group visible in SQL as `running` as soon as it starts. */
export async function registerGroup(db: D1Database, spec: GroupSpec): Promise<void> {
  await drizzle(db).insert(groups).values(groupRow(spec, "running")).onConflictDoNothing();
}

/** The request hash of a group D1 already knows, or null. */
export async function knownGroupHash(db: D1Database, groupId: string): Promise<string | null> {
  const row = await drizzle(db)
    .select({ requestHash: groups.requestHash })
    .from(groups)
    .where(eq(groups.id, groupId))
    .get();
  return row?.requestHash ?? null;
}

/** What a start may have in flight: its token's quota, its run's `max_groups`. */
export interface StartCaps {
  quota: number | null;
  maxGroups: number | null;
}

/** Whether the start holds its place, or which cap it is over. */
export type Reservation =
  | { kind: "reserved" }
  | { kind: "over_quota" }
  | { kind: "over_max_groups" };

/**
 * Registers a group its object has just created, if its caps allow: the row is inserted and, in
 * the same transaction, deleted again when the token now has more than its quota of groups
 * running, or the run more than `max_groups`. D1 runs transactions one at a time, so of starts
 * racing for the last place exactly one keeps it, where a count read first and acted on after
 * would let them all through.
 */
export async function reserveGroup(
  db: D1Database,
  spec: GroupSpec,
  caps: StartCaps,
): Promise<Reservation> {
  const id = spec.groupId;
  const insert = drizzle(db)
    .insert(groups)
    .values(groupRow(spec, "running"))
    .onConflictDoNothing()
    .toSQL();
  const overQuota =
    caps.quota === null || spec.startedBy === null
      ? null
      : db
          .prepare(
            `DELETE FROM groups WHERE id = ? AND status = 'running' AND (SELECT COUNT(*) FROM groups
               WHERE started_by = ? AND status = 'running') > ?`,
          )
          .bind(id, spec.startedBy, caps.quota);
  const overGroups =
    caps.maxGroups === null
      ? null
      : db
          .prepare(
            "DELETE FROM groups WHERE id = ? AND status = 'running' AND (SELECT COUNT(*) FROM groups WHERE run_id = ?) > ?",
          )
          .bind(id, spec.request.run_id, caps.maxGroups);
  const [, ...cuts] = await db.batch([
    db.prepare(insert.sql).bind(...insert.params),
    ...(overQuota === null ? [] : [overQuota]),
    ...(overGroups === null ? [] : [overGroups]),
  ]);
  const cut = (i: number) => (cuts[i]?.meta.changes ?? 0) > 0;
  if (overQuota !== null && cut(0)) return { kind: "over_quota" };
  if (overGroups !== null && cut(overQuota === null ? 0 : 1)) return { kind: "over_max_groups" };
  return { kind: "reserved" };
}
