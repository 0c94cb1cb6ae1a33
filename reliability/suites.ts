/**
 * The fault suites run against a real local stack: each row tries one fault many times, then
 * checks what landed — nothing lost, nothing duplicated, every episode with a status and reason.
 * The row shape and the environment, trainer and bad-input suites are here; the host and remote
 * suites, which also count retries, have files of their own (host-faults.ts, remote-faults.ts).
 */
import pMap from "p-map";
import { strikes } from "../fixtures/environments/chaos";
import type { LocalStack } from "../src/cli/local-stack";
import { runSql } from "../src/cli/sql";
import { EdgerollClient, EdgerollError, type GroupView } from "../src/client/edgeroll-client";
import { END } from "../src/rollout/outcomes";
import { countBy, type Episode, episodesOf, guessRequest, integrity, landGroups } from "./harness";

export interface Row {
  fault: string;
  tried: string;
  outcome: string;
  expected: string;
  lost: number;
  duplicated: number;
  ok: boolean;
}

/** What landed, by end state and reason, and how many groups landed and landed as failed. */
export function outcomeOf(groups: readonly GroupView[], episodes: readonly Episode[]): string {
  const byStatus = countBy(episodes, (e) =>
    e.status === "failed" ? `failed: ${e.failure_reason}` : e.status,
  );
  const landed = groups.filter((g) => g.status === "landed").length;
  const parts = Object.entries(byStatus).map(([k, n]) => `${n} ${k}`);
  return `${parts.join(", ")}; ${landed}/${groups.length} groups landed, ${groups.length - landed} landed as failed`;
}

interface EnvCase {
  fault: "throw" | "hang" | "garbage" | "score_throw" | "score_nan";
  label: string;
  reason: string;
}

const ENV_CASES: EnvCase[] = [
  { fault: "throw", label: "stepEpisode throws", reason: END.env_error },
  { fault: "hang", label: "stepEpisode runs past STEP_TIMEOUT_S", reason: END.step_timeout },
  { fault: "garbage", label: "stepEpisode returns malformed messages", reason: END.env_error },
  { fault: "score_throw", label: "scoreEpisode throws", reason: END.score_error },
  { fault: "score_nan", label: "scoreEpisode returns NaN", reason: END.score_error },
];

export async function envFaults(client: EdgerollClient, groups: number): Promise<Row[]> {
  return pMap(
    ENV_CASES,
    async (c) => {
      const runId = `env-${c.fault}`;
      const requests = Array.from({ length: groups }, (_, i) => ({
        env: "chaos",
        example: {
          id: `${runId}-${i}`,
          input: "Find the number.",
          metadata: {
            secret: 1 + ((i * 53) % 100),
            chaos: { fault: c.fault, share: 0.5, turn: 1 },
          },
        },
        group_size: 8,
        run_id: runId,
        sampling: { model: "sim", temperature: 1, seed: 77 + i * 8, max_completion_tokens: 64 },
      }));
      const landed = await landGroups(client, requests);
      const episodes = await episodesOf(client, runId);
      const check = integrity(landed, episodes);
      // The episodes the fault should hit, recomputed from their transcripts.
      const hit = (e: Episode) => {
        const actions = (e.messages ?? []).filter((m) => m.sampled);
        const struck = strikes(actions[0]?.content, 0.5);
        return c.fault.startsWith("score")
          ? struck && e.failure_reason !== null
          : struck && actions.length >= 2;
      };
      const wrong = episodes.filter((e) =>
        hit(e) ? e.failure_reason !== c.reason : e.status === "failed",
      );
      const struck = episodes.filter(hit).length;
      return {
        fault: `environment: ${c.label}`,
        tried: `${groups} groups, ${check.expected} episodes, ${struck} of them struck`,
        outcome: `${outcomeOf(landed, episodes)}; ${wrong.length} episodes ended otherwise than expected`,
        expected: `only the struck episodes fail (${c.reason}); the rest of each group lands`,
        lost: check.lost,
        duplicated: check.duplicated,
        ok: check.lost === 0 && check.duplicated === 0 && wrong.length === 0 && struck > 0,
      };
    },
    { concurrency: ENV_CASES.length },
  );
}

