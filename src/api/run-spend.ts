/**
 * What a run has spent, exactly, at one moment: its landed rows (D1) plus what each group D1
 * shows running has spent so far (its object's transcripts). Both are derived from durable
 * state on every read, never kept as a counter, so a SIGKILL or an object's restart changes
 * nothing (a group that landed between the two reads is read from D1 instead).
 */
import pMap from "p-map";
import { addSpend, NO_SPEND, type RunSpend, type Spend } from "../costs/spend";
import { groupsSpend, landedSpend } from "../db/run-costs";
import { MAX_PUSHES } from "../policy/fan-out";
import { rolloutGroup } from "../rollout/bindings";

/** Group objects asked at once. */
const ASK_CONCURRENCY = 64;

/** `landed` plus what the groups `running` have spent so far. */
export async function inFlightOf(
  env: Env,
  landed: Spend,
  running: readonly string[],
): Promise<RunSpend> {
  const asked = running.slice(0, MAX_PUSHES);
  const answers = await pMap(
    asked,
    (id) =>
      rolloutGroup(env, id)
        .spend()
        .then(
          (spend) => ({ id, spend }),
          () => ({ id, spend: undefined }),
        ),
    { concurrency: ASK_CONCURRENCY },
  );
  let inFlight = NO_SPEND;
  let generations = 0;
  const gone: string[] = [];
  let unanswered = running.length - asked.length;
  for (const { id, spend } of answers) {
    if (spend === undefined) unanswered++;
    else if (spend === null) gone.push(id);
    else {
      inFlight = addSpend(inFlight, spend.spend);
      generations += spend.inFlightGenerations;
    }
  }
  // Landed since D1 listed them running: their rows are in D1 now.
  const lately = await groupsSpend(env.DB, gone);
  const settled = addSpend(landed, lately);
  return {
    landed: settled,
    inFlight,
    total: addSpend(settled, inFlight),
    groupsInFlight: running.length - gone.length,
    unanswered,
    generationsInFlight: unanswered === 0 ? generations : null,
  };
}

export async function runSpend(env: Env, runId: string): Promise<RunSpend> {
  const { landed, running } = await landedSpend(env.DB, runId);
  return inFlightOf(env, landed, running);
}
