/**
 * Where data lands: a finished group's rows written to D1. Landing is idempotent — rows are
 * inserted with ON CONFLICT DO NOTHING and the group row is upserted last — so a landing retried
 * after a crash never duplicates anything. The object keeps its transcripts until this succeeds.
 */
import { getTableColumns } from "drizzle-orm";
import type { SQLiteColumn, SQLiteTable } from "drizzle-orm/sqlite-core";
import type { PriceBook } from "../config";
import { episodes, groups, judgements, messages, rewardComponents } from "../db/schema";
import { isOverlong } from "../domain/overlong";
import { errorMessage, type JsonObject, rewardSuccess } from "../sdk";
import { episodeCosts, messageUsd } from "./episode-costs";
import { componentRows, judgementRows } from "./grading-rows";
import { groupSummary } from "./group-grades";
import { episodeId } from "./group-spec";
import { type LandedVersions, landedVersions } from "./landed-versions";
import type { LandingOutcome } from "./landing-outcome";
import { policySpan } from "./policy-watch";
import { groupRow } from "./registration";
import { gradedMembers } from "./rewards";
import type { GroupStorage } from "./storage/group-storage";
import type { TokenLanding } from "./token-landing";

/** Bulk rows travel as one JSON parameter per statement, well inside D1's 2 MB value limit. */
const CHUNK_CHARS = 500_000;

const iso = (ms: number) => new Date(ms).toISOString();

/** A table's columns by property name, in the order its landing statement lists them. */
type Columns = [key: string, column: SQLiteColumn][];

const columnsOf = (table: SQLiteTable, skip: readonly string[] = []): Columns =>
  Object.entries(getTableColumns(table)).filter(([key]) => !skip.includes(key));

const EPISODE_COLUMNS = columnsOf(episodes);
const MESSAGE_COLUMNS = columnsOf(messages);
const COMPONENT_COLUMNS = columnsOf(rewardComponents);
const JUDGEMENT_COLUMNS = columnsOf(judgements);
/** The delivery bookkeeping belongs to the batch queue; a landing leaves it at its defaults. */
const GROUP_COLUMNS = columnsOf(groups, [
  "deliveryState",
  "deliveries",
  "leaseId",
  "leaseExpiresAt",
  "ackedAt",
]);

/** `INSERT ... SELECT FROM json_each(?)`: one bound parameter carries many rows. */
function insertSql(tableName: string, columns: Columns): string {
  return `WITH r AS MATERIALIZED (SELECT jsonb(value) AS j FROM json_each(?))
    INSERT INTO "${tableName}" (${columns.map(([, c]) => `"${c.name}"`).join(", ")})
    SELECT ${columns.map((_, i) => `j ->> ${i}`).join(", ")}
    FROM r WHERE true`;
}

const INSERT_EPISODES = `${insertSql("episodes", EPISODE_COLUMNS)} ON CONFLICT DO NOTHING`;
const INSERT_MESSAGES = `${insertSql("messages", MESSAGE_COLUMNS)} ON CONFLICT DO NOTHING`;
/** A re-score's rows fail on one already there: two re-scores at once claim the same seqs. */
const ADD_COMPONENTS = insertSql("reward_components", COMPONENT_COLUMNS);
const ADD_JUDGEMENTS = insertSql("judgements", JUDGEMENT_COLUMNS);
const INSERT_COMPONENTS = `${ADD_COMPONENTS} ON CONFLICT DO NOTHING`;
const INSERT_JUDGEMENTS = `${ADD_JUDGEMENTS} ON CONFLICT DO NOTHING`;

/** Columns a landing writes over the `running` row registered at start. */
const LANDED_COLUMNS = [
  "status",
  "failure_reason",
  "credit_applied",
  "warnings",
  "score_mean",
  "score_std",
  "episodes_failed",
  "uniform",
  "token_object",
  "token_object_bytes",
  "tools",
  "host_failures",
  "policy_version_min",
  "policy_version_max",
  "finished_at",
  "score_ms",
];
const UPSERT_GROUPS = `${insertSql("groups", GROUP_COLUMNS)}
    ON CONFLICT (id) DO UPDATE SET ${LANDED_COLUMNS.map((c) => `"${c}" = excluded."${c}"`).join(", ")}`;