export async function trainerFaults(
  stack: LocalStack,
  client: EdgerollClient,
  groups: number,
): Promise<Row[]> {
  const rows: Row[] = [];
  const trainer = new EdgerollClient({ baseUrl: stack.apiUrl, token: stack.tokens.trainer });
  const other = new EdgerollClient({ baseUrl: stack.apiUrl, token: stack.tokens.admin });
  const runId = "trainer-pool";
  const pool = await landGroups(
    client,
    Array.from({ length: groups }, (_, i) =>
      guessRequest(runId, i, "sim", { sampling: { model: "sim", temperature: 1, seed: 5000 + i } }),
    ),
  );
  const lease = (c: EdgerollClient, max: number, seconds = 60) =>
    c.lease({
      max_groups: max,
      run_id: runId,
      skip_uniform_groups: false,
      lease_seconds: seconds,
      include: [],
    });

  // A trainer crashes after leasing: its lease expires and the groups are served again.
  const crashed = await lease(trainer, 3, 1);
  await new Promise((resolve) => setTimeout(resolve, 1300));
  const redelivered = await lease(trainer, 3);
  const same = redelivered.groups.filter((g) =>
    crashed.groups.some((c) => c.group_id === g.group_id),
  ).length;
  rows.push({
    fault: "trainer: crash after lease (lease expires unacked)",
    tried: `${crashed.groups.length} groups leased for 1 s, never acked`,
    outcome: `${same} of ${crashed.groups.length} served again on the next lease, deliveries now ${redelivered.groups.map((g) => g.deliveries).join(", ")}`,
    expected: "every unacked group is served again",
    lost: crashed.groups.length - same,
    duplicated: 0,
    ok: same === crashed.groups.length && crashed.groups.length > 0,
  });

  // Double ack, and an ack by a trainer that did not lease the batch.
  const first = await trainer.ack(redelivered.batch_id as string);
  const second = await trainer.ack(redelivered.batch_id as string);
  let stolen = "accepted";
  try {
    await other.ack(redelivered.batch_id as string);
  } catch (error) {
    stolen = error instanceof EdgerollError ? `${error.status} ${error.code}` : String(error);
  }
  rows.push({
    fault: "trainer: double ack, and an ack by another trainer",
    tried: `1 batch of ${redelivered.groups.length} groups acked twice by its trainer, once by another`,
    outcome: `first ack ${first.acked_groups} groups; second: already_acked=${second.already_acked}; other trainer: ${stolen}`,
    expected: "second ack is a no-op that says so; another trainer is refused (403)",
    lost: 0,
    duplicated: 0,
    ok:
      first.acked_groups === redelivered.groups.length &&
      second.already_acked &&
      stolen === "403 forbidden",
  });

  // Many trainers lease at the same moment: no group goes to two of them.
  const remaining = groups - redelivered.groups.length;
  const trainers = 8;
  const batches = await Promise.all(
    Array.from({ length: trainers }, () => lease(trainer, Math.ceil(remaining / trainers) + 1)),
  );
  const served = batches.flatMap((b) => b.groups.map((g) => g.group_id));
  const unique = new Set(served).size;
  rows.push({
    fault: `trainer: ${trainers} concurrent leases`,
    tried: `${trainers} leases at once over ${remaining} available groups`,
    outcome: `${served.length} groups served, ${unique} distinct`,
    expected: "disjoint batches; every available group served once",
    lost: remaining - unique,
    duplicated: served.length - unique,
    ok: served.length === unique && unique === remaining,
  });
  await Promise.all(
    batches.filter((b) => b.batch_id).map((b) => trainer.ack(b.batch_id as string)),
  );
  const acked = runSql(
    `SELECT accounting, COUNT(*) AS n FROM group_accounting WHERE run_id = '${runId}' GROUP BY accounting`,
    {
      persistTo: stack.persistTo,
    },
  );
  rows.push({
    fault: "trainer: accounting after the above",
    tried: `${pool.length} groups`,
    outcome: acked.map((r) => `${r.n} ${r.accounting}`).join(", "),
    expected: "every group acked exactly once",
    lost: pool.length - Number(acked.find((r) => r.accounting === "acked")?.n ?? 0),
    duplicated: 0,
    ok: acked.length === 1 && Number(acked[0]?.n) === pool.length,
  });
  return rows;
}

