/**
 * The remote-environment suite: an environment served over HTTP (the fixture server, guess-number
 * with faults on demand per example) misbehaves for half the groups of each row; only the struck
 * episodes may fail, with the named reason, and each call is sent as often as the row says.
 */
import pMap from "p-map";
import type { EdgerollClient } from "../src/client/edgeroll-client";
import { END } from "../src/rollout/outcomes";
import { type Episode, episodesOf, integrity, landGroups } from "./harness";
import { outcomeOf, type Row } from "./suites";

/**
 * Faults of an environment served over HTTP (REMOTE_ENVS), one per example by the fixture.
 * `retries`: how many times each call of a struck episode is sent again (an answer, even an
 * error, is not retried; a 503 is), or null where timing decides; a healthy episode's calls go
 * once.
 */
const REMOTE_CASES: {
  fault: string;
  label: string;
  env: string;
  reason: string | null;
  retries: number | null;
}[] = [
  {
    fault: "garbage",
    label: "answers a step with text that is not JSON",
    env: "guess-number-remote",
    reason: END.env_error,
    retries: 0,
  },
  {
    fault: "wrong_shape",
    label: "answers a step with JSON outside the protocol",
    env: "guess-number-remote",
    reason: END.env_error,
    retries: 0,
  },
  {
    fault: "error",
    label: "answers a step with a 500 env_error",
    env: "guess-number-remote",
    reason: END.env_error,
    retries: 0,
  },
  {
    fault: "slow",
    label: "answers a step after STEP_TIMEOUT_S",
    env: "guess-number-remote",
    reason: END.step_timeout,
    retries: 0,
  },
  {
    fault: "down_after_start",
    label: "opens episodes, then drops every connection",
    env: "guess-number-remote",
    reason: END.env_unavailable,
    retries: null,
  },
  {
    fault: "busy_once",
    label: "answers each call's first attempt 503 Retry-After: 0",
    env: "guess-number-remote",
    reason: null,
    retries: 1,
  },
];

/** The remote fixture's counters: calls received by `path key` (test/setup/remote-env-server.ts). */
export interface RemoteCalls {
  byKey: Record<string, number>;
}

/**
 * Calls of these episodes (`/start` and `/step`, keyed `<episode_id>:...`) sent other than the
 * expected number of times: `1 + retries` for a struck one, once for a healthy one.
 */
function remoteRetryProblems(
  episodes: readonly Episode[],
  calls: RemoteCalls,
  struck: (e: Episode) => boolean,
  retries: number | null,
): string[] {
  const off: string[] = [];
  for (const e of episodes) {
    if (struck(e) && retries === null) continue;
    const expected = struck(e) ? 1 + (retries ?? 0) : 1;
    const mine = Object.entries(calls.byKey).filter(
      ([key]) => /^\/(start|step) /.test(key) && key.split(" ")[1]?.startsWith(`${e.episode_id}:`),
    );
    if (mine.length === 0) off.push(`${e.episode_id}: no keyed calls`);
    for (const [key, n] of mine)
      if (n !== expected) off.push(`${key} sent ${n}x, not ${expected}x`);
  }
  return off.length === 0
    ? []
    : [`${off.length} calls sent otherwise (${off.slice(0, 3).join("; ")})`];
}

export async function remoteEnvFaults(
  client: EdgerollClient,
  groups: number,
  calls: RemoteCalls,
): Promise<Row[]> {
  return pMap(
    REMOTE_CASES,
    async (c) => {
      const runId = `remote-${c.fault}`;
      // Half the groups ask for the fault, half are healthy, on the same server, at once.
      const requests = Array.from({ length: groups * 2 }, (_, i) => ({
        env: c.env,
        example: {
          id: `${runId}-${i}`,
          input: "Find the number.",
          metadata: {
            secret: 1 + ((i * 53) % 100),
            ...(i % 2 === 0 ? { remote_fault: c.fault } : {}),
          },
        },
        group_size: 4,
        run_id: runId,
        sampling: { model: "sim", temperature: 1, seed: 300 + i * 4, max_completion_tokens: 64 },
      }));
      const landed = await landGroups(client, requests);
      const episodes = await episodesOf(client, runId);
      const check = integrity(landed, episodes);
      const struck = (e: Episode) => Number(e.example_id.split("-").at(-1)) % 2 === 0;
      const wrong = episodes.filter((e) =>
        struck(e) && c.reason !== null ? e.failure_reason !== c.reason : e.status === "failed",
      );
      const resent = remoteRetryProblems(episodes, calls, struck, c.retries);
      const struckCalls =
        c.retries === null
          ? ""
          : c.retries === 0
            ? ", not retried"
            : `, each call sent ${1 + c.retries}x`;
      return {
        fault: `remote environment: ${c.label}`,
        tried: `${groups * 2} groups, ${check.expected} episodes, ${episodes.filter(struck).length} of them struck`,
        outcome: [
          `${outcomeOf(landed, episodes)}; ${wrong.length} episodes ended otherwise than expected`,
          ...resent,
        ].join("; "),
        expected:
          c.reason === null
            ? `retried with the same Idempotency-Key${struckCalls}: every episode completes`
            : `only the struck episodes fail (${c.reason}${struckCalls}); the healthy groups land, each call sent once`,
        lost: check.lost,
        duplicated: check.duplicated,
        ok: check.lost === 0 && check.duplicated === 0 && wrong.length === 0 && resent.length === 0,
      };
    },
    { concurrency: REMOTE_CASES.length },
  );
}
