/** Reads of landed groups and episodes from D1. */
import { asc, eq } from "drizzle-orm";
import { drizzle } from "drizzle-orm/d1";
import { episodes, groups, messages } from "./schema";

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

export async function findEpisode(
  db: D1Database,
  id: string,
): Promise<{ episode: EpisodeRecord; messages: MessageRecord[] } | undefined> {
  const d1 = drizzle(db);
  const [found, rows] = await d1.batch([
    d1.select().from(episodes).where(eq(episodes.id, id)),
    d1.select().from(messages).where(eq(messages.episodeId, id)).orderBy(asc(messages.seq)),
  ]);
  const episode = found[0];
  return episode ? { episode, messages: rows } : undefined;
}
