/** Routes for landed episodes: one by id, or pages of them for export and analysis. */
import { Hono } from "hono";
import { z } from "zod";
import { findEpisode, groupTokenObjects, listEpisodes } from "../db/queries";
import { EndStateSchema } from "../domain/episode-outcomes";
import { GroupKindSchema } from "../domain/group-options";
import { TOKEN_ENCODINGS } from "../tokens/sample-encoding";
import { INCLUDE } from "../trainer/lease-request";
import { readTokenObjects } from "../trainer/token-samples";
import { episodeView } from "../views/episode-view";
import { episodeListItemView, episodePageView } from "../views/responses";
import { ApiError } from "./errors";
import { validated } from "./validated";

const ListQuerySchema = z.strictObject({
  run_id: z.string().min(1).optional(),
  env: z.string().min(1).optional(),
  status: EndStateSchema.optional(),
  success: z.stringbool().optional(),
  /** Only training groups' episodes, or only evaluations'. */
  kind: GroupKindSchema.optional(),
  /**
   * `false` leaves out the over-long episodes a group's `overlong: "filter"` keeps out of leases
   * (what `edgeroll export` asks for); `true` lists only those.
   */
  filtered: z.stringbool().optional(),
  cursor: z.string().optional(),
  limit: z.coerce.number().int().min(1).max(500).default(100),
  include: z
    .string()
    .default("messages,per_turn")
    .transform((s) => s.split(",").filter(Boolean))
    .pipe(z.array(z.enum(INCLUDE))),
  token_encoding: z.enum(TOKEN_ENCODINGS).default("json"),
});

/** Cursors are opaque to clients: the last row's (finished_at, id), base64-encoded. */
function decodeCursor(cursor: string | undefined): { finishedAt: string; id: string } | null {
  if (cursor === undefined) return null;
  try {
    const [finishedAt, id] = JSON.parse(atob(cursor)) as [string, string];
    if (typeof finishedAt === "string" && typeof id === "string") return { finishedAt, id };
  } catch {
    // fall through
  }
  throw new ApiError(400, "invalid_request", "cursor: not a cursor this API returned");
}

export const episodeRoutes = new Hono<{ Bindings: Env }>()
  .get("/episodes", validated("query", ListQuerySchema), async (c) => {
    const query = c.req.valid("query");
    const page = await listEpisodes(
      c.env.DB,
      {
        runId: query.run_id,
        env: query.env,
        status: query.status,
        success: query.success,
        kind: query.kind,
        filtered: query.filtered,
      },
      decodeCursor(query.cursor),
      query.limit,
    );
    const last = page.episodes.at(-1);
    const tokenGroups = query.include.includes("tokens")
      ? await groupTokenObjects(c.env.DB, [...new Set(page.episodes.map((e) => e.groupId))])
      : null;
    const turns = tokenGroups && (await readTokenObjects(c.env.TOKENS, tokenGroups));
    const policies = new Map(tokenGroups?.map((g) => [g.id, g.overlong]));
    const episodes = page.episodes.map((e) =>
      episodeListItemView(
        e,
        page.transcripts.get(e.id) ?? [],
        query.include,
        turns && {
          group: turns.get(e.groupId),
          encoding: query.token_encoding,
          overlong: policies.get(e.groupId) ?? "keep",
        },
      ),
    );
    const next =
      last && page.episodes.length === query.limit
        ? btoa(JSON.stringify([last.finishedAt, last.id]))
        : null;
    return c.json(episodePageView(episodes, next));
  })
  .get("/episodes/:id", async (c) => {
    const id = c.req.param("id");
    const found = await findEpisode(c.env.DB, id);
    if (found === undefined) {
      throw new ApiError(
        404,
        "not_found",
        `no landed episode ${id} (episodes appear once their group lands)`,
      );
    }
    return c.json(episodeView(found));
  });
