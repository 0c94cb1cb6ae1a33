/**
 * Token-exact samples for trainers: each leased group's token object read from the TOKENS
 * bucket, each episode's turns merged or split into samples, each sampled token given the
 * advantage its turn earned (the turn's own under per-turn credit, else the episode's).
 */
import type { EpisodeRecord, GroupRecord } from "../db/queries";
import { errorMessage } from "../sdk";
import { encodeSample, type TokenEncoding } from "../tokens/sample-encoding";
import { episodeSamples } from "../tokens/samples";
import type { ServedTokenMode } from "../tokens/token-mode";
import { decodeTokenObject } from "../tokens/token-object";
import type { TurnTokens } from "../tokens/turn-tokens";

/** A group's recorded turns by episode index, or why its token object could not be read. */
export type GroupTokens = { turns: Map<number, TurnTokens[]> } | { missing: string };

/** The token objects of the groups that have one, by group id. */
export type GroupTurns = Map<string, GroupTokens>;

async function readOne(bucket: R2Bucket, key: string): Promise<GroupTokens> {
  try {
    const object = await bucket.get(key);
    // Written before the group's rows, so absent means deleted since.
    if (object === null) return { missing: `the token object ${key} is not in the TOKENS bucket` };
    const decoded = decodeTokenObject(new Uint8Array(await object.arrayBuffer()));
    return { turns: new Map(decoded.episodes.map((e) => [e.idx, e.turns])) };
  } catch (error) {
    return { missing: `the token object ${key} could not be read: ${errorMessage(error)}` };
  }
}

export async function readTokenObjects(
  bucket: R2Bucket,
  groups: readonly Pick<GroupRecord, "id" | "tokenObject">[],
): Promise<GroupTurns> {
  const read = await Promise.all(
    groups.flatMap((g) =>
      g.tokenObject === null
        ? []
        : [readOne(bucket, g.tokenObject).then((t) => [g.id, t] as const)],
    ),
  );
  return new Map(read);
}

/**
 * An episode's token fields in the batch format. `masked`: an over-long episode its group
 * masks, whose samples are served (the group keeps its shape) with a mask of zeros throughout.
 */
export function episodeTokens(
  episode: EpisodeRecord,
  group: GroupTokens | undefined,
  encoding: TokenEncoding,
  masked = false,
) {
  let mode: ServedTokenMode = episode.tokenMode;
  let reason = episode.tokenModeReason;
  let turns: readonly TurnTokens[] = [];
  if (mode === "exact") {
    if (group === undefined || "missing" in group) {
      mode = "missing";
      reason = group?.missing ?? "the group has no token object";
    } else turns = group.turns.get(episode.idx) ?? [];
  }
  // Failed episodes take no part in training: no advantage, so no samples to train on.
  const trainable = mode === "exact" && episode.status !== "failed";
  const advantageOf = (turn: number) => episode.perTurnAdvantages?.[turn] ?? episode.advantage ?? 0;
  return {
    token_mode: mode,
    ...(reason === null ? {} : { token_mode_reason: reason }),
    prefix_breaks: episode.prefixBreaks,
    ...(episode.teacherModel === null
      ? {}
      : { teacher_model: episode.teacherModel, reverse_kl: episode.reverseKl }),
    samples: trainable
      ? episodeSamples(turns, advantageOf, episode.policyVersion).map((sample) => {
          // Its advantages are 0 already; the mask says so to a trainer that reads only it.
          if (masked) sample.mask.fill(0);
          return encodeSample(sample, encoding);
        })
      : [],
  };
}
