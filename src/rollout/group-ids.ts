/** Group ids and request fingerprints, and the spec of a new group made from them. */

import { sha256Hex } from "../utils/digest";
import { timeOrderedId } from "../utils/ids";
import type { GroupSpec, StartGroupRequest } from "./group-spec";

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
}

/** Same request, same hash, whatever the key order. */
export function requestHash(request: unknown): Promise<string> {
  return sha256Hex(JSON.stringify(canonical(request)));
}

/**
 * A new group id: time-ordered (base-36 milliseconds) then random, so ids sort by creation.
 * With an idempotency key the id is derived from it, so a retried POST reaches the same group.
 */
export async function newGroupId(idempotencyKey: string | null): Promise<string> {
  if (idempotencyKey !== null)
    return `g_k${(await sha256Hex(`idempotency:${idempotencyKey}`)).slice(0, 24)}`;
  return timeOrderedId("g_");
}

const GROUP_ID = /^g_[0-9a-z]{20,32}$/;

/** Whether `id` can name a group: checked before any lookup, so no object is made for junk. */
export function isGroupId(id: string): boolean {
  return GROUP_ID.test(id);
}

/**
 * The spec a group is started with: its id, its request and that request's fingerprint. The
 * fingerprint is of what the caller asked (`asked`), before edgeroll filled anything in (the
 * run's policy version), so a retried POST matches whatever the run did meanwhile.
 */
export async function newGroupSpec(
  request: StartGroupRequest,
  idempotencyKey: string | null,
  asked: unknown = request,
  startedBy: string | null = null,
): Promise<GroupSpec> {
  return {
    startedBy,
    groupId: await newGroupId(idempotencyKey),
    request,
    requestHash: await requestHash(asked),
    idempotencyKey,
    createdAt: new Date().toISOString(),
  };
}
