/**
 * What a group's grading lands besides its episodes: each rubric component of each grade
 * (`reward_components`) and every judge call made for it (`judgements`), as D1 rows.
 */
import type { Price } from "../costs/price";
import type { judgements, rewardComponents } from "../db/schema";
import { judgementCost } from "./episode-costs";
import { episodeId } from "./group-spec";
import type { EpisodeRow } from "./storage/episodes";

/** A failed episode has no grade, so no components: only a scored one's are recorded. */
export function componentRows(
  groupId: string,
  rows: readonly EpisodeRow[],
): (typeof rewardComponents.$inferInsert)[] {
  return rows.flatMap((e) =>
    e.state === "failed"
      ? []
      : (e.reward?.components ?? []).map((c) => ({
          episodeId: episodeId(groupId, e.idx),
          name: c.name,
          groupId,
          value: c.value,
          weight: c.weight,
        })),
  );
}

/** Every judge call, failed episodes' included: they say why no grade came. */
export function judgementRows(
  groupId: string,
  rows: readonly EpisodeRow[],
  judgePrice: Price | null,
  firstSeq = 0,
): (typeof judgements.$inferInsert)[] {
  return rows.flatMap((e) =>
    e.judgements.map((j, i) => ({
      episodeId: episodeId(groupId, e.idx),
      seq: firstSeq + i,
      groupId,
      component: j.component,
      model: j.model,
      prompt: j.prompt,
      response: j.response,
      value: j.value,
      reason: j.reason,
      error: j.error,
      attempt: j.attempt,
      latencyMs: j.latencyMs,
      createdAt: j.createdAt,
      ...judgementCost(j, judgePrice),
    })),
  );
}
