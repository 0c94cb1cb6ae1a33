/** A run's progress at a glance: one cheap query instead of polling every group. */
import { Hono } from "hono";
import { runProgress } from "../db/queries";

export const runRoutes = new Hono<{ Bindings: Env }>().get("/runs/:id", async (c) => {
  const rows = await runProgress(c.env.DB, c.req.param("id"));
  const count = (status: string) =>
    rows.find((r) => r.status === status) ?? { groups: 0, episodes: 0 };
  const total = rows.reduce((n, r) => n + r.groups, 0);
  return c.json({
    run_id: c.req.param("id"),
    groups: {
      total,
      running: count("running").groups,
      landed: count("landed").groups,
      failed: count("failed").groups,
    },
    episodes: {
      total: rows.reduce((n, r) => n + Number(r.episodes), 0),
      landed: Number(count("landed").episodes) + Number(count("failed").episodes),
    },
  });
});
