/** The route table: every route, the body limit, `notFound` and `onError` on one page. */
import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { dashboardRoutes } from "../dashboard/routes";
import { environmentNames } from "../environments/registry";
import { batchRoutes } from "./batches";
import { episodeRoutes } from "./episodes";
import { ApiError, errorBody, renderError } from "./errors";
import { groupRoutes } from "./groups";

/** Requests carry one example and its settings; anything larger is a mistake or an attack. */
export const MAX_BODY_BYTES = 1024 * 1024;

export const app = new Hono<{ Bindings: Env }>()
  .use(
    bodyLimit({
      maxSize: MAX_BODY_BYTES,
      onError: () => {
        throw new ApiError(413, "payload_too_large", `request body over ${MAX_BODY_BYTES} bytes`);
      },
    }),
  )
  .get("/healthz", (c) => c.json({ ok: true }))
  .get("/v1/environments", (c) => c.json({ environments: environmentNames() }))
  .route("/v1", groupRoutes)
  .route("/v1", episodeRoutes)
  .route("/v1", batchRoutes)
  .route("/", dashboardRoutes)
  .notFound((c) => c.json(errorBody("not_found", `no route ${c.req.method} ${c.req.path}`), 404))
  .onError(renderError);
