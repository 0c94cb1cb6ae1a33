import { listDurableObjectIds } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { EpisodeView, GroupView, StartedGroup } from "../../src/client/edgeroll-client";
import {
  type Answer,
  api,
  count,
  type ErrorBody,
  errorOf,
  getJson,
  guessExample,
  itemAt,
  postGroup,
  startGroup,
  waitForGroup,
} from "./helpers";

const valid = {
  env: "guess-number",
  example: guessExample("api-1", 42),
  group_size: 2,
  sampling: { model: "sim", temperature: 0 },
};

async function refused(body: unknown, init: RequestInit = {}): Promise<Answer<ErrorBody>> {
  const response = await api("/v1/groups", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: typeof body === "string" || body instanceof Uint8Array ? body : JSON.stringify(body),
    ...init,
  });
  return { status: response.status, body: await response.json<ErrorBody>() };
}

async function storedGroups(): Promise<number> {
  const rows = await count("SELECT COUNT(*) AS n FROM groups");
  return rows + (await listDurableObjectIds(env.ROLLOUT_GROUP)).length;
}

describe("POST /v1/groups refuses bad input, naming the problem, and stores nothing", () => {
  const cases: [string, unknown, number, string, RegExp][] = [
    ["malformed JSON", '{"env": "guess-number",', 400, "malformed_json", /JSON/i],
    ["a missing field", { ...valid, group_size: undefined }, 400, "invalid_request", /group_size/],
    ["a wrong type", { ...valid, group_size: "4" }, 400, "invalid_request", /group_size: .*number/],
    ["group_size 0", { ...valid, group_size: 0 }, 400, "invalid_request", /group_size/],
    ["group_size 257", { ...valid, group_size: 257 }, 400, "invalid_request", /group_size/],
    [
      "an unknown environment",
      { ...valid, env: "chess" },
      400,
      "invalid_request",
      /env: unknown environment "chess" \(registered: .*guess-number/,
    ],
    ["an unknown field", { ...valid, groupsize: 3 }, 400, "invalid_request", /groupsize/],
    [
      "a negative token limit",
      { ...valid, sampling: { model: "sim", max_completion_tokens: -5 } },
      400,
      "invalid_request",
      /sampling\.max_completion_tokens/,
    ],
    [
      "an absurd token limit",
      { ...valid, max_context_tokens: 10 ** 12 },
      400,
      "invalid_request",
      /max_context_tokens/,
    ],
    [
      "a completion budget the context cannot hold",
      {
        ...valid,
        max_context_tokens: 1000,
        sampling: { model: "sim", max_completion_tokens: 1000 },
      },
      400,
      "invalid_request",
      /sampling\.max_completion_tokens: must be smaller than max_context_tokens/,
    ],
    ["a bad run id", { ...valid, run_id: "has spaces" }, 400, "invalid_request", /run_id/],
    [
      "an example the environment rejects",
      { ...valid, example: { id: "x", input: "guess" } },
      422,
      "example_rejected",
      /environment "guess-number" rejected the example: example\.metadata\.secret: /,
    ],
  ];
  for (const [what, body, status, code, message] of cases) {
    it(`refuses ${what}`, async () => {
      const before = await storedGroups();
      const response = await refused(body);
      expect(response.status).toBe(status);
      expect(response.body.error.code).toBe(code);
      expect(response.body.error.message).toMatch(message);
      expect(await storedGroups()).toBe(before);
    });
  }

  it("refuses a body that is not UTF-8", async () => {
    const before = await storedGroups();
    const encoded = new TextEncoder().encode(
      JSON.stringify({ ...valid, example: { id: "x", input: "PLACEHOLDER" } }),
    );
    const bytes = new Uint8Array([...encoded.slice(0, 40), 0xff, 0xfe, 0xc3, ...encoded.slice(40)]);
    const response = await refused(bytes as unknown as string);
    expect(response.status).toBe(400);
    expect(response.body.error).toMatchObject({
      code: "invalid_encoding",
      message: "the request body is not valid UTF-8",
    });
    expect(await storedGroups()).toBe(before);
  });

  it("refuses a body over 1 MB", async () => {
    const response = await refused({ ...valid, prompt_text: "x".repeat(1_100_000) });
    expect(response.status).toBe(413);
    expect(response.body.error.code).toBe("payload_too_large");
  });

  it("refuses a malformed Idempotency-Key", async () => {
    const response = await refused(valid, {
      headers: { "content-type": "application/json", "idempotency-key": "has space" },
    });
    expect(response.status).toBe(400);
    expect(response.body.error.message).toMatch(/Idempotency-Key/);
  });
});

describe("idempotent starts", () => {
  it("a retried POST with the same Idempotency-Key returns the same group, not a second one", async () => {
    const headers = { "idempotency-key": "retry-me-1" };
    const first = await postGroup(valid, headers);
    const second = await postGroup(valid, headers);
    const [a, b] = [await first.json<StartedGroup>(), await second.json<StartedGroup>()];
    expect(first.status).toBe(202);
    expect(second.status).toBe(202);
    expect(b.group_id).toBe(a.group_id);
    expect([a.created, b.created]).toEqual([true, false]);
    await waitForGroup(a.group_id);
    // Still the same group after it landed and its object let go of everything.
    const third = await (await postGroup(valid, headers)).json<StartedGroup>();
    expect(third).toMatchObject({ group_id: a.group_id, created: false });
    expect(
      await count("SELECT COUNT(*) AS n FROM groups WHERE idempotency_key = ?", "retry-me-1"),
    ).toBe(1);
  });

  it("a reused key with a different body is a conflict", async () => {
    const headers = { "idempotency-key": "retry-me-2" };
    expect((await postGroup(valid, headers)).status).toBe(202);
    const response = await postGroup({ ...valid, group_size: 3 }, headers);
    expect(response.status).toBe(409);
    expect((await errorOf(response)).code).toBe("idempotency_conflict");
  });
});

describe("reading groups and episodes", () => {
  it("answers 202 with where to look, and the group reports its progress there", async () => {
    const response = await postGroup(valid);
    const body = await response.json<StartedGroup>();
    expect(response.status).toBe(202);
    expect(body.status_url).toBe(`/v1/groups/${body.group_id}`);
    const live = await getJson<GroupView>(body.status_url);
    expect(["running", "scoring", "landed"]).toContain(live.status);
    expect(live.episodes).toHaveLength(2);
    const landed = await waitForGroup(body.group_id);
    expect(landed).toMatchObject({ status: "landed", env: "guess-number", group_size: 2 });
    expect(landed.created_at <= (landed.finished_at ?? "")).toBe(true);
  });

  it("404s unknown groups, episodes and routes with the error shape", async () => {
    for (const path of [
      "/v1/groups/g_00000000000000000000000",
      "/v1/groups/nope",
      "/v1/episodes/nope",
      "/v2/anything",
    ]) {
      const response = await api(path);
      expect(response.status).toBe(404);
      expect((await errorOf(response)).code).toBe("not_found");
    }
  });

  it("serves a landed episode with its transcript, sampled turns marked", async () => {
    const id = await startGroup({ ...valid, group_size: 1 });
    const group = await waitForGroup(id);
    const episode = await getJson<EpisodeView>(`/v1/episodes/${itemAt(group.episodes).episode_id}`);
    expect(episode.status).toBe("completed");
    expect(episode.messages[0]).toMatchObject({ seq: 0, turn: null, role: "user", sampled: false });
    const sampled = episode.messages.filter((m) => m.sampled);
    expect(sampled.length).toBe(episode.turns);
    expect(sampled[0]).toMatchObject({
      role: "assistant",
      turn: 0,
      attempts: 1,
      finish_reason: "stop",
    });
  });
});
