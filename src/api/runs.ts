/** A run's progress at a glance: one cheap query instead of polling every group. */
import { Hono } from "hono";
import { runProgress } from "../db/queries";
import { runProgressView } from "../views/responses";

export const runRoutes = new Hono<{ Bindings: Env }>().get("/runs/:id", async (c) => {
  const id = c.req.param("id");
  return c.json(runProgressView(id, await runProgress(c.env.DB, id)));
});
