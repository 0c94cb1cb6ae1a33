import { env } from "cloudflare:workers";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { authorize } from "../../src/api/auth";
import { renderError } from "../../src/api/errors";
import type { AckResult, Batch, GroupView, StartedGroup } from "../../src/client/edgeroll-client";
import { api, errorOf, guessExample, TOKENS, waitForGroup } from "./helpers";

const as = (token: string | null, init: RequestInit = {}): RequestInit => ({
  ...init,
  headers: {
    "content-type": "application/json",
    authorization: token === null ? "" : `Bearer ${token}`,
    ...init.headers,
  },
});

const group = {
  env: "guess-number",
  example: guessExample("access", 20),
  group_size: 2,
  run_id: "access",
  sampling: { model: "sim", temperature: 1, seed: 3 },
};
const post = (body: unknown) => ({ method: "POST", body: JSON.stringify(body) });

describe("access by role", () => {
  type RoleName = "producer" | "trainer" | "reader";
  const routes: [string, RequestInit, RoleName[]][] = [
    ["/v1/groups", post(group), ["producer"]],
    ["/v1/batches/lease", post({ max_groups: 1 }), ["trainer"]],
    ["/v1/batches/b_x/ack", post({}), ["trainer"]],
    ["/v1/runs/access/policy", post({ version: 1 }), ["trainer"]],
    ["/v1/datasets/access", post({}), ["trainer"]],
    ["/v1/groups/g_00000000000000000000000/rescore", post({}), ["trainer"]],
    // A producer follows the groups it starts; producer and trainer both follow their run (its
    // progress, pacing and policy).
    ["/v1/groups/g_00000000000000000000000", {}, ["reader", "producer"]],
    ["/v1/runs/access", {}, ["reader", "producer", "trainer"]],
    ["/v1/runs/access/policy", {}, ["reader", "producer", "trainer"]],
    // Every role lists the environments; where a remote one runs, and a dataset's check, are
    // for producers.
    ["/v1/environments", {}, ["reader", "producer", "trainer"]],
    ["/v1/environments/guess-number", {}, ["producer"]],
    // ...and the datasets: a trainer pushes them, a producer names them in runs.
    ["/v1/datasets", {}, ["reader", "producer", "trainer"]],
    ["/v1/datasets/access", {}, ["reader", "producer", "trainer"]],
    [
      "/v1/environments/guess-number/validate",
      post({ examples: [guessExample("access-v", 20)] }),
      ["producer"],
    ],
    ["/v1/episodes?run_id=x", {}, ["reader"]],
    ["/v1/episodes/g_00000000000000000000000-e0", {}, ["reader"]],
    ["/", {}, ["reader"]],
  ];

  for (const [path, init, roles] of routes) {
    it(`${init.method ?? "GET"} ${path} needs a token with the ${roles.join(" or ")} role`, async () => {
      const missing = await api(path, as(null, init));
      expect(missing.status).toBe(401);
      expect((await errorOf(missing)).code).toBe("unauthorized");
      const unknown = await api(path, as("not-a-real-token", init));
      expect(unknown.status).toBe(401);
      const all = { producer: TOKENS.producer, trainer: TOKENS.trainer, reader: TOKENS.reader };
      for (const [role, token] of Object.entries(all)) {
        const answer = await api(path, as(token, init));
        if (roles.includes(role as RoleName)) {
          expect(answer.status, role).not.toBe(401);
          expect(answer.status, role).not.toBe(403);
        } else {
          expect(answer.status, role).toBe(403);
          // The roles it needs and the ones it has, for a client to say which token to use.
          expect(await errorOf(answer)).toMatchObject({
            code: "forbidden",
            message: expect.stringContaining(roles[0] as string),
            details: { needs_one_of: roles, has: [role] },
          });
        }
      }
    });
  }

  it("a producer reads the status_url of a group it started", async () => {
    const started = await api("/v1/groups", as(TOKENS.producer, post(group)));
    expect(started.status).toBe(202);
    const { group_id, status_url } = await started.json<StartedGroup>();
    const status = await api(status_url, as(TOKENS.producer));
    expect(status.status).toBe(200);
    expect((await status.json<GroupView>()).run_id).toBe("access");
    // Landed, the status comes from D1 instead: the producer still reads it.
    await waitForGroup(group_id);
    const landed = await api(status_url, as(TOKENS.producer));
    expect((await landed.json<GroupView>()).status).toBe("landed");
    // Transcripts stay with readers.
    const episodes = await api("/v1/episodes?run_id=access", as(TOKENS.producer));
    expect(episodes.status).toBe(403);
  });

  it("health checks need no token", async () => {
    expect((await api("/healthz", as(null))).status).toBe(200);
  });

  it("the dashboard takes a token once from the link and keeps it in an HttpOnly cookie", async () => {
    const response = await api(`/?token=${TOKENS.reader}`, {
      headers: { authorization: "" },
      redirect: "manual",
    });
    expect(response.status).toBe(303);
    expect(response.headers.get("location")).toBe("/");
    const cookie = response.headers.get("set-cookie") ?? "";
    expect(cookie).toMatch(/edgeroll_token=test-token-reader/);
    expect(cookie).toMatch(/HttpOnly/i);
    const page = await api("/", {
      headers: { authorization: "", cookie: cookie.split(";")[0] ?? "" },
    });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("<h1>All runs</h1>");
  });

  it("only the trainer that leased a batch may ack or release it", async () => {
    const started = await (
      await api("/v1/groups", as(TOKENS.producer, post(group)))
    ).json<StartedGroup>();
    await waitForGroup(started.group_id);
    const lease = await (
      await api(
        "/v1/batches/lease",
        as(TOKENS.trainer, post({ max_groups: 5, run_id: "access", skip_uniform_groups: false })),
      )
    ).json<Batch>();
    expect(lease.batch_id).toMatch(/^b_/);
    for (const verb of ["ack", "release"]) {
      const stolen = await api(
        `/v1/batches/${lease.batch_id}/${verb}`,
        as(TOKENS.otherTrainer, post({})),
      );
      expect(stolen.status).toBe(403);
      expect((await errorOf(stolen)).message).toMatch(/leased by another trainer/);
    }
    const own = await (
      await api(`/v1/batches/${lease.batch_id}/ack`, as(TOKENS.trainer, post({})))
    ).json<AckResult>();
    expect(own.acked_groups).toBe(lease.groups.length);
  });
});

describe("with no tokens configured", () => {
  const app = new Hono<{ Bindings: Env }>()
    .use(authorize("reader"))
    .get("/", (c) => c.text("ok"))
    .onError(renderError);
  const unconfigured = { ...env, API_TOKENS: undefined } as unknown as Env;

  it("serves local requests", async () => {
    for (const host of ["127.0.0.1:8787", "localhost:8787", "[::1]:8787"]) {
      expect((await app.request(`http://${host}/`, {}, unconfigured)).status).toBe(200);
    }
  });

  it("refuses every other request rather than running open", async () => {
    const response = await app.request("https://edgeroll.example.workers.dev/", {}, unconfigured);
    expect(response.status).toBe(401);
    expect((await errorOf(response)).message).toMatch(/API_TOKENS is not configured/);
  });
});
