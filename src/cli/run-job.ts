/**
 * Runs a job: one rollout group per dataset example, at most `concurrency` in flight. Each
 * start carries an idempotency key derived from the run, env, example and group size, so a
 * rerun finds the groups it already started instead of starting them again. With `maxAhead`,
 * it also keeps pace with the trainer: a group starts only while the run has fewer than that
 * many groups in flight or landed and not yet leased (GET /v1/runs/:id, `pacing.ahead`).
 */
import pMap from "p-map";
import {
  type EdgerollClient,
  EdgerollError,
  evalIdempotencyKey,
  type GroupView,
  type StartGroupInput,
} from "../client/edgeroll-client";
import type { TaskExample } from "../sdk";

export interface Job {
  env: string;
  examples: readonly TaskExample[];
  groupSize: number;
  runId: string;
  concurrency: number;
  /** Start a group only while the run's groups in flight and unleased are fewer than this. */
  maxAhead?: number;
  /** How often to ask the run's pacing while it is at `maxAhead`. */
  paceIntervalMs?: number;
  /** Everything else a group request takes (sampling, policy_version, ...). */
  request: Omit<StartGroupInput, "env" | "example" | "group_size" | "run_id">;
}

export interface JobProgress {
  total: number;
  done: number;
  /** Groups this run found already started (a resumed run), and their episodes. */
  resumed: number;
  resumedEpisodes: number;
  failedGroups: number;
  /** Landed groups whose scored episodes all have one score: no GRPO signal. */
  uniformGroups: number;
  episodes: number;
  failedEpisodes: number;
  rewardSum: number;
  scored: number;
  failures: Record<string, number>;
  /** What the first failed episode of each reason said (the host's answer, say). */
  failureDetails: Record<string, string>;
  startedAt: number;
}

export function emptyProgress(total: number): JobProgress {
  return {
    total,
    done: 0,
    resumed: 0,
    resumedEpisodes: 0,
    failedGroups: 0,
    uniformGroups: 0,
    episodes: 0,
    failedEpisodes: 0,
    rewardSum: 0,
    scored: 0,
    failures: {},
    failureDetails: {},
    startedAt: Date.now(),
  };
}

export function idempotencyKey(
  job: Pick<Job, "runId" | "env" | "groupSize" | "request">,
  example: TaskExample,
): string {
  // An evaluation's key names its version: evaluating the next version starts groups of its own.
  const { kind, policy_version: version } = job.request;
  if (kind === "eval" && version !== undefined)
    return evalIdempotencyKey({ ...job, policyVersion: version }, example.id);
  return `edgeroll-run:${job.runId}:${job.env}:${example.id}:${job.groupSize}`.slice(0, 255);
}

function record(progress: JobProgress, group: GroupView, resumed: boolean): void {
  progress.done++;
  if (resumed) {
    progress.resumed++;
    progress.resumedEpisodes += group.episodes.length;
  }
  if (group.status === "failed") progress.failedGroups++;
  else if (group.uniform === true) progress.uniformGroups++;
  for (const episode of group.episodes) {
    progress.episodes++;
    if (episode.failure_reason) {
      progress.failedEpisodes++;
      progress.failures[episode.failure_reason] =
        (progress.failures[episode.failure_reason] ?? 0) + 1;
      if (episode.failure_detail && !(episode.failure_reason in progress.failureDetails))
        progress.failureDetails[episode.failure_reason] = episode.failure_detail;
    }
    if (episode.score !== null) {
      progress.rewardSum += episode.score;
      progress.scored++;
    }
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** How far the run is ahead of its trainer; a run with no group yet is not ahead at all. */
async function ahead(client: EdgerollClient, runId: string): Promise<number> {
  try {
    return (await client.getRun(runId)).pacing.ahead;
  } catch (error) {
    if (error instanceof EdgerollError && error.status === 404) return 0;
    throw error;
  }
}

/**
 * Starts one group at a time, each once the run is less than `maxAhead` groups ahead of its
 * trainer. One at a time because a start shows in the run's pacing only once it returns (the
 * group registers in D1 before the start answers): two at once could both see room for one.
 */
function pacedStarts(client: EdgerollClient, job: Job) {
  const { maxAhead } = job;
  // Unpaced, starts go out as fast as `concurrency` allows.
  if (maxAhead === undefined) return <T>(start: () => Promise<T>) => start();
  let last: Promise<unknown> = Promise.resolve();
  return <T>(start: () => Promise<T>): Promise<T> => {
    const turn = last.then(async () => {
      while ((await ahead(client, job.runId)) >= maxAhead) await sleep(job.paceIntervalMs ?? 1000);
      return start();
    });
    last = turn.catch(() => {});
    return turn;
  };
}

/** Runs the job to the end; `onProgress` is called after each group lands. */
export async function runJob(
  client: EdgerollClient,
  job: Job,
  onProgress: (progress: JobProgress) => void = () => {},
): Promise<{ progress: JobProgress; groups: GroupView[] }> {
  const progress = emptyProgress(job.examples.length);
  const paced = pacedStarts(client, job);
  const groups = await pMap(
    job.examples,
    async (example) => {
      const started = await paced(() =>
        client.startGroup(
          { ...job.request, env: job.env, example, group_size: job.groupSize, run_id: job.runId },
          { idempotencyKey: idempotencyKey(job, example) },
        ),
      );
      const group = await client.waitForGroup(started.group_id, { intervalMs: 250 });
      record(progress, group, !started.created);
      onProgress(progress);
      return group;
    },
    { concurrency: job.concurrency },
  );
  return { progress, groups };
}

export function meanReward(progress: JobProgress): number | null {
  return progress.scored > 0 ? progress.rewardSum / progress.scored : null;
}

/** Episodes per second that this run produced: groups found from an earlier run not counted. */
export function episodesPerSecond(progress: JobProgress, now = Date.now()): number {
  const seconds = Math.max((now - progress.startedAt) / 1000, 0.001);
  return (progress.episodes - progress.resumedEpisodes) / seconds;
}