/** A row as a JSON array of its column values (cheaper for SQLite to unpack than an object). */
function rowJson(columns: Columns, row: object): string {
  const values = columns.map(([key, column]) => {
    const value = (row as Record<string, unknown>)[key] ?? null;
    // JSON-mode columns hold JSON text; booleans are 0/1 integers.
    if (value !== null && (column.dataType === "json" || typeof value === "object"))
      return JSON.stringify(value);
    return typeof value === "boolean" ? Number(value) : value;
  });
  return JSON.stringify(values);
}

/**
 * Serialized rows packed into JSON-array parameters under CHUNK_CHARS each: however large the
 * landing, it stays far from D1's value-size, 100-parameter and 1,000-query limits.
 */
function pack(rows: readonly string[]): string[] {
  const chunks: string[] = [];
  let current: string[] = [];
  let size = 0;
  for (const row of rows) {
    if (size + row.length > CHUNK_CHARS && current.length > 0) {
      chunks.push(`[${current.join(",")}]`);
      current = [];
      size = 0;
    }
    current.push(row);
    size += row.length + 1;
  }
  if (current.length > 0) chunks.push(`[${current.join(",")}]`);
  return chunks;
}

/**
 * A finished group, ready to write: its rows already serialized into the statements' JSON
 * parameters, so the lander receives a few strings and only has to batch them.
 */
export interface LandingPayload {
  groupId: string;
  status: "landed" | "failed";
  /** Each row as a JSON array of its column values. */
  episodeRows: string[];
  messageRows: string[];
  /** Each rubric component of each grade, and every judge call. */
  componentRows: string[];
  judgementRows: string[];
  groupRow: string;
}

/** A message's metadata as the environment wrote it: the loop's `sampled` mark has its column. */
function ownMetadata(metadata: JsonObject | undefined): JsonObject | null {
  if (metadata === undefined) return null;
  const { sampled: _sampled, ...own } = metadata;
  return Object.keys(own).length > 0 ? own : null;
}

