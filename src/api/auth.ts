/**
 * Bearer tokens by role, from the secret API_TOKENS: `{"<token>": ["producer", "reader"], ...}`,
 * or `{"<token>": {"roles": ["producer"], "max_inflight_groups": 64}}` for a token with a quota.
 * `producer` starts groups and follows them (a group's status, its run's progress), `trainer`
 * leases, acks and releases, `reader` reads (API and dashboard). Tokens are compared in constant time, as SHA-256 digests. With no tokens
 * configured, only local requests are served: the Worker never runs open on the internet.
 */
import type { Context, MiddlewareHandler } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import { z } from "zod";
import { hex, sha256 } from "../utils/digest";
import { ApiError } from "./errors";

/** Who may do what; not to be confused with chat roles (`Role` in the SDK). */
export const ACCESS_ROLES = ["producer", "trainer", "reader"] as const;
export type AccessRole = (typeof ACCESS_ROLES)[number];

const RolesSchema = z.array(z.enum(ACCESS_ROLES)).min(1);

/**
 * A token's grant: its roles, or its roles with a quota: `max_inflight_groups`, the groups it
 * may have in flight at once (its starts past that get a 429 with Retry-After), so one user's
 * run cannot take a shared fleet.
 */
const GrantSchema = z.union([
  RolesSchema.transform((roles) => ({ roles, max_inflight_groups: null })),
  z.strictObject({
    roles: RolesSchema,
    max_inflight_groups: z.number().int().positive().nullable().default(null),
  }),
]);

const TokensSchema = z.record(
  z.string().min(8, "tokens must be at least 8 characters"),
  GrantSchema,
);

interface Grant {
  digest: Uint8Array;
  roles: readonly AccessRole[];
  principal: string;
  /** Groups it may have in flight at once; null: no quota. */
  maxInflightGroups: number | null;
}

export type AuthVariables = {
  /** Who is calling: a digest prefix of their token, or `local` when no tokens are configured. */
  principal: string;
};

const COOKIE = "edgeroll_token";
const LOCAL_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]", "::1"]);

const grantsCache = new WeakMap<object, Promise<Grant[] | null>>();

/** The configured grants, parsed once per env; null when API_TOKENS is not set. */
function grants(env: { API_TOKENS?: string }): Promise<Grant[] | null> {
  let cached = grantsCache.get(env);
  if (cached === undefined) {
    cached = (async () => {
      if (env.API_TOKENS === undefined || env.API_TOKENS.trim() === "") return null;
      const parsed = TokensSchema.safeParse(JSON.parse(env.API_TOKENS));
      if (!parsed.success)
        throw new Error(
          `API_TOKENS is not a {token: [roles] or {roles, max_inflight_groups}} object: ${parsed.error.message}`,
        );
      return Promise.all(
        Object.entries(parsed.data).map(async ([token, grant]) => {
          const digest = await sha256(token);
          return {
            digest,
            roles: grant.roles,
            principal: hex(digest).slice(0, 16),
            maxInflightGroups: grant.max_inflight_groups,
          };
        }),
      );
    })();
    grantsCache.set(env, cached);
  }
  return cached;
}

/** The in-flight quota of the token a principal names; null when it has none. */
export async function quotaOf(
  env: { API_TOKENS?: string },
  principal: string,
): Promise<number | null> {
  const all = await grants(env);
  return all?.find((grant) => grant.principal === principal)?.maxInflightGroups ?? null;
}

/** The grant a presented token matches, checking every grant so timing reveals nothing. */
async function match(token: string, all: readonly Grant[]): Promise<Grant | null> {
  const presented = await sha256(token);
  let found: Grant | null = null;
  for (const grant of all) {
    if (crypto.subtle.timingSafeEqual(presented, grant.digest)) found = grant;
  }
  return found;
}

function presentedToken(c: Context): string | null {
  const header = c.req.header("authorization");
  if (header !== undefined) return /^Bearer\s+(.+)$/i.exec(header)?.[1]?.trim() ?? "";
  return getCookie(c, COOKIE) ?? null;
}

/** Requires one of `roles`; sets the caller's principal for handlers that record who did what. */
export function authorize(
  ...roles: [AccessRole, ...AccessRole[]]
): MiddlewareHandler<{ Bindings: Env; Variables: AuthVariables }> {
  return async (c, next) => {
    const all = await grants(c.env as { API_TOKENS?: string });
    if (all === null) {
      if (!LOCAL_HOSTS.has(new URL(c.req.url).hostname)) {
        throw new ApiError(
          401,
          "unauthorized",
          "API_TOKENS is not configured, so this Worker serves local requests only",
        );
      }
      c.set("principal", "local");
      return next();
    }
    const token = presentedToken(c);
    if (token === null || token === "") {
      throw new ApiError(
        401,
        "unauthorized",
        "missing bearer token: send Authorization: Bearer <token>",
      );
    }
    const grant = await match(token, all);
    if (grant === null) throw new ApiError(401, "unauthorized", "unknown bearer token");
    if (!roles.some((role) => grant.roles.includes(role))) {
      const wanted = roles.length === 1 ? `the ${roles[0]} role` : `a ${roles.join(" or ")} role`;
      throw new ApiError(
        403,
        "forbidden",
        `this token lacks ${wanted} (it has: ${grant.roles.join(", ")})`,
        { needs_one_of: roles, has: grant.roles },
      );
    }
    c.set("principal", grant.principal);
    return next();
  };
}

/**
 * Browsers cannot send headers from a link: `/?token=...` stores the token in an HttpOnly
 * cookie and redirects to the same page without it, so it does not linger in the address bar.
 */
export const tokenFromQuery: MiddlewareHandler = async (c, next) => {
  const token = c.req.query("token");
  if (token === undefined) return next();
  const url = new URL(c.req.url);
  url.searchParams.delete("token");
  setCookie(c, COOKIE, token, {
    httpOnly: true,
    sameSite: "Strict",
    path: "/",
    secure: url.protocol === "https:",
  });
  return c.redirect(`${url.pathname}${url.search}`, 303);
};
