/**
 * Which policy versions sampled a landing group's tokens: each sampled turn's version as it was
 * last sent (the group's own before its run had a policy), and for a turn an interrupting weight
 * sync cut and a newer version continued, the versions of the tokens it kept before that.
 */
import type { VersionSegment } from "../tokens/turn-tokens";
import type { PolicyWatch } from "./policy-watch";
import type { ContinuedTurn } from "./storage/interrupted-turns";

export interface LandedVersions {
  /** The versions that sampled a turn's completion, in order of position. */
  segments(idx: number, turn: number): VersionSegment[];
  /** Every version that sampled some of a turn. */
  versions(idx: number, turn: number): number[];
  /** Tokens the episode kept across interruptions and continued. */
  kept(idx: number): number;
}

export function landedVersions(
  policy: PolicyWatch | null,
  groupVersion: number,
  continued: ReadonlyMap<number, ReadonlyMap<number, ContinuedTurn>>,
): LandedVersions {
  const last = (idx: number, turn: number) =>
    policy?.turnVersion(idx, turn, groupVersion) ?? groupVersion;
  const segments = (idx: number, turn: number): VersionSegment[] => {
    const version = last(idx, turn);
    const cut = continued.get(idx)?.get(turn);
    if (cut === undefined) return [{ at: 0, version }];
    const all = [...cut.versions];
    if (all.at(-1)?.version !== version) all.push({ at: cut.kept, version });
    return all;
  };
  return {
    segments,
    versions: (idx, turn) => segments(idx, turn).map((s) => s.version),
    kept: (idx) => {
      let kept = 0;
      for (const turn of continued.get(idx)?.values() ?? []) kept += turn.kept;
      return kept;
    },
  };
}
