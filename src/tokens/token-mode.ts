/**
 * Whether an episode is token-exact. `exact`: every sampled turn has the host's token ids and
 * logprobs. `none`: some turn came without them (the host does not send them, refused the
 * fields, or the group asked for `tokens: "off"`), and the episode says why.
 */
import { z } from "zod";

export const TokenModeSchema = z.enum(["exact", "none"]);
export type TokenMode = z.infer<typeof TokenModeSchema>;

/**
 * As a lease serves it: `missing` when D1 says `exact` but the group's token object cannot be
 * read from the bucket any more (deleted since, or unreadable) — never silently `none`.
 */
export type ServedTokenMode = TokenMode | "missing";
