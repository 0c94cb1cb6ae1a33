/**
 * The smaller answers of the API, each built here once; the client takes its types from these
 * functions instead of restating them.
 */
import type { runPacing, runProgress } from "../db/queries";
import { beyondMaxLag, type RunPolicy } from "../db/run-policies";
import type { episodeForTrainer, groupForTrainer } from "../trainer/batch-format";

/** `POST /v1/groups`: the group, where to follow it, and whether this call created it. */
export function startedGroupView(groupId: string, created: boolean) {
  return { group_id: groupId, status_url: `/v1/groups/${groupId}`, created };
}

/** `GET /v1/runs/:id`: groups of a run by status, from one query. */
export function runProgressView(
  runId: string,
  rows: Awaited<ReturnType<typeof runProgress>>,
  pacing: Awaited<ReturnType<typeof runPacing>>,
  policy: RunPolicy | null,
) {
  // Groups more than max_lag behind will not be leased by a trainer that keeps to it: they are
  // listed by version, but not counted as feeding the trainer.
  const inFlight = pacing.reduce((n, r) => n + r.in_flight, 0);
  const unleased = pacing.reduce(
    (n, r) => n + (policy !== null && beyondMaxLag(policy, r.version) ? 0 : r.unleased),
    0,
  );
  const count = (status: string) =>
    rows.find((r) => r.status === status) ?? { groups: 0, episodes: 0 };
  return {
    run_id: runId,
    policy: policy === null ? null : policyView(policy),
    groups: {
      total: rows.reduce((n, r) => n + r.groups, 0),
      running: count("running").groups,
      landed: count("landed").groups,
      failed: count("failed").groups,
    },
    episodes: {
      total: rows.reduce((n, r) => n + Number(r.episodes), 0),
      landed: Number(count("landed").episodes) + Number(count("failed").episodes),
    },
    // `edgeroll run --max-ahead N` keeps `ahead` at most N.
    pacing: {
      in_flight: inFlight,
      unleased,
      ahead: inFlight + unleased,
      by_version: pacing.map((r) => ({
        policy_version: r.version,
        in_flight: r.in_flight,
        unleased: r.unleased,
      })),
    },
  };
}

export type TrainerGroup = ReturnType<typeof groupForTrainer>;
export type TrainerEpisode = ReturnType<typeof episodeForTrainer>;

/** `POST /v1/batches/lease`: an empty batch (nothing available) is an answer, not an error. */
export function batchView(
  claim: { batchId: string; leaseExpiresAt: string } | null,
  groups: TrainerGroup[],
): { batch_id: string | null; lease_expires_at: string | null; groups: TrainerGroup[] } {
  return claim === null
    ? { batch_id: null, lease_expires_at: null, groups: [] }
    : { batch_id: claim.batchId, lease_expires_at: claim.leaseExpiresAt, groups };
}

/**
 * `POST /v1/batches/:id/ack`. `lost_groups`: groups whose lease ran out and went to another
 * trainer (or were parked) before this call. A second ack says `already_acked`.
 */
export function ackView(batchId: string, settled: { groups: number; lost: number } | "already") {
  return settled === "already"
    ? { batch_id: batchId, acked_groups: 0, lost_groups: 0, already_acked: true }
    : {
        batch_id: batchId,
        acked_groups: settled.groups,
        lost_groups: settled.lost,
        already_acked: false,
      };
}

/** `POST /v1/batches/:id/release`, shaped as an ack. */
export function releaseView(
  batchId: string,
  settled: { groups: number; lost: number } | "already",
) {
  return settled === "already"
    ? { batch_id: batchId, released_groups: 0, lost_groups: 0, already_released: true }
    : {
        batch_id: batchId,
        released_groups: settled.groups,
        lost_groups: settled.lost,
        already_released: false,
      };
}

/** `GET /v1/episodes`: a page of landed episodes in the trainer's format, and the next cursor. */
export function episodePageView(
  episodes: (TrainerEpisode & {
    group_id: string;
    run_id: string;
    env: string;
    example_id: string;
  })[],
  nextCursor: string | null,
) {
  return { episodes, next_cursor: nextCursor };
}

export type StartedGroup = ReturnType<typeof startedGroupView>;
export type RunProgress = ReturnType<typeof runProgressView>;
export type PolicyView = ReturnType<typeof policyView>;

/** A run's policy as its trainer set it (GET and POST /v1/runs/:id/policy). */
export function policyView(policy: RunPolicy) {
  return {
    run_id: policy.runId,
    version: policy.version,
    max_lag: policy.maxLag,
    paused: policy.paused,
    revision: policy.revision,
    updated_at: policy.updatedAt,
  };
}
export type Batch = ReturnType<typeof batchView>;
export type AckResult = ReturnType<typeof ackView>;
export type ReleaseResult = ReturnType<typeof releaseView>;
export type EpisodePage = ReturnType<typeof episodePageView>;
