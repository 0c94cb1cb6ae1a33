/** Refuses request bodies that are not valid UTF-8, instead of storing replacement characters. */
import type { MiddlewareHandler } from "hono";
import { ApiError } from "./errors";

const strict = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

export const utf8Body: MiddlewareHandler = async (c, next) => {
  if (c.req.method === "POST" || c.req.method === "PUT") {
    try {
      strict.decode(await c.req.arrayBuffer());
    } catch {
      throw new ApiError(400, "invalid_encoding", "the request body is not valid UTF-8");
    }
  }
  return next();
};
