/** The route table: every route, the body limit, `notFound` and `onError` on one page. */
import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { type AuthVariables, authorize, tokenFromQuery } from "./api/auth";
import { batchRoutes } from "./api/batches";
import { environmentRoutes } from "./api/environments";
import { episodeRoutes } from "./api/episodes";
import { ApiError, renderError } from "./api/errors";
import { groupRoutes } from "./api/groups";
import { hostRoutes } from "./api/hosts";
import { jsonBody } from "./api/json-body";
import { runRoutes } from "./api/runs";
import { utf8Body } from "./api/utf8-body";
import { dashboardRoutes } from "./dashboard/routes";
import { producerRoutes } from "./producer/routes";
import { errorBody } from "./views/error-body";
import { healthView } from "./views/responses";

/** Requests carry one example and its settings; anything larger is a mistake or an attack. */
export const MAX_BODY_BYTES = 1024 * 1024;

/** A producer follows the groups it starts: the `status_url` it was handed. */
const GROUP_PATHS = /^\/v1\/groups\/[^/]+$/;
/** Producer and trainer both follow their run: its progress and pacing, policy and producer. */
const RUN_PATHS = /^\/v1\/runs\/[^/]+(\/policy|\/producer)?$/;
/** A run's producer starts its groups: producers start and stop it. */
const PRODUCER_PATH = "/v1/runs/:id/producer";
/** Every caller may list the environments it can name (a trainer filters leases by them). */
const ENVIRONMENT_LIST = "/v1/environments";
/** Where a remote environment is served is for those who start groups in it. */
const ENVIRONMENT_PATHS = /^\/v1\/environments\/[^/]+$/;
const readers = authorize("reader");
const groupFollowers = authorize("reader", "producer");
const producers = authorize("producer");
const anyRole = authorize("reader", "producer", "trainer");

export const app = new Hono<{ Bindings: Env; Variables: AuthVariables }>()
  .use(
    bodyLimit({
      maxSize: MAX_BODY_BYTES,
      onError: () => {
        throw new ApiError(413, "payload_too_large", `request body over ${MAX_BODY_BYTES} bytes`);
      },
    }),
  )
  .use(utf8Body)
  // Who may do what: producers start groups, trainers take batches, readers read.
  .on("POST", ["/v1/groups", "/v1/environments/*"], producers)
  .use("/v1/batches/*", authorize("trainer"))
  .on(["POST", "DELETE"], PRODUCER_PATH, producers)
  // The trainer says which policy it trains: the run's version, its lag limit, a pause.
  .on("POST", "/v1/runs/:id/policy", authorize("trainer"))
  // ...and, host by host, which version each inference host serves (a rolling weight sync).
  .on("POST", "/v1/hosts", authorize("trainer"))
  .on("GET", "/v1/*", (c, next) => {
    const path = c.req.path;
    const allowed =
      RUN_PATHS.test(path) || path === ENVIRONMENT_LIST
        ? anyRole
        : GROUP_PATHS.test(path)
          ? groupFollowers
          : ENVIRONMENT_PATHS.test(path)
            ? producers
            : readers;
    return allowed(c, next);
  })
  .on("GET", ["/", "/groups/*", "/episodes/*"], tokenFromQuery, authorize("reader"))
  .use("/v1/*", jsonBody)
  .get("/healthz", (c) => c.json(healthView()))
  .route("/v1", environmentRoutes)
  .route("/v1", groupRoutes)
  .route("/v1", episodeRoutes)
  .route("/v1", runRoutes)
  .route("/v1", producerRoutes)
  .route("/v1", batchRoutes)
  .route("/v1", hostRoutes)
  .route("/", dashboardRoutes)
  .notFound((c) => c.json(errorBody("not_found", `no route ${c.req.method} ${c.req.path}`), 404))
  .onError(renderError);
