/**
 * Token-exact samples for trainers: each leased group's token object read from the TOKENS
 * bucket, each episode's turns merged or split into samples, each sampled token given the
 * advantage its turn earned (the turn's own under per-turn credit, else the episode's).
 */
import type { EpisodeRecord, GroupRecord } from "../db/queries";
import { encodeSample, type TokenEncoding } from "../tokens/sample-encoding";
import { episodeSamples } from "../tokens/samples";
import { decodeTokenObject } from "../tokens/token-object";
import type { TurnTokens } from "../tokens/turn-tokens";

/** Each group's recorded turns by episode index; groups without a token object are absent. */
export type GroupTurns = Map<string, Map<number, TurnTokens[]>>;

export async function readTokenObjects(
  bucket: R2Bucket,
  groups: readonly Pick<GroupRecord, "id" | "tokenObject">[],
): Promise<GroupTurns> {
  const read = await Promise.all(
    groups.map(async (g) => {
      if (g.tokenObject === null) return null;
      const object = await bucket.get(g.tokenObject);
      // Written before the group's rows: missing means deleted since, which the trainer sees.
      if (object === null) return null;
      const decoded = decodeTokenObject(new Uint8Array(await object.arrayBuffer()));
      return [g.id, new Map(decoded.episodes.map((e) => [e.idx, e.turns]))] as const;
    }),
  );
  return new Map(read.filter((r) => r !== null));
}

/** An episode's token fields in the batch format. */
export function episodeTokens(
  episode: EpisodeRecord,
  turns: readonly TurnTokens[] | undefined,
  encoding: TokenEncoding,
) {
  const exact = episode.tokenMode === "exact" && turns !== undefined;
  const advantageOf = (turn: number) => episode.perTurnAdvantages?.[turn] ?? episode.advantage ?? 0;
  return {
    token_mode: exact ? ("exact" as const) : ("none" as const),
    prefix_breaks: episode.prefixBreaks,
    samples: exact
      ? episodeSamples(turns, advantageOf).map((sample) => encodeSample(sample, encoding))
      : [],
  };
}
