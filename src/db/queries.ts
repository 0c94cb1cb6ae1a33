/** Reads of landed groups and episodes from D1. */
import { and, asc, eq, sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/d1";
import type { EndState } from "../domain/episode-outcomes";
import type { GroupKind } from "../domain/group-options";
import { episodes, groups, judgements, messages, rewardComponents } from "./schema";

export type GroupRecord = typeof groups.$inferSelect;
export type EpisodeRecord = typeof episodes.$inferSelect;
export type MessageRecord = typeof messages.$inferSelect;

export function findGroup(db: D1Database, id: string): Promise<GroupRecord | undefined> {
  return drizzle(db).select().from(groups).where(eq(groups.id, id)).get();
}

export function groupEpisodes(db: D1Database, groupId: string): Promise<EpisodeRecord[]> {
  return drizzle(db)
    .select()
    .from(episodes)
    .where(eq(episodes.groupId, groupId))
    .orderBy(asc(episodes.idx))
    .all();
}

export type ComponentRecord = typeof rewardComponents.$inferSelect;
export type JudgementRecordRow = typeof judgements.$inferSelect;

/** An episode with its transcript, its grade's components and its judge calls: one D1 batch. */
export interface FoundEpisode {
  episode: EpisodeRecord;
  messages: MessageRecord[];
  components: ComponentRecord[];
  judgements: JudgementRecordRow[];
}

export async function findEpisode(db: D1Database, id: string): Promise<FoundEpisode | undefined> {
  const d1 = drizzle(db);
  const [found, rows, components, calls] = await d1.batch([
    d1.select().from(episodes).where(eq(episodes.id, id)),
    d1.select().from(messages).where(eq(messages.episodeId, id)).orderBy(asc(messages.seq)),
    d1.select().from(rewardComponents).where(eq(rewardComponents.episodeId, id)),
    d1.select().from(judgements).where(eq(judgements.episodeId, id)).orderBy(asc(judgements.seq)),
  ]);
  const episode = found[0];
  return episode ? { episode, messages: rows, components, judgements: calls } : undefined;
}

export interface EpisodeFilter {
  runId?: string | undefined;
  env?: string | undefined;
  status?: EndState | undefined;
  success?: boolean | undefined;
  kind?: GroupKind | undefined;
  /**
   * Only the over-long episodes a group's `overlong: "filter"` keeps out of leases (true), or
   * every other (false): what a lease would serve, failed episodes included.
   */
  filtered?: boolean | undefined;
}

/**
 * An over-long episode of a group that filters them: kept in SQL, never leased. Its group is
 * looked up by key, and only for over-long episodes: no scan of the groups per page.
 */
const filteredEpisode = sql`(${episodes.overlong} = 1 AND EXISTS (SELECT 1 FROM groups g WHERE g.id = ${episodes.groupId} AND g.overlong = 'filter'))`;

/** A page of landed episodes in landing order, resuming after `cursor` (finished_at, id). */
export async function listEpisodes(
  db: D1Database,
  filter: EpisodeFilter,
  after: { finishedAt: string; id: string } | null,
  limit: number,
): Promise<{ episodes: EpisodeRecord[]; transcripts: Map<string, MessageRecord[]> }> {
  const d1 = drizzle(db);
  const conditions = [
    filter.runId === undefined ? undefined : eq(episodes.runId, filter.runId),
    filter.env === undefined ? undefined : eq(episodes.env, filter.env),
    filter.status === undefined ? undefined : eq(episodes.status, filter.status),
    filter.success === undefined ? undefined : eq(episodes.success, filter.success),
    filter.kind === undefined
      ? undefined
      : sql`${episodes.groupId} IN (SELECT id FROM groups WHERE kind = ${filter.kind})`,
    filter.filtered === undefined
      ? undefined
      : filter.filtered
        ? filteredEpisode
        : sql`NOT ${filteredEpisode}`,
    after === null
      ? undefined
      : sql`(${episodes.finishedAt}, ${episodes.id}) > (${after.finishedAt}, ${after.id})`,
  ].filter((c) => c !== undefined);
  const rows = await d1
    .select()
    .from(episodes)
    .where(and(...conditions))
    .orderBy(asc(episodes.finishedAt), asc(episodes.id))
    .limit(limit)
    .all();
  const transcripts = await transcriptsOf(
    db,
    rows.map((r) => r.id),
  );
  return { episodes: rows, transcripts };
}

/**
 * The episodes' messages in order, by episode, from one query whose ids travel as one JSON
 * parameter (however many: D1 binds at most 100 parameters a statement).
 */
export async function transcriptsOf(
  db: D1Database,
  episodeIds: readonly string[],
): Promise<Map<string, MessageRecord[]>> {
  const transcripts = new Map<string, MessageRecord[]>();
  if (episodeIds.length === 0) return transcripts;
  const rows = await drizzle(db)
    .select()
    .from(messages)
    .where(
      sql`${messages.episodeId} IN (SELECT value FROM json_each(${JSON.stringify(episodeIds)}))`,
    )
    .orderBy(asc(messages.episodeId), asc(messages.seq))
    .all();
  for (const m of rows) transcripts.set(m.episodeId, [...(transcripts.get(m.episodeId) ?? []), m]);
  return transcripts;
}

/** The next sequence number of each episode's judge calls (absent: 0), for calls to come. */
export async function nextJudgementSeqs(
  db: D1Database,
  episodeIds: readonly string[],
): Promise<Map<string, number>> {
  const rows = await drizzle(db)
    .select({ episodeId: judgements.episodeId, last: sql<number>`MAX(${judgements.seq})` })
    .from(judgements)
    .where(
      sql`${judgements.episodeId} IN (SELECT value FROM json_each(${JSON.stringify(episodeIds)}))`,
    )
    .groupBy(judgements.episodeId)
    .all();
  return new Map(rows.map((r) => [r.episodeId, Number(r.last) + 1]));
}

/**
 * What the groups given lend their episodes' token samples: where each one's token object is,
 * and its over-long policy (under `mask`, an over-long episode's samples train nothing).
 */
export function groupTokenObjects(db: D1Database, groupIds: readonly string[]) {
  return drizzle(db)
    .select({ id: groups.id, tokenObject: groups.tokenObject, overlong: groups.overlong })
    .from(groups)
    .where(sql`${groups.id} IN (SELECT value FROM json_each(${JSON.stringify(groupIds)}))`)
    .all();
}

/** Where the groups given are in D1 (a group not yet registered has no row): a producer's follow-up. */
export function groupOutcomes(db: D1Database, groupIds: readonly string[]) {
  return drizzle(db)
    .select({ id: groups.id, status: groups.status, uniform: groups.uniform })
    .from(groups)
    .where(sql`${groups.id} IN (SELECT value FROM json_each(${JSON.stringify(groupIds)}))`)
    .all();
}

/** How far a run has come, by group status, from one indexed query. */
export async function runProgress(db: D1Database, runId: string) {
  const rows = await drizzle(db)
    .select({
      status: groups.status,
      groups: sql<number>`COUNT(*)`,
      episodes: sql<number>`SUM(${groups.groupSize})`,
    })
    .from(groups)
    .where(eq(groups.runId, runId))
    .groupBy(groups.status)
    .all();
  return rows;
}

/** Groups of a run at one version (the one leases filter on): in flight, and landed unleased. */
export interface PacingRow {
  version: number;
  in_flight: number;
  unleased: number;
}

/** What a producer paces itself by: the run's rows of the `run_pacing` view, oldest version first. */
export async function runPacing(db: D1Database, runId: string): Promise<PacingRow[]> {
  const rows = await db
    .prepare(
      "SELECT policy_version AS version, in_flight, unleased FROM run_pacing WHERE run_id = ?1 ORDER BY 1",
    )
    .bind(runId)
    .all<PacingRow>();
  return rows.results;
}

/** One row of the `eval_results` view (migrations/0026_eval_results_env_version.sql). */
export interface EvalResultRow {
  run_id: string;
  env: string;
  /** The environment version its groups ran (null: from before versions were recorded). */
  env_version: string | null;
  policy_version: number;
  k: number;
  examples: number;
  episodes: number;
  avg_reward: number;
  avg_success: number;
  pass_at_k: number;
  /** Null when no episode's score named an answer. */
  maj_at_k: number | null;
  /** The run's episodes of this environment and version that no metric counts (failed, unscored, or sampled partly at another version). */
  unmeasured_episodes: number;
}

/** A run's evaluation metrics: by environment, then version, then k. */
export async function evalResults(db: D1Database, runId: string): Promise<EvalResultRow[]> {
  const rows = await db
    .prepare(
      "SELECT * FROM eval_results WHERE run_id = ?1 ORDER BY env, env_version, policy_version, k",
    )
    .bind(runId)
    .all<EvalResultRow>();
  return rows.results;
}
