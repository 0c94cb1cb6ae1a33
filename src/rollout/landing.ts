/**
 * Where data lands: a finished group's rows written to D1. Landing is idempotent — rows are
 * inserted with ON CONFLICT DO NOTHING and the group row is upserted last — so a landing retried
 * after a crash never duplicates anything. The object keeps its transcripts until this succeeds.
 */
import { eq, getTableColumns } from "drizzle-orm";
import { drizzle } from "drizzle-orm/d1";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";
import { episodes, groups, messages } from "../db/schema";
import { rewardSuccess } from "../sdk";
import { episodeId, type GroupSpec } from "./group-spec";
import type { GroupStore } from "./group-store";

/** Bulk rows travel as one JSON parameter per statement, well inside D1's 2 MB value limit. */
const CHUNK_CHARS = 500_000;
/** Statements per `batch()`; one batch is one transaction. */
const STATEMENTS_PER_BATCH = 40;

const iso = (ms: number) => new Date(ms).toISOString();

function groupRow(spec: GroupSpec, status: string): typeof groups.$inferInsert {
  const { request } = spec;
  return {
    id: spec.groupId,
    runId: request.run_id,
    env: request.env,
    exampleId: request.example.id,
    example: request.example,
    policyVersion: request.policy_version,
    groupSize: request.group_size,
    status,
    creditAssignment: request.credit_assignment,
    advantage: request.advantage,
    warnings: [],
    sampling: request.sampling,
    maxContextTokens: request.max_context_tokens,
    promptText: request.prompt_text,
    requestHash: spec.requestHash,
    idempotencyKey: spec.idempotencyKey,
    createdAt: spec.createdAt,
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

/**
 * `INSERT ... SELECT FROM json_each(?)` statements for `rows`, each under CHUNK_CHARS: one bound
 * parameter carries many rows, which keeps a large group far from D1's 100-parameter and
 * 1,000-queries-per-invocation limits.
 */
function bulkInserts<T extends SQLiteTable>(
  db: D1Database,
  table: T,
  tableName: string,
  rows: readonly T["$inferInsert"][],
) {
  const columns = Object.entries(getTableColumns(table));
  const names = columns.map(([, c]) => c.name);
  const statement = `INSERT INTO "${tableName}" (${names.map((n) => `"${n}"`).join(", ")})
    SELECT ${names.map((n) => `json_extract(value, '$.${n}')`).join(", ")}
    FROM json_each(?) WHERE true ON CONFLICT DO NOTHING`;
  const chunks: string[][] = [[]];
  let size = 0;
  for (const row of rows) {
    const record = Object.fromEntries(
      columns.map(([key, c]) => [c.name, (row as Record<string, unknown>)[key] ?? null]),
    );
    const text = JSON.stringify(record);
    if (size + text.length > CHUNK_CHARS && (chunks.at(-1) as string[]).length > 0) {
      chunks.push([]);
      size = 0;
    }
    (chunks.at(-1) as string[]).push(text);
    size += text.length;
  }
  return chunks
    .filter((chunk) => chunk.length > 0)
    .map((chunk) => db.prepare(statement).bind(`[${chunk.join(",")}]`));
}

/** Writes the finished group; returns the status it landed with. */
export async function landGroup(db: D1Database, store: GroupStore): Promise<"landed" | "failed"> {
  const { spec, creditApplied, warnings } = store.group();
  const { request } = spec;
  const rows = store.episodes();
  const scores = rows.flatMap((e) => (e.state !== "failed" && e.reward ? [e.reward.score] : []));
  const status = scores.length > 0 ? "landed" : "failed";
  const failed = rows.filter((e) => e.state === "failed");
  const mean = scores.length > 0 ? scores.reduce((a, b) => a + b, 0) / scores.length : null;
  const std =
    mean === null
      ? null
      : Math.sqrt(scores.reduce((a, s) => a + (s - mean) ** 2, 0) / scores.length);
  const byReason = new Map<string, number>();
  for (const e of failed)
    byReason.set(
      e.failureReason ?? "unknown",
      (byReason.get(e.failureReason ?? "unknown") ?? 0) + 1,
    );
  const reasons = [...byReason].map(([reason, n]) => `${reason} x${n}`);
  const finishedAt = iso(Math.max(...rows.map((e) => e.finishedAt ?? e.startedAt)));

  const episodeRows: (typeof episodes.$inferInsert)[] = rows.map((e) => ({
    id: episodeId(spec.groupId, e.idx),
    groupId: spec.groupId,
    idx: e.idx,
    runId: request.run_id,
    env: request.env,
    exampleId: request.example.id,
    policyVersion: request.policy_version,
    status: e.state,
    endReason: e.endReason ?? "unknown",
    failureReason: e.failureReason,
    failureDetail: e.failureDetail,
    score: e.state === "failed" ? null : (e.reward?.score ?? null),
    threshold: e.reward?.threshold ?? null,
    success: e.state === "failed" || !e.reward ? null : rewardSuccess(e.reward),
    advantage: e.advantage,
    perTurnRewards: e.perTurnRewards,
    perTurnAdvantages: e.perTurnAdvantages,
    rewardMetadata: e.reward?.metadata ?? null,
    turns: e.turns,
    promptTokens: e.promptTokens,
    completionTokens: e.completionTokens,
    totalTokens: e.totalTokens,
    latencyMs: (e.finishedAt ?? e.startedAt) - e.startedAt,
    redispatches: e.redispatches,
    responseText: e.responseText,
    createdAt: iso(e.startedAt),
    finishedAt: iso(e.finishedAt ?? e.startedAt),
  }));
  const messageRows: (typeof messages.$inferInsert)[] = rows.flatMap((e) =>
    store.messages(e.idx).map((m) => ({
      episodeId: episodeId(spec.groupId, e.idx),
      seq: m.seq,
      groupId: spec.groupId,
      turn: m.turn,
      role: m.message.role,
      content: m.message.content,
      name: m.message.name ?? null,
      toolCalls: m.message.tool_calls ?? null,
      toolCallId: m.message.tool_call_id ?? null,
      sampled: m.sampled,
      promptTokens: m.promptTokens,
      completionTokens: m.completionTokens,
      finishReason: m.finishReason,
      latencyMs: m.latencyMs,
      attempts: m.attempts,
      truncated: m.truncated,
    })),
  );

  const final = { ...groupRow(spec, status) } as typeof groups.$inferInsert;
  Object.assign(final, {
    failureReason: status === "failed" ? `every episode failed: ${reasons.join(", ")}` : null,
    creditApplied,
    warnings,
    scoreMean: mean,
    scoreStd: std,
    episodesFailed: failed.length,
    // Equal scores carry no group-relative signal; a group of one is uniform by definition.
    uniform: scores.length > 0 && scores.every((s) => s === scores[0]),
    finishedAt,
  });
  // Drizzle builds the statement; D1's own batch runs it (drizzle's batch mishandles raw SQL).
  const upsert = drizzle(db)
    .insert(groups)
    .values(final)
    .onConflictDoUpdate({
      target: groups.id,
      set: {
        status: final.status,
        failureReason: final.failureReason,
        creditApplied: final.creditApplied,
        warnings: final.warnings,
        scoreMean: final.scoreMean,
        scoreStd: final.scoreStd,
        episodesFailed: final.episodesFailed,
        uniform: final.uniform,
        finishedAt: final.finishedAt,
      },
    })
    .toSQL();
  const inserts = [
    ...bulkInserts(db, episodes, "episodes", episodeRows),
    ...bulkInserts(db, messages, "messages", messageRows),
  ];
  // Rows first, group row last and in the final batch: readers see the group as landed only
  // once all of it is there. Most groups fit one batch, which is one transaction.
  const batches: D1PreparedStatement[][] = [];
  for (let i = 0; i < inserts.length; i += STATEMENTS_PER_BATCH)
    batches.push(inserts.slice(i, i + STATEMENTS_PER_BATCH));
  const last = batches.pop() ?? [];
  for (const batch of batches) await db.batch(batch);
  await db.batch([...last, db.prepare(upsert.sql).bind(...upsert.params)]);
  return status;
}
