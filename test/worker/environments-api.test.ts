// The environments a Worker runs, asked by name, and a dataset's rows checked against one before
// a job starts any of them: every refused row named by its place and id, nothing stored.
import { listDurableObjectIds } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type {
  EnvironmentInfo,
  EnvironmentList,
  ExampleValidation,
} from "../../src/client/edgeroll-client";
import { api, count, errorOf, getJson, guessExample, post } from "./helpers";

async function storedGroups(): Promise<number> {
  return (
    (await count("SELECT COUNT(*) AS n FROM groups")) +
    (await listDurableObjectIds(env.ROLLOUT_GROUP)).length
  );
}

const validate = (name: string, examples: unknown[]) =>
  post<ExampleValidation>(`/v1/environments/${name}/validate`, { examples });

describe("GET /v1/environments/:name", () => {
  it("says a built-in is built in, and where a remote one is served", async () => {
    expect(await getJson<EnvironmentInfo>("/v1/environments/guess-number")).toEqual({
      name: "guess-number",
      version: "1",
      remote: false,
      base_url: null,
    });
    const remote = await getJson<EnvironmentInfo>("/v1/environments/guess-number-remote");
    expect(remote).toMatchObject({ name: "guess-number-remote", remote: true });
    expect(remote.base_url).toBe(env.TEST_REMOTE_ENV_URL);
    const listed = await getJson<EnvironmentList>("/v1/environments");
    expect(listed.remote).toContain("guess-number-remote");
  });

  it("404s an unknown name, listing the registered ones as POST /v1/groups does", async () => {
    const unknown = await api("/v1/environments/chess");
    expect(unknown.status).toBe(404);
    expect(await errorOf(unknown)).toMatchObject({
      code: "not_found",
      message: expect.stringMatching(
        /^unknown environment "chess" \(registered: .*guess-number, guess-number-remote/,
      ),
    });
  });
});

describe("POST /v1/environments/:name/validate", () => {
  it("names every row the environment cannot play, by index and id, and stores nothing", async () => {
    const before = await storedGroups();
    const answer = await validate("guess-number", [
      guessExample("v-ok", 20),
      { id: "v-big", input: "Find it.", metadata: { secret: 500 } },
      { id: "v-no-input", metadata: { secret: 3 } },
      guessExample("v-ok-2", 99),
      "not even an object",
    ]);
    expect(answer.status).toBe(200);
    expect(answer.body.checked).toBe(5);
    expect(answer.body.rejected.map((r) => [r.index, r.id, r.code])).toEqual([
      [1, "v-big", "example_rejected"],
      [2, "v-no-input", "invalid_request"],
      [4, null, "invalid_request"],
    ]);
    expect(answer.body.rejected[0]?.message).toMatch(
      /rejected the example: example\.metadata\.secret: Too big/,
    );
    expect(answer.body.rejected[0]?.details).toEqual([
      { path: "example.metadata.secret", message: expect.stringMatching(/Too big/) },
    ]);
    expect(answer.body.rejected[1]?.message).toMatch(/^example: input: /);
    expect(await storedGroups()).toBe(before);
  });

  it("asks a remote environment, as a group's start would", async () => {
    const answer = await validate("guess-number-remote", [
      guessExample("vr-ok", 20),
      { id: "vr-big", input: "Find it.", metadata: { secret: 500 } },
    ]);
    expect(answer.status).toBe(200);
    expect(answer.body.rejected.map((r) => [r.index, r.id, r.code])).toEqual([
      [1, "vr-big", "example_rejected"],
    ]);
  });

  it("is a 503 to retry when a remote environment cannot answer, a 404 for an unknown name", async () => {
    const down = await validate("remote-down", [guessExample("vd", 20)]);
    expect(down.status).toBe(503);
    expect(down.body).toMatchObject({ error: { code: "environment_unavailable" } });
    const unknown = await validate("chess", [guessExample("vu", 20)]);
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({
      error: { code: "not_found", message: expect.stringMatching(/unknown environment "chess"/) },
    });
  });

  it("takes at most 40 rows a call", async () => {
    const rows = Array.from({ length: 41 }, (_, i) => guessExample(`v-${i}`, 10));
    const answer = await validate("guess-number", rows);
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ error: { code: "invalid_request" } });
  });
});

describe("a POST body that is not sent as JSON", () => {
  it("is refused with 415, saying it was not read as JSON and why, and nothing is stored", async () => {
    const before = await storedGroups();
    const body = JSON.stringify({
      env: "guess-number",
      example: guessExample("form-1", 42),
      group_size: 2,
      sampling: { model: "sim" },
    });
    // What `curl -d '{...}'` sends without -H 'content-type: application/json'.
    const form = await api("/v1/groups", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body,
    });
    expect(form.status).toBe(415);
    expect(await errorOf(form)).toMatchObject({
      code: "unsupported_media_type",
      message: expect.stringMatching(
        /^the body was not read as JSON: it came with content-type "application\/x-www-form-urlencoded" \(what curl -d sends unless told otherwise\); send it with the header content-type: application\/json$/,
      ),
    });
    // Bytes, so that fetch adds no content-type of its own (a string gets text/plain).
    const untyped = await api("/v1/batches/lease", {
      method: "POST",
      body: new TextEncoder().encode('{"max_groups": 1}'),
    });
    expect(untyped.status).toBe(415);
    expect((await errorOf(untyped)).message).toMatch(/it came with no content-type/);
    expect(await storedGroups()).toBe(before);
  });

  it("does not touch a POST with no body, nor one sent as JSON with a charset", async () => {
    const ack = await api("/v1/batches/b_nope/ack", { method: "POST" });
    expect(ack.status).toBe(404);
    const lease = await api("/v1/batches/lease", {
      method: "POST",
      headers: { "content-type": "application/json; charset=utf-8" },
      body: '{"max_groups": 1, "run_id": "json-charset"}',
    });
    expect(lease.status).toBe(200);
  });
});

describe("GET /v1/runs/:id for a run no group was started in", () => {
  it("is a 404 naming it, not a run of zeros; a run whose trainer set a policy exists", async () => {
    const typo = await api("/v1/runs/does-not-exist");
    expect(typo.status).toBe(404);
    expect(await errorOf(typo)).toMatchObject({
      code: "not_found",
      message: expect.stringMatching(/^no run "does-not-exist": no group was started/),
    });
    const policy = await api("/v1/runs/policy-only/policy", {
      method: "POST",
      headers: {
        "content-type": "application/json",
        authorization: "Bearer test-token-trainer",
      },
      body: JSON.stringify({ version: 2 }),
    });
    expect(policy.status).toBe(200);
    expect((await api("/v1/runs/policy-only")).status).toBe(200);
  });
});