/** Reads everything a finished group lands with from its object's storage. */
export function landingPayload(
  store: GroupStorage,
  tokens: TokenLanding | null,
  prices: PriceBook,
  landed: LandedVersions | null = null,
): LandingPayload {
  const { tools } = store;
  const { spec, creditApplied, warnings, hostFailures, scoreMs } = store.group.get();
  const { request } = spec;
  const rows = store.episodes.all();
  const messagesByEpisode = store.transcripts.messagesByEpisode();
  const steps = store.transcripts.stepsByEpisode();
  const overlong = rows.map((e) => isOverlong(messagesByEpisode.get(e.idx) ?? []));
  const summary = groupSummary(gradedMembers(store, spec, messagesByEpisode), request.algorithm);
  const finishedAt = iso(Math.max(...rows.map((e) => e.finishedAt ?? e.startedAt)));
  // Every version that sampled some of each sampled turn (the group's own before its run had a
  // policy); an episode's sampled turns are 0 to turns - 1, and a send that sampled nothing is
  // in no span.
  const versions = landed ?? landedVersions(null, request.policy_version, new Map());
  const spans = rows.map((e) => policySpan(new Map([[e.idx, e.turns]]), versions.versions));
  const groupSpan = policySpan(new Map(rows.map((e) => [e.idx, e.turns])), versions.versions);
  // A message's version is the one its turn was last sent at (the continuation's, when cut).
  const versionOf = (idx: number, turn: number) => versions.segments(idx, turn).at(-1)?.version;

  const episodeRows: (typeof episodes.$inferInsert)[] = rows.map((e, i) => ({
    ...episodeCosts(
      messagesByEpisode.get(e.idx) ?? [],
      e.judgements,
      { envMs: e.envMs, teacherTokens: tokens?.episodes.get(e.idx)?.teacherTokens ?? 0 },
      prices,
    ),
    id: episodeId(spec.groupId, e.idx),
    groupId: spec.groupId,
    idx: e.idx,
    runId: request.run_id,
    env: request.env,
    envVersion: request.env_version ?? null,
    exampleId: request.example.id,
    policyVersion: request.policy_version,
    policyVersionMin: spans[i]?.min ?? null,
    policyVersionMax: spans[i]?.max ?? null,
    status: e.state,
    endReason: e.endReason ?? "unknown",
    failureReason: e.failureReason,
    failureDetail: e.failureDetail,
    playedEndReason: e.playedEndReason,
    score: e.state === "failed" ? null : (e.reward?.score ?? null),
    threshold: e.reward?.threshold ?? null,
    success: e.state === "failed" || !e.reward ? null : rewardSuccess(e.reward),
    overlong: overlong[i] ?? false,
    advantage: e.advantage,
    perTurnRewards: e.perTurnRewards,
    perTurnAdvantages: e.perTurnAdvantages,
    rewardMetadata: e.reward?.metadata ?? null,
    stepMetadata: steps.get(e.idx) ?? [],
    turns: e.turns,
    promptTokens: e.promptTokens,
    completionTokens: e.completionTokens,
    totalTokens: e.totalTokens,
    latencyMs: (e.finishedAt ?? e.startedAt) - e.startedAt,
    redispatches: e.redispatches,
    discardedTokens: e.discardedTokens,
    keptTokens: versions.kept(e.idx),
    tokenMode: tokens?.episodes.get(e.idx)?.mode ?? "none",
    tokenModeReason: tokens
      ? (tokens.episodes.get(e.idx)?.reason ?? null)
      : 'the group asked for tokens: "off"',
    prefixBreaks: tokens?.episodes.get(e.idx)?.prefixBreaks ?? 0,
    sampleCount: tokens?.episodes.get(e.idx)?.sampleCount ?? 0,
    teacherModel: request.teacher?.model ?? null,
    reverseKl: tokens?.episodes.get(e.idx)?.reverseKl ?? null,
    toolsHash: tools.of(e.idx)?.hash ?? null,
    responseText: e.responseText,
    createdAt: iso(e.startedAt),
    finishedAt: iso(e.finishedAt ?? e.startedAt),
  }));
  const messageRows: (typeof messages.$inferInsert)[] = rows.flatMap((e) =>
    (messagesByEpisode.get(e.idx) ?? []).map((m) => {
      const turn =
        m.sampled && m.turn !== null ? tokens?.episodes.get(e.idx)?.turns.get(m.turn) : undefined;
      return {
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
        model: turn?.model ?? null,
        logprobSum: turn?.logprobSum ?? null,
        newPromptTokens: turn?.newPromptTokens ?? null,
        prefixBreak: turn ? turn.prefixBreak : null,
        policyVersion: m.sampled && m.turn !== null ? (versionOf(e.idx, m.turn) ?? null) : null,
        host: m.host,
        cachedTokens: m.cachedTokens,
        metadata: ownMetadata(m.message.metadata),
        usd: messageUsd(m, prices),
      };
    }),
  );
  const toolSets = new Map(
    rows.flatMap((e) => {
      const set = tools.of(e.idx);
      return set ? [[set.hash, set.tools] as const] : [];
    }),
  );
  const { status } = summary;
  const group: typeof groups.$inferInsert = {
    ...groupRow(spec, status),
    tools: toolSets.size > 0 ? Object.fromEntries(toolSets) : null,
    hostFailures: Object.keys(hostFailures).length > 0 ? hostFailures : null,
    failureReason: summary.failureReason,
    creditApplied,
    warnings,
    scoreMean: summary.scoreMean,
    scoreStd: summary.scoreStd,
    episodesFailed: summary.episodesFailed,
    uniform: summary.uniform,
    tokenObject: tokens?.object?.key ?? null,
    tokenObjectBytes: tokens?.object?.bytes.length ?? null,
    policyVersionMin: groupSpan.min,
    policyVersionMax: groupSpan.max,
    finishedAt,
    scoreMs,
  };
  return {
    groupId: spec.groupId,
    status,
    episodeRows: episodeRows.map((row) => rowJson(EPISODE_COLUMNS, row)),
    messageRows: messageRows.map((row) => rowJson(MESSAGE_COLUMNS, row)),
    componentRows: componentRows(spec.groupId, rows).map((row) => rowJson(COMPONENT_COLUMNS, row)),
    judgementRows: judgementRows(spec.groupId, rows, prices.judge).map((row) =>
      rowJson(JUDGEMENT_COLUMNS, row),
    ),
    groupRow: rowJson(GROUP_COLUMNS, group),
  };
}

