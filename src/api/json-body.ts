/**
 * A POST body is JSON, said so by its `content-type`. Hono's validator reads a body of any other
 * type as `{}`, so `curl -d '{...}'` (which sends `application/x-www-form-urlencoded`) would get
 * every field reported missing; this says instead that the body was not read as JSON, and why.
 */
import type { MiddlewareHandler } from "hono";
import { ApiError } from "./errors";

const JSON_TYPE = /^application\/([\w.-]+\+)?json\s*(;|$)/i;

export const jsonBody: MiddlewareHandler = async (c, next) => {
  if (c.req.method !== "POST") return next();
  const type = c.req.header("content-type");
  if (type !== undefined && JSON_TYPE.test(type)) return next();
  // An empty body (an ack, a release) is not a body of the wrong type.
  if ((await c.req.arrayBuffer()).byteLength === 0) return next();
  const sent = type === undefined ? "no content-type" : `content-type "${type}"`;
  const curl = type?.startsWith("application/x-www-form-urlencoded")
    ? " (what curl -d sends unless told otherwise)"
    : "";
  throw new ApiError(
    415,
    "unsupported_media_type",
    `the body was not read as JSON: it came with ${sent}${curl}; send it with the header content-type: application/json`,
  );
};
