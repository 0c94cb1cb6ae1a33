/** The edgeroll Worker: the HTTP API and, as the engine grows, its Durable Objects and entrypoints. */
import { Hono } from "hono";
import { ENVIRONMENT_NAMES } from "./environments/registry";

const app = new Hono<{ Bindings: Env }>();

app.get("/healthz", (c) => c.json({ ok: true }));
app.get("/v1/environments", (c) => c.json({ environments: ENVIRONMENT_NAMES }));

export default app satisfies ExportedHandler<Env>;
