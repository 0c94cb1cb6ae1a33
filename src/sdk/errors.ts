/** Errors the SDK raises; each names the hook or field at fault so a failed episode explains itself. */
import { type ZodError, z } from "zod";

/** Renders a zod error as one readable line per problem, each naming its field. */
export function describeZodError(error: ZodError): string {
  return z.prettifyError(error).replaceAll("\n  → ", ": ").replaceAll("✖ ", "").trim();
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
