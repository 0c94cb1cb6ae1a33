/**
 * The smaller answers of the API, each built here once; the client takes its types from these
 * functions instead of restating them.
 */

import type { RunSpend } from "../costs/spend";
import type { EpisodeRecord, PacingRow, runProgress } from "../db/queries";
import type { RunBudget } from "../db/run-budgets";
import type { RunPolicy } from "../db/run-policies";
import type { GroupStatus } from "../domain/group-status";
import { pacing } from "../policy/pacing";
import { episodeForTrainer, type groupForTrainer } from "../trainer/batch-format";
import { budgetView, costsView } from "./cost-view";
import type { GroupView } from "./group-view";
import { policyView } from "./policy-view";

/** `GET /healthz`: the Worker answers. */
export function healthView() {
  return { ok: true };
}

/** `GET /v1/environments`: every environment a group may name, and which of them are remote. */
export function environmentsView(names: string[], remote: string[]) {
  return { environments: names, remote };
}

/** `GET /v1/environments/:name`: built in, or remote and served at `base_url`. */
/** `version`: what it declares now; null when a remote one did not answer `/info`. */
export function environmentView(name: string, baseUrl: string | null, version: string | null) {
  return { name, version, remote: baseUrl !== null, base_url: baseUrl };
}

/** One row `POST /v1/environments/:name/validate` refused, by its place in the request. */
export interface ExampleVerdict {
  index: number;
  /** The row's `id`, when it has one. */
  id: string | null;
  /** `invalid_request`: not a task example at all; `example_rejected`: the environment refused it. */
  code: "invalid_request" | "example_rejected";
  message: string;
  details: unknown;
}

/** `POST /v1/environments/:name/validate`: how many rows were checked, and the refused ones. */
export function validationView(env: string, checked: number, rejected: ExampleVerdict[]) {
  return { env, checked, rejected };
}

/** `POST /v1/groups`: the group, where to follow it, and whether this call created it. */
export function startedGroupView(groupId: string, created: boolean) {
  return { group_id: groupId, status_url: `/v1/groups/${groupId}`, created };
}

/**
 * `POST /v1/groups/:id/rescore`: how many episodes were graded again, how many the judge still
 * could not grade, and the group as it stands now.
 */
export function rescoredView(
  groupId: string,
  rescored: { rescored: number; judgeErrors: number },
  group: GroupView | null,
) {
  return {
    group_id: groupId,
    rescored: rescored.rescored,
    judge_errors: rescored.judgeErrors,
    group,
  };
}
export type RescoreResult = ReturnType<typeof rescoredView>;

/** `GET /v1/runs/:id`: groups of a run by status, from one query. */
export function runProgressView(
  runId: string,
  rows: Awaited<ReturnType<typeof runProgress>>,
  pacingRows: readonly PacingRow[],
  policy: RunPolicy | null,
  inFlightGenerations: number | null,
  spend: RunSpend,
  budget: RunBudget | null,
) {
  const count = (status: GroupStatus) =>
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
    pacing: pacing(pacingRows, policy),
    /**
     * Generations of the run in flight now, summed over its running groups (up to 900 of them
     * asked; null when one could not be asked, or there are more): what a trainer waits to see
     * at 0 before it loads new weights.
     */
    in_flight_generations: inFlightGenerations,
    /** What the run has spent: its bill so far (docs/costs.md). */
    costs: costsView(spend),
    /** Its budget against that spend; null when its trainer set none. */
    budget: budget === null ? null : budgetView(runId, budget, spend),
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

/** What the trainer's format takes besides the episode: its transcript, what to include, tokens. */
type TrainerFormat =
  Parameters<typeof episodeForTrainer> extends [EpisodeRecord, ...infer Rest] ? Rest : never;

/** One item of `GET /v1/episodes`: an episode in the trainer's format, and where it came from. */
export function episodeListItemView(episode: EpisodeRecord, ...format: TrainerFormat) {
  return {
    group_id: episode.groupId,
    run_id: episode.runId,
    env: episode.env,
    example_id: episode.exampleId,
    ...episodeForTrainer(episode, ...format),
  };
}

export type EpisodeListItem = ReturnType<typeof episodeListItemView>;

/** `GET /v1/episodes`: a page of landed episodes in the trainer's format, and the next cursor. */
export function episodePageView(episodes: EpisodeListItem[], nextCursor: string | null) {
  return { episodes, next_cursor: nextCursor };
}

export type Health = ReturnType<typeof healthView>;
export type EnvironmentList = ReturnType<typeof environmentsView>;
export type EnvironmentInfo = ReturnType<typeof environmentView>;
export type ExampleValidation = ReturnType<typeof validationView>;
export type StartedGroup = ReturnType<typeof startedGroupView>;
export type RunProgress = ReturnType<typeof runProgressView>;
export type Batch = ReturnType<typeof batchView>;
export type AckResult = ReturnType<typeof ackView>;
export type ReleaseResult = ReturnType<typeof releaseView>;
export type EpisodePage = ReturnType<typeof episodePageView>;
