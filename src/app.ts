/** The route table: every route, the body limit, `notFound` and `onError` on one page. */
import { type Context, Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { except } from "hono/combine";
import { type AuthVariables, authorize, tokenFromQuery } from "./api/auth";
import { batchRoutes } from "./api/batches";
import { datasetRoutes } from "./api/datasets";
import { environmentRoutes } from "./api/environments";
import { episodeRoutes } from "./api/episodes";
import { ApiError, renderError } from "./api/errors";
import { groupRoutes } from "./api/groups";
import { hostRoutes } from "./api/hosts";
import { jsonBody } from "./api/json-body";
import { rescoreRoutes } from "./api/rescore";
import { runRoutes } from "./api/runs";
import { utf8Body } from "./api/utf8-body";
import { dashboardRoutes } from "./dashboard/routes";
import { producerRoutes } from "./producer/routes";
import { errorBody } from "./views/error-body";
import { healthView } from "./views/responses";

/** Requests carry one example and its settings; anything larger is a mistake or an attack. */
export const MAX_BODY_BYTES = 1024 * 1024;

/**
 * A dataset push is the JSONL file itself, up to 100 MB (src/datasets/dataset-wire.ts), checked
 * line by line as it streams into R2: the JSON body's limit, its UTF-8 check and its
 * content-type do not apply, and neither may read the whole body first.
 */
const DATASET_PATHS = /^\/v1\/datasets\/[^/]+$/;
const isDatasetPush = (c: Context) => c.req.method === "POST" && DATASET_PATHS.test(c.req.path);

/** A producer follows the groups it starts: the `status_url` it was handed. */
const GROUP_PATHS = /^\/v1\/groups\/[^/]+$/;
/** Producer and trainer both follow their run: its progress and pacing, policy, producer, budget. */
const RUN_PATHS = /^\/v1\/runs\/[^/]+(\/policy|\/producer|\/budget)?$/;
/** A run's producer starts its groups: producers start and stop it. */
const PRODUCER_PATH = "/v1/runs/:id/producer";
/** Every caller may list the environments it can name (a trainer filters leases by them). */
const ENVIRONMENT_LIST = "/v1/environments";
/** ...and the datasets: a trainer checks what it pushed, a producer names them in runs. */
const DATASET_READS = /^\/v1\/datasets(\/[^/]+)?$/;
/** Where a remote environment is served is for those who start groups in it. */
const ENVIRONMENT_PATHS = /^\/v1\/environments\/[^/]+$/;
const readers = authorize("reader");
const groupFollowers = authorize("reader", "producer");
const producers = authorize("producer");
const anyRole = authorize("reader", "producer", "trainer");

export const app = new Hono<{ Bindings: Env; Variables: AuthVariables }>()
  .use(
    except(
      isDatasetPush,
      bodyLimit({
        maxSize: MAX_BODY_BYTES,
        onError: () => {
          throw new ApiError(413, "payload_too_large", `request body over ${MAX_BODY_BYTES} bytes`);
        },
      }),
      utf8Body,
    ),
  )
  // Who may do what: producers start groups, trainers take batches, readers read.
  .on("POST", ["/v1/groups", "/v1/environments/*"], producers)
  .use("/v1/batches/*", authorize("trainer"))
  .on(["POST", "DELETE"], PRODUCER_PATH, producers)
  // The trainer says which policy it trains: the run's version, its lag limit, a pause.
  .on("POST", "/v1/runs/:id/policy", authorize("trainer"))
  // ...and what the run may spend.
  .on("POST", "/v1/runs/:id/budget", authorize("trainer"))
  // ...and, host by host, which version each inference host serves (a rolling weight sync).
  .on("POST", "/v1/hosts", authorize("trainer"))
  // ...and has a landed group's judged episodes graded again, once the judge is back.
  .on("POST", "/v1/groups/:id/rescore", authorize("trainer"))
  // ...and the datasets its runs sample from.
  .on("POST", "/v1/datasets/*", authorize("trainer"))
  .on("GET", "/v1/*", (c, next) => {
    const path = c.req.path;
    const allowed =
      RUN_PATHS.test(path) || path === ENVIRONMENT_LIST || DATASET_READS.test(path)
        ? anyRole
        : GROUP_PATHS.test(path)
          ? groupFollowers
          : ENVIRONMENT_PATHS.test(path)
            ? producers
            : readers;
    return allowed(c, next);
  })
  .on("GET", ["/", "/groups/*", "/episodes/*"], tokenFromQuery, authorize("reader"))
  .use("/v1/*", except(isDatasetPush, jsonBody))
  .get("/healthz", (c) => c.json(healthView()))
  .route("/v1", environmentRoutes)
  .route("/v1", groupRoutes)
  .route("/v1", rescoreRoutes)
  .route("/v1", episodeRoutes)
  .route("/v1", runRoutes)
  .route("/v1", producerRoutes)
  .route("/v1", batchRoutes)
  .route("/v1", hostRoutes)
  .route("/v1", datasetRoutes)
  .route("/", dashboardRoutes)
  .notFound((c) => c.json(errorBody("not_found", `no route ${c.req.method} ${c.req.path}`), 404))
  .onError(renderError);
