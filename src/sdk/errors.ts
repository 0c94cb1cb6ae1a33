/** Errors the SDK raises; each names the hook or field at fault so a failed episode explains itself. */
import { z } from "zod";

/** `messages[0].role`-style path of a zod issue. */
function issuePath(path: readonly PropertyKey[]): string {
  return path
    .map((key, i) => (typeof key === "number" ? `[${key}]` : `${i === 0 ? "" : "."}${String(key)}`))
    .join("");
}

/** Renders a zod error on one line, each problem naming its field: `score: expected number`. */
export function describeZodError(error: Pick<z.core.$ZodError, "issues">): string {
  return error.issues
    .map((issue) => {
      const path = issuePath(issue.path);
      return path === "" ? issue.message : `${path}: ${issue.message}`;
    })
    .join("; ");
}

/** One line for any thrown value; a zod error (environments validate with zod) lists its fields. */
export function errorMessage(error: unknown): string {
  if (error instanceof z.ZodError) return `${error.name}: ${describeZodError(error)}`;
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/** An environment hook returned something that breaks the contract (bad messages, NaN reward...). */
export class EnvironmentContractError extends Error {
  override name = "EnvironmentContractError";
  constructor(
    readonly hook: string,
    detail: string,
    options?: ErrorOptions,
  ) {
    super(`${hook}: ${detail}`, options);
  }
}

/** A transcript handed to a replaying environment does not end with the action being stepped. */
export class ReplayInvariantError extends Error {
  override name = "ReplayInvariantError";
}

/** A supervised row cannot be built (reserved ChatML tokens, no target). */
export class SftError extends Error {
  override name = "SftError";
}

/** One field of an example an environment cannot play, by its path in the row (`metadata.secret`). */
export interface ExampleProblem {
  /** Dotted, as the row spells it (`metadata.orders.0.id`); empty for the example as a whole. */
  path: string;
  message: string;
}

/**
 * An environment refuses an example before anything runs: its declared `exampleSchema` does not
 * hold (or a remote environment's `/start` said so), each problem naming its field.
 */
export class ExampleRejectedError extends Error {
  override name = "ExampleRejectedError";
  constructor(
    readonly problems: readonly ExampleProblem[],
    options?: ErrorOptions,
  ) {
    super(
      problems.map((p) => (p.path === "" ? p.message : `${p.path}: ${p.message}`)).join("; "),
      options,
    );
  }
}

/** No environment is registered under the requested name. */
export class UnknownEnvironmentError extends Error {
  override name = "UnknownEnvironmentError";
  constructor(
    readonly envName: string,
    readonly known: readonly string[],
  ) {
    super(`unknown environment "${envName}" (registered: ${known.join(", ") || "none"})`);
  }
}
