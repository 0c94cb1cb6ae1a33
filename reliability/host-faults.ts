/**
 * The inference-host suite: each row steers the simulator with one fault directive for its
 * groups, then checks how every episode ended and that the retries went as its expected column
 * says (each sampled turn's attempts, and the host's own request count).
 */
import pMap from "p-map";
import type { LocalStack } from "../src/cli/local-stack";
import type { EdgerollClient, EpisodeView } from "../src/client/edgeroll-client";
import { END } from "../src/rollout/outcomes";
import { countBy, type Episode, episodesOf, guessRequest, integrity, landGroups } from "./harness";
import { outcomeOf, type Row } from "./suites";

interface HostCase {
  fault: string;
  directive: string;
  expected: string;
  /** What every episode must have ended as. */
  accept: (e: Episode) => boolean;
  /**
   * The HTTP attempts each sampled turn took, by its index (the `attempts` of its message): what
   * "no retry", "one retry" and "retried" promise. Null where the faults are random.
   */
  attempts: ((turn: number) => number) | null;
  /** The attempts of the generation that failed an episode, for the cases that fail them. */
  failing?: number;
}

/** INFERENCE_MAX_RETRIES in the suites' stack: a generation makes at most one more attempt. */
export const HOST_MAX_RETRIES = 4;

const completed = (e: Episode) => e.status === "completed";
const each = (n: number) => () => n;

const HOST_CASES: HostCase[] = [
  {
    fault: "HTTP 500 burst (2 per request)",
    directive: "fail:500:2",
    expected: "retried: 3 attempts a turn; all complete",
    accept: completed,
    attempts: each(3),
  },
  {
    fault: "HTTP 503 burst (3 per request)",
    directive: "fail:503:3",
    expected: "retried: 4 attempts a turn; all complete",
    accept: completed,
    attempts: each(4),
  },
  {
    fault: "HTTP 429 burst, Retry-After 0.2 s",
    directive: "fail:429:2+retryafter:0.2",
    expected: "retried after the wait: 3 attempts a turn; all complete",
    accept: completed,
    attempts: each(3),
  },
  {
    fault: "HTTP 429, Retry-After 1.5 s (parked in storage)",
    directive: "fail:429:1@1+retryafter:1.5",
    expected: "parked, retried: 2 attempts at turn 1, 1 at the others; all complete",
    accept: completed,
    attempts: (turn) => (turn === 1 ? 2 : 1),
  },
  {
    fault: "connection reset (2 per request)",
    directive: "reset:2",
    expected: "retried: 3 attempts a turn; all complete",
    accept: completed,
    attempts: each(3),
  },
  {
    fault: "malformed JSON (2 per request)",
    directive: "malformed:2",
    expected: "retried: 3 attempts a turn; all complete",
    accept: completed,
    attempts: each(3),
  },
  {
    fault: "stream cut mid-way (2 per request)",
    directive: "cut:2",
    expected: "retried: 3 attempts a turn; all complete",
    accept: completed,
    attempts: each(3),
  },
  {
    fault: "random faults on 30% of tries",
    directive: "chaos:0.3",
    expected: "retried; complete, or a recorded inference failure",
    accept: (e) => completed(e) || /^inference_/.test(e.failure_reason ?? ""),
    attempts: null,
  },
  {
    fault: "hang past the deadline, once",
    directive: "hang:1",
    expected: "one timeout retry: 2 attempts a turn; all complete",
    accept: completed,
    attempts: each(2),
  },
  {
    fault: "slow trickle inside the deadline",
    directive: "trickle:100",
    expected: "slow, no retry: 1 attempt a turn; all complete",
    accept: completed,
    attempts: each(1),
  },
  {
    fault: "hang past the deadline, always",
    directive: "hang",
    expected: "one retry (2 attempts), then failed: generation_timeout",
    accept: (e) => e.failure_reason === END.generation_timeout,
    attempts: each(1),
    failing: 2,
  },
  {
    fault: "slow trickle past the deadline",
    directive: "trickle:1000",
    expected: "one retry (2 attempts), then failed: generation_timeout",
    accept: (e) => e.failure_reason === END.generation_timeout,
    attempts: each(1),
    failing: 2,
  },
  {
    fault: "malformed JSON, always",
    directive: "malformed",
    expected: `bounded retries (${HOST_MAX_RETRIES + 1} attempts), then failed: inference_malformed`,
    accept: (e) => e.failure_reason === END.inference_malformed,
    attempts: each(1),
    failing: HOST_MAX_RETRIES + 1,
  },
  {
    fault: "HTTP 400 (request rejected)",
    directive: "fail:400",
    expected: "no retry (1 attempt); failed: inference_rejected",
    accept: (e) => e.failure_reason === END.inference_rejected,
    attempts: each(1),
    failing: 1,
  },
];