/** Serialized rows as statements of `sql`, packed into JSON parameters under CHUNK_CHARS. */
function bound(db: D1Database, sql: string, rows: string[]): D1PreparedStatement[] {
  return pack(rows).map((chunk) => db.prepare(sql).bind(chunk));
}

/**
 * A re-score's rows of the grading tables, packed as a landing's are, failing on a row already
 * there (its judge calls' sequence numbers, which two re-scores at once would both claim).
 */
export function gradingInserts(
  db: D1Database,
  rows: {
    components: (typeof rewardComponents.$inferInsert)[];
    judgements: (typeof judgements.$inferInsert)[];
  },
): D1PreparedStatement[] {
  return [
    ...bound(
      db,
      ADD_COMPONENTS,
      rows.components.map((row) => rowJson(COMPONENT_COLUMNS, row)),
    ),
    ...bound(
      db,
      ADD_JUDGEMENTS,
      rows.judgements.map((row) => rowJson(JUDGEMENT_COLUMNS, row)),
    ),
  ];
}

/**
 * The statements that land one or more groups: their episodes and messages (ON CONFLICT DO
 * NOTHING), then their group rows upserted last — in the same transaction, readers see a group
 * landed only with all of its rows there. Landing twice never duplicates anything.
 */
export function landingStatements(
  db: D1Database,
  payloads: readonly LandingPayload[],
): D1PreparedStatement[] {
  return [
    ...bound(
      db,
      INSERT_EPISODES,
      payloads.flatMap((p) => p.episodeRows),
    ),
    ...bound(
      db,
      INSERT_MESSAGES,
      payloads.flatMap((p) => p.messageRows),
    ),
    ...bound(
      db,
      INSERT_COMPONENTS,
      payloads.flatMap((p) => p.componentRows),
    ),
    ...bound(
      db,
      INSERT_JUDGEMENTS,
      payloads.flatMap((p) => p.judgementRows),
    ),
    ...bound(
      db,
      UPSERT_GROUPS,
      payloads.map((p) => p.groupRow),
    ),
  ];
}

/**
 * Landings larger than this go straight to D1 instead of through the lander: Workers RPC
 * messages are capped at 32 MiB, and a lander holding a few such groups would crowd its memory.
 */
export const LANDER_MAX_CHARS = 8_000_000;

/**
 * What the lander object offers (lander.ts). A refusal is an answer, not an exception: an
 * exception thrown out of an RPC method is logged by the runtime as uncaught even when the
 * caller handles it.
 */
export type { LandingOutcome } from "./landing-outcome";

export interface LanderApi {
  land(payload: LandingPayload): Promise<LandingOutcome>;
}

/**
 * Lands a finished group: through the lander, which group-commits it with whatever else is
 * landing, or, too large to hand over in one RPC message, straight to D1 in several batches.
 */
export async function landGroup(
  db: D1Database,
  lander: LanderApi,
  payload: LandingPayload,
): Promise<LandingOutcome> {
  if (payloadChars(payload) <= LANDER_MAX_CHARS) return lander.land(payload);
  try {
    await commitGroup(db, landingStatements(db, [payload]));
    return { ok: true };
  } catch (error) {
    return { ok: false, error: errorMessage(error) };
  }
}

export function payloadChars(payload: LandingPayload): number {
  let chars = payload.groupRow.length;
  for (const row of payload.episodeRows) chars += row.length;
  for (const row of payload.messageRows) chars += row.length;
  for (const row of payload.componentRows) chars += row.length;
  for (const row of payload.judgementRows) chars += row.length;
  return chars;
}

/** Statements per D1 `batch()`; one batch is one transaction. */
export const STATEMENTS_PER_BATCH = 96;

/**
 * Writes one group's statements; one that needs more than a batch is written in several, the
 * group row in the last, so it still becomes visible only when complete.
 */
export async function commitGroup(
  db: D1Database,
  statements: readonly D1PreparedStatement[],
): Promise<void> {
  for (let i = 0; i < statements.length; i += STATEMENTS_PER_BATCH) {
    await db.batch(statements.slice(i, i + STATEMENTS_PER_BATCH));
  }
}
