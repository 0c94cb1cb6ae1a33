/** The API's errors: thrown in handlers, rendered as the one error body (views/error-body.ts). */
import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { z } from "zod";
import { describeZodError } from "../sdk";
import { type ErrorCode, errorBody } from "../views/error-body";

/** Thrown anywhere in a handler; rendered by `onError`. */
export class ApiError extends Error {
  override name = "ApiError";
  constructor(
    readonly status: ContentfulStatusCode,
    readonly code: ErrorCode,
    message: string,
    readonly details?: unknown,
    /** Response headers it carries (a 429's Retry-After). */
    readonly headers?: Record<string, string>,
  ) {
    super(message);
  }
}

export function invalidRequest(error: Pick<z.core.$ZodError, "issues">): ApiError {
  return new ApiError(
    400,
    "invalid_request",
    describeZodError(error),
    error.issues.map((i) => ({ path: i.path.map(String).join("."), message: i.message })),
  );
}

export function renderError(error: Error, c: Context) {
  if (error instanceof ApiError)
    return c.json(
      errorBody(error.code, error.message, error.details),
      error.status,
      error.headers ?? {},
    );
  if (error instanceof HTTPException) {
    // Hono's own refusals: a body that is not JSON, or one over the size limit.
    const code =
      error.status === 413
        ? "payload_too_large"
        : error.status === 400
          ? "malformed_json"
          : "invalid_request";
    return c.json(errorBody(code, error.message || "bad request"), error.status);
  }
  console.error("unhandled error", error);
  return c.json(errorBody("internal_error", "internal error; see the Worker logs"), 500);
}