/**
 * Whether the retries went as promised: each sampled turn's recorded attempts, no re-dispatch
 * (a send no attempt counts), and every request the host saw accounted for by the sampled turns'
 * attempts and the failed generations'. Returns what differed, one line each.
 */
function attemptProblems(
  c: HostCase,
  episodes: readonly EpisodeView[],
  requests: number,
): string[] {
  const problems: string[] = [];
  const redispatched = episodes.filter((e) => e.redispatches > 0).length;
  if (redispatched > 0) problems.push(`${redispatched} episodes re-dispatched`);
  const turns = episodes.flatMap((e) => e.messages.filter((m) => m.sampled));
  if (c.attempts === null) {
    // Random faults: which tries fail is not known, only that some turns needed another.
    if (!turns.some((m) => (m.attempts ?? 1) > 1)) problems.push("no turn was retried");
    return problems;
  }
  const expect = c.attempts;
  const off = turns.filter((m) => m.attempts !== expect(m.turn ?? 0));
  if (off.length > 0) {
    const seen = countBy(off, (m) => `turn ${m.turn}: ${m.attempts}`);
    const list = Object.entries(seen).map(([k, n]) => `${n}x ${k}`);
    problems.push(`${off.length} turns took other attempts (${list.join(", ")})`);
  }
  // Failures a case does not expect are the acceptance check's to report; their tries unknown.
  const failed = episodes.filter((e) => e.status === "failed").length;
  if (failed > 0 && c.failing === undefined) return problems;
  const accounted = turns.reduce((n, m) => n + (m.attempts ?? 0), 0) + failed * (c.failing ?? 0);
  if (requests !== accounted)
    problems.push(`the host saw ${requests} requests, the episodes account for ${accounted}`);
  return problems;
}

export async function hostFaults(
  stack: LocalStack,
  client: EdgerollClient,
  groups: number,
): Promise<Row[]> {
  return pMap(
    HOST_CASES,
    async (c) => {
      const runId = `host-${c.directive.replace(/[^a-z0-9]+/gi, "-")}`;
      const model = `sim+${c.directive}`;
      const landed = await landGroups(
        client,
        Array.from({ length: groups }, (_, i) => guessRequest(runId, i, model)),
      );
      const episodes = await episodesOf(client, runId);
      const check = integrity(landed, episodes);
      const requests = stack.simulator?.stats().byModel[model]?.requests ?? 0;
      const turns = episodes.reduce((n, e) => n + e.turns, 0);
      // Each episode whole, with its messages' attempts (the list leaves them out).
      const views = await pMap(episodes, (e) => client.getEpisode(e.episode_id), {
        concurrency: 8,
      });
      const retries = attemptProblems(c, views, requests);
      return {
        fault: `inference host: ${c.fault}`,
        tried: `${groups} groups, ${check.expected} episodes, ${requests} host requests for ${turns} sampled turns`,
        outcome: [outcomeOf(landed, episodes), ...retries].join("; "),
        expected: c.expected,
        lost: check.lost,
        duplicated: check.duplicated,
        ok:
          check.lost === 0 &&
          check.duplicated === 0 &&
          check.brokenTranscripts === 0 &&
          episodes.every(c.accept) &&
          retries.length === 0,
      };
    },
    // A few at a time: these rows are about faults, not load.
    { concurrency: 4 },
  );
}
