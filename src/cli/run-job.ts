/**
 * Runs a job: one rollout group per dataset example, at most `concurrency` in flight. Each
 * start carries an idempotency key derived from the run, env, example and group size, so a
 * rerun finds the groups it already started instead of starting them again.
 */
import pMap from "p-map";
import type { EdgerollClient, GroupView, StartGroupInput } from "../client/edgeroll-client";
import type { TaskExample } from "../sdk";

export interface Job {
  env: string;
  examples: readonly TaskExample[];
  groupSize: number;
  runId: string;
  concurrency: number;
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
    startedAt: Date.now(),
  };
}

export function idempotencyKey(
  job: Pick<Job, "runId" | "env" | "groupSize">,
  example: TaskExample,
): string {
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
    }
    if (episode.score !== null) {
      progress.rewardSum += episode.score;
      progress.scored++;
    }
  }
}

/** Runs the job to the end; `onProgress` is called after each group lands. */
export async function runJob(
  client: EdgerollClient,
  job: Job,
  onProgress: (progress: JobProgress) => void = () => {},
): Promise<{ progress: JobProgress; groups: GroupView[] }> {
  const progress = emptyProgress(job.examples.length);
  const groups = await pMap(
    job.examples,
    async (example) => {
      const started = await client.startGroup(
        { ...job.request, env: job.env, example, group_size: job.groupSize, run_id: job.runId },
        { idempotencyKey: idempotencyKey(job, example) },
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
