/**
 * One error body for the whole API: `{error: {code, message, details?}}`. A client branches on
 * the stable `code` and shows the `message`, which a person understands.
 */
import { z } from "zod";

export const ErrorCodeSchema = z.enum([
  "unauthorized",
  "forbidden",
  "invalid_request",
  "invalid_encoding",
  "malformed_json",
  "payload_too_large",
  "unsupported_media_type",
  "not_found",
  "example_rejected",
  "environment_unavailable",
  "tokenizer_mismatch",
  "policy_version_regressed",
  "policy_too_stale",
  "env_version_mismatch",
  "producer_running",
  "group_running",
  "group_leased",
  "rescore_conflict",
  "score_unavailable",
  "tokenizer_check_unavailable",
  "build_failed",
  "idempotency_conflict",
  "batch_settled",
  "invalid_dataset",
  "dataset_conflict",
  "budget_exhausted",
  "quota_exceeded",
  "internal_error",
]);
export type ErrorCode = z.infer<typeof ErrorCodeSchema>;

export const ErrorBodySchema = z.object({
  error: z.object({
    code: ErrorCodeSchema,
    message: z.string(),
    /**
     * For `invalid_request` and `example_rejected`: each problem, by the path of the field it is
     * in; for `invalid_dataset`, by its line.
     */
    details: z.unknown().optional(),
  }),
});
export type ErrorBody = z.infer<typeof ErrorBodySchema>;

export function errorBody(code: ErrorCode, message: string, details?: unknown): ErrorBody {
  return { error: { code, message, ...(details === undefined ? {} : { details }) } };
}
