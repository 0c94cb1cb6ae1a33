/**
 * A finished group's tokens on their way out: one packed object for the TOKENS bucket, written
 * before the group's D1 rows, and the little D1 keeps of them for people's queries (each turn's
 * logprob sum, new prompt tokens and prefix break, each episode's token mode, breaks and
 * samples). Idempotent like the D1 landing: the object's key and bytes depend only on the group.
 */
import { errorMessage } from "../sdk";
import type { TokenMode } from "../tokens/token-mode";
import { encodeTokenObject, tokenObjectKey } from "../tokens/token-object";
import { logprobSum, prefixBreaks, type TurnTokens } from "../tokens/turn-tokens";
import type { TokenPolicy } from "./generation/token-policy";
import type { GroupSpec } from "./group-spec";
import type { LandedVersions } from "./landed-versions";
import type { LandingOutcome } from "./landing-outcome";
import type { TokensTable } from "./storage/tokens";

export interface TurnTokenSummary {
  model: string | null;
  logprobSum: number;
  newPromptTokens: number;
  prefixBreak: boolean;
}

export interface EpisodeTokenSummary {
  mode: TokenMode;
  /** Why it is not token-exact; null when it is. */
  reason: string | null;
  prefixBreaks: number;
  sampleCount: number;
  /** Mean `student - teacher` logprob over sampled tokens; null unless a teacher scored it. */
  reverseKl: number | null;
  /** Tokens the teacher prefilled to score it (every sample's length); 0 unless it did. */
  teacherTokens: number;
  turns: Map<number, TurnTokenSummary>;
}

export interface TokenLanding {
  /** The token object for the TOKENS bucket; null when no episode has exact tokens. */
  object: { key: string; bytes: Uint8Array } | null;
  episodes: Map<number, EpisodeTokenSummary>;
}

/** The reverse KL estimate over an episode's sampled tokens, once the teacher scored them all. */
export function reverseKl(turns: readonly TurnTokens[]): number | null {
  let sum = 0;
  let count = 0;
  for (const turn of turns) {
    if (turn.teacherLogprobs === undefined) return null;
    for (let i = 0; i < turn.logprobs.length; i++) {
      sum += (turn.logprobs[i] as number) - (turn.teacherLogprobs[i] as number);
      count++;
    }
  }
  return count > 0 ? sum / count : null;
}

/**
 * The tokens a teacher was sent for the episode: each trainer sample whole (episodeSamples'
 * merge-or-split rule: a sample starts at the first turn and at each prefix break, with that
 * turn's whole prompt), or 0 unless the teacher scored every turn.
 */
export function teacherTokens(turns: readonly TurnTokens[]): number {
  let tokens = 0;
  for (const [i, turn] of turns.entries()) {
    if (turn.teacherLogprobs === undefined) return 0;
    if (i === 0 || !turn.consistent) tokens += turn.prefixLength;
    tokens += turn.promptTail.length + turn.completionIds.length;
  }
  return tokens;
}

/** What a group lands of its tokens; null for a group whose token policy keeps none (`"off"`). */
export function tokenLanding(
  spec: GroupSpec,
  store: TokensTable,
  policy: TokenPolicy,
  versions: LandedVersions | null = null,
): TokenLanding | null {
  if (!policy.land) return null;
  const recorded = store.episodes(spec.request.group_size);
  const episodes = new Map<number, EpisodeTokenSummary>();
  for (const { idx, turns } of recorded) {
    if (versions !== null) for (const t of turns) t.versions = versions.segments(idx, t.turn);
    const mode = store.mode(idx);
    const breaks = prefixBreaks(turns);
    episodes.set(idx, {
      mode,
      reason: store.reason(idx),
      prefixBreaks: breaks,
      // Merge or split: the first turn starts a sample, and so does each break.
      sampleCount: turns.length > 0 ? breaks + 1 : 0,
      reverseKl: reverseKl(turns),
      teacherTokens: teacherTokens(turns),
      turns: new Map(
        turns.map((t) => [
          t.turn,
          {
            model: t.model,
            logprobSum: logprobSum(t),
            newPromptTokens: t.promptTail.length,
            prefixBreak: !t.consistent,
          },
        ]),
      ),
    });
  }
  const exact = recorded.some((e) => e.turns.length > 0);
  return {
    object: exact
      ? { key: tokenObjectKey(spec.groupId), bytes: encodeTokenObject(spec.groupId, recorded) }
      : null,
    episodes,
  };
}

/** Puts the token object; an error is an answer, retried with the landing. */
export async function storeTokenObject(
  bucket: R2Bucket,
  landing: TokenLanding,
): Promise<LandingOutcome> {
  if (landing.object === null) return { ok: true };
  try {
    await bucket.put(landing.object.key, landing.object.bytes, {
      httpMetadata: { contentType: "application/vnd.edgeroll.tokens" },
    });
    return { ok: true };
  } catch (error) {
    return { ok: false, error: `R2: ${errorMessage(error)}` };
  }
}
