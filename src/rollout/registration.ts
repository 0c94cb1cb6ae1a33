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
