/**
 * A request's JSON body or query checked by its zod schema, refused as every route refuses bad
 * input: a 400 `invalid_request` naming each field (`invalidRequest`).
 */
import { zValidator } from "@hono/zod-validator";
import type { ValidationTargets } from "hono";
import type { ZodType } from "zod";
import { invalidRequest } from "./errors";

export function validated<Target extends keyof ValidationTargets, Schema extends ZodType>(
  target: Target,
  schema: Schema,
) {
  return zValidator(target, schema, (result) => {
    if (!result.success) throw invalidRequest(result.error);
  });
}