/** Bad inputs: each refused with a 4xx that names the problem, and nothing stored. */
export async function badInput(stack: LocalStack, repeats: number): Promise<Row[]> {
  const url = stack.apiUrl;
  const valid = {
    env: "exact-answer",
    example: { id: "bad", input: "What is 1 + 1?", output: "2" },
    group_size: 2,
    sampling: { model: "sim" },
  };
  const send = (
    path: string,
    body: BodyInit | null,
    token: string | null = stack.tokens.admin,
    method = "POST",
  ) =>
    fetch(`${url}${path}`, {
      method,
      headers: {
        "content-type": "application/json",
        ...(token ? { authorization: `Bearer ${token}` } : {}),
      },
      ...(body === null ? {} : { body }),
    });
  const json = (value: unknown) => JSON.stringify(value);
  const cases: [string, () => Promise<Response>, number][] = [
    [
      "malformed JSON",
      () => send("/v1/groups", `{"env": "exact-answer", "group_size": ${Math.random()}`),
      400,
    ],
    [
      "wrong type (group_size as text)",
      () => send("/v1/groups", json({ ...valid, group_size: "2" })),
      400,
    ],
    [
      "missing field (example)",
      () => send("/v1/groups", json({ ...valid, example: undefined })),
      400,
    ],
    [
      "unknown environment",
      () => send("/v1/groups", json({ ...valid, env: `nope-${Math.random()}` })),
      400,
    ],
    ["group_size 0", () => send("/v1/groups", json({ ...valid, group_size: 0 })), 400],
    ["group_size 257", () => send("/v1/groups", json({ ...valid, group_size: 257 })), 400],
    [
      "negative token limit",
      () =>
        send(
          "/v1/groups",
          json({ ...valid, sampling: { model: "sim", max_completion_tokens: -1 } }),
        ),
      400,
    ],
    [
      "absurd token limit",
      () => send("/v1/groups", json({ ...valid, max_context_tokens: 1e12 })),
      400,
    ],
    [
      "oversized body (2 MB)",
      () => send("/v1/groups", json({ ...valid, prompt_text: "x".repeat(2_000_000) })),
      413,
    ],
    ["unknown field", () => send("/v1/groups", json({ ...valid, temprature: 0.7 })), 400],
    ["body not UTF-8", () => send("/v1/groups", new Uint8Array([0x7b, 0xff, 0xfe, 0x7d])), 400],
    [
      "example the environment rejects",
      () =>
        send(
          "/v1/groups",
          json({ ...valid, env: "guess-number", example: { id: "x", input: "?" } }),
        ),
      422,
    ],
    [
      "tool-agent example without its customer and orders",
      () =>
        send(
          "/v1/groups",
          json({
            ...valid,
            env: "tool-agent",
            example: { id: "t-1", input: "Please refund my last order.", metadata: {} },
          }),
        ),
      422,
    ],
    [
      "exact-answer example without the output it scores against",
      () => send("/v1/groups", json({ ...valid, example: { id: "x", input: "What is 1 + 1?" } })),
      422,
    ],
    [
      "group id that does not exist",
      () => send(`/v1/groups/g_${"0".repeat(24)}`, null, stack.tokens.admin, "GET"),
      404,
    ],
    [
      "episode id that does not exist",
      () => send("/v1/episodes/g_nope-e0", null, stack.tokens.admin, "GET"),
      404,
    ],
    ["batch id that does not exist", () => send("/v1/batches/b_nope/ack", "{}"), 404],
    ["lease with neither max_groups nor max_episodes", () => send("/v1/batches/lease", "{}"), 400],
    ["no token", () => send("/v1/groups", json(valid), null), 401],
    ["unknown token", () => send("/v1/groups", json(valid), "forged-token-123"), 401],
    [
      "token without the role (reader starts a group)",
      () => send("/v1/groups", json(valid), stack.tokens.reader),
      403,
    ],
  ];
  const stored = () =>
    Number(runSql("SELECT COUNT(*) AS n FROM groups", { persistTo: stack.persistTo })[0]?.n ?? 0);
  const before = stored();
  const rows: Row[] = [];
  for (const [label, request, expected] of cases) {
    const statuses: number[] = [];
    let named = 0;
    for (let i = 0; i < repeats; i++) {
      const response = await request();
      statuses.push(response.status);
      const body = (await response.json().catch(() => null)) as {
        error?: { message?: string };
      } | null;
      if ((body?.error?.message ?? "").length > 0) named++;
    }
    const histogram = Object.entries(countBy(statuses, String))
      .map(([s, n]) => `${n}x ${s}`)
      .join(", ");
    rows.push({
      fault: `bad input: ${label}`,
      tried: `${repeats} requests`,
      outcome: `${histogram}; ${named} with a message`,
      expected: `${expected} with a message naming the problem; nothing stored`,
      lost: 0,
      duplicated: 0,
      ok: statuses.every((s) => s === expected) && named === repeats,
    });
  }
  // An idempotency key reused with another body: 409, and still one group.
  const key = `reused-${Date.now()}`;
  const once = await fetch(`${url}/v1/groups`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      authorization: `Bearer ${stack.tokens.admin}`,
      "idempotency-key": key,
    },
    body: json(valid),
  });
  const conflicts: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const again = await fetch(`${url}/v1/groups`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        authorization: `Bearer ${stack.tokens.admin}`,
        "idempotency-key": key,
      },
      body: json({ ...valid, group_size: 3 + i }),
    });
    conflicts.push(again.status);
  }
  const after = stored();
  rows.push({
    fault: "bad input: idempotency key reused with another body",
    tried: `1 start, then ${repeats} conflicting retries`,
    outcome: `${once.status}, then ${Object.entries(countBy(conflicts, String))
      .map(([s, n]) => `${n}x ${s}`)
      .join(", ")}; groups stored by this whole suite: ${after - before}`,
    expected: "409; only the first group exists",
    lost: 0,
    duplicated: after - before - 1,
    ok: once.status === 202 && conflicts.every((s) => s === 409) && after - before === 1,
  });
  return rows;
}
