/**
 * A policy change, pushed to the run's running groups before POST /v1/runs/:id/policy answers:
 * once it returns, a pause holds every new generation and a bump is what the next turns
 * record. Whom to tell comes from D1; how to tell one group is the caller's (the route passes
 * the group object's `policyChanged`), which keeps this module below the rollout.
 */
import pMap from "p-map";
import { runningGroupIds } from "../db/run-policies";

/** Group objects told of a change at once; a run's running groups can be many. */
const PUSH_CONCURRENCY = 16;
/**
 * Groups told per POST: each push is a subrequest, and a request may make 1,000 of them on the
 * older Workers plans (10,000 now). Groups beyond it learn of the change on their heartbeat.
 */
export const MAX_PUSHES = 900;

/** The run's running groups, and how many of them were told. */
export interface Pushed {
  running: number;
  told: number;
}

/**
 * Tells each running group of the run, up to MAX_PUSHES of them. A group that cannot be reached
 * (it is restarting), or one past MAX_PUSHES, reads the policy on its next heartbeat instead.
 */
export async function pushToRunningGroups(
  db: D1Database,
  runId: string,
  notify: (groupId: string) => Promise<unknown>,
): Promise<Pushed> {
  const running = await runningGroupIds(db, runId);
  const told = await pMap(
    running.slice(0, MAX_PUSHES),
    (id) =>
      notify(id).then(
        () => true,
        () => false,
      ),
    { concurrency: PUSH_CONCURRENCY },
  );
  return { running: running.length, told: told.filter(Boolean).length };
}
