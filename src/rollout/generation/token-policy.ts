/**
 * How a group deals with token ids and logprobs, derived once from its request (`tokens: "off" |
 * "auto" | "required"`, and token-in generation, which requires them) and used by the turn (what
 * to ask the host, what an answer without them means) and by the landing (what to keep).
 */
import type { TokenFields } from "../../inference/token-fields";
import type { TokenMode } from "../../tokens/token-mode";
import type { StartGroupRequest } from "../group-spec";
import { END, type EpisodeEnd, failed } from "../outcomes";
import type { TurnTokenRecord } from "../storage/group-storage";

/** What a turn records of its tokens, or the end of an episode that cannot go on without them. */
export type TurnTokens = TurnTokenRecord | { kind: "end"; end: EpisodeEnd };

export interface TokenPolicy {
  /** Whether the next generation of an episode that is `mode` asks the host for tokens. */
  ask(mode: TokenMode): boolean;
  /** A host that refuses the token fields is asked again without them. */
  retryWithout: boolean;
  /** What the turn records of what the host sent (`fields`: null when it was not asked). */
  record(fields: TokenFields | null, sampling: { temperature: number; topP: number }): TurnTokens;
  /** The end of an episode whose host refused the token fields; null if it goes on without. */
  onRefused(message: string): EpisodeEnd | null;
  /** The group lands a token object, and each episode's token mode. */
  land: boolean;
  /** Token-in: each prompt is built from ids, its exact length known before it is sent. */
  promptsFromIds: boolean;
}

const exactOr = (
  fields: TokenFields | null,
  sampling: { temperature: number; topP: number },
  otherwise: (why: string | null) => TurnTokens,
): TurnTokens =>
  fields?.kind === "exact"
    ? { kind: "exact", host: fields.tokens, sampling }
    : otherwise(fields?.kind === "missing" ? fields.problem : null);

export function tokenPolicyOf(
  request: Pick<StartGroupRequest, "tokens" | "generation">,
): TokenPolicy {
  const fromIds = request.generation === "tokens";
  switch (request.tokens) {
    case "off":
      return {
        ask: () => false,
        retryWithout: false,
        record: () => ({ kind: "off" }),
        onRefused: () => null,
        land: false,
        promptsFromIds: false,
      };
    case "auto":
      return {
        // Asked for until the host shows it will not send them.
        ask: (mode) => mode === "exact",
        retryWithout: true,
        record: (fields, sampling) =>
          exactOr(fields, sampling, (why) => ({
            kind: "inexact",
            reason: why ?? "the host sent no token fields",
          })),
        onRefused: () => null,
        land: true,
        promptsFromIds: false,
      };
    case "required":
      return {
        ask: () => true,
        retryWithout: false,
        record: (fields, sampling) =>
          exactOr(fields, sampling, (why) => {
            const missing = why ?? "the host was not asked for tokens";
            const detail = fromIds
              ? `${missing}; generation "tokens" builds each prompt from them`
              : `${missing}; this group asks for tokens: "required" (use "auto" to go on without them)`;
            return { kind: "end", end: failed(END.tokens_unavailable, detail) };
          }),
        onRefused: (message) =>
          failed(
            END.tokens_unavailable,
            `the host refused the token fields: ${message}; this group asks for tokens: "required"`,
          ),
        land: true,
        promptsFromIds: fromIds,
      };
  }
}
