/**
 * A policy change, pushed to the run's running groups before POST /v1/runs/:id/policy answers:
 * once it returns, a pause holds every new generation and a bump is what the next turns
 * record. Whom to tell comes from D1, read with the change (db/run-policies.ts); how to tell
 * one group is the caller's (the route passes the group object's `policyChanged`), which keeps
 * this module below the rollout.
 */
import pMap from "p-map";

/**
 * Group objects told of a change at once. Each call mostly waits (an interrupt reads what has
 * already arrived, aborts, and records what it cut), so a sync's stall is one group's wait, not
 * one per wave: at 16 at once, 32 groups took two waves and about 30 ms more (bench:sync).
 */
const PUSH_CONCURRENCY = 128;
/**
 * Groups told per POST: each push is a subrequest, and a request may make 1,000 of them on the
 * older Workers plans (10,000 now). Groups beyond it learn of the change on their heartbeat.
 */
export const MAX_PUSHES = 900;

/** The run's running groups, how many of them were told, and what those still have in flight. */
export interface Pushed {
  running: number;
  told: number;
  /**
   * Generations in flight in the run's running groups once each took the change; null unless
   * every one of them was told (one unreachable, or past MAX_PUSHES, could have some).
   */
  inFlight: number | null;
}

/**
 * Tells each of the run's running groups, up to MAX_PUSHES of them. A group that cannot be
 * reached (it is restarting), or one past MAX_PUSHES, reads the policy on its next heartbeat.
 */
export async function pushToRunningGroups(
  running: readonly string[],
  notify: (groupId: string) => Promise<number>,
): Promise<Pushed> {
  const answers = await askEach(running, notify);
  return { running: running.length, ...answers };
}

/**
 * Asks each of the groups (up to MAX_PUSHES) for a count: how many answered, and the sum of
 * their counts, or null unless all of them answered.
 */

export async function askEach(
  groupIds: readonly string[],
  ask: (groupId: string) => Promise<number>,
): Promise<{ told: number; inFlight: number | null }> {
  const counts = await pMap(
    groupIds.slice(0, MAX_PUSHES),
    (id) =>
      ask(id).then(
        (n) => n,
        () => null,
      ),
    { concurrency: PUSH_CONCURRENCY },
  );
  const answered = counts.filter((n) => n !== null);
  const sum = answered.reduce((a, n) => a + n, 0);
  return { told: answered.length, inFlight: answered.length === groupIds.length ? sum : null };
}
