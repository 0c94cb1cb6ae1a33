/** What a group still in flight answers about itself: the live side of GET /v1/groups/:id. */
import type { LiveGroupStatus } from "./group-api";
import { episodeId } from "./group-spec";
import type { PolicyWatch } from "./policy-watch";
import type { GroupStorage } from "./storage/group-storage";

export function liveStatus(store: GroupStorage, policy: PolicyWatch): LiveGroupStatus {
  const group = store.group.get();
  return {
    spec: group.spec,
    status: group.phase === "running" ? "running" : "scoring",
    warnings: group.warnings,
    lastError: group.lastError,
    policySpan: policy.span(store.sentTurns(), group.spec.request.policy_version),
    paused: policy.paused,
    episodes: store.episodes.all().map((e) => {
      const generation = store.generations.get(e.idx);
      return {
        id: episodeId(group.spec.groupId, e.idx),
        idx: e.idx,
        status: e.state,
        turns: e.turns,
        endReason: e.endReason,
        failureReason: e.failureReason,
        failureDetail: e.failureDetail,
        redispatches: e.redispatches,
        score: e.reward?.score ?? null,
        advantage: e.advantage,
        // When a parked generation will be retried.
        retryAt: generation?.state === "waiting" ? generation.retryAt : null,
      };
    }),
  };
}
