// Asynchronous RL, the run's policy (issue 20, first part): the trainer sets the run's version,
// groups that name none take it, a group that names one too far behind is refused, and the
// version only moves forward.
import { describe, expect, it } from "vitest";
import type { StartGroupInput } from "../../src/client/edgeroll-client";
import {
  api,
  d1,
  errorOf,
  guessExample,
  postGroup,
  postPolicy,
  startGroup,
  TOKENS,
  waitForGroup,
} from "./helpers";

const group = (run: string, extra: Partial<StartGroupInput> = {}): StartGroupInput => ({
  env: "guess-number",
  example: guessExample(`${run}-1`, 40),
  group_size: 1,
  run_id: run,
  sampling: { model: "sim", temperature: 0 },
  ...extra,
});

describe("a run's policy", () => {
  it("is set by the trainer, read by anyone with the reader role, and visible in SQL", async () => {
    expect((await api("/v1/runs/rp-read/policy")).status).toBe(404);
    const set = await postPolicy("rp-read", { version: 3, max_lag: 1 });
    expect(set.status).toBe(200);
    expect(await set.json()).toMatchObject({
      run_id: "rp-read",
      version: 3,
      max_lag: 1,
      paused: false,
    });
    const read = await api("/v1/runs/rp-read/policy", {
      headers: { authorization: `Bearer ${TOKENS.reader}` },
    });
    expect(await read.json()).toMatchObject({ version: 3, max_lag: 1 });
    // A producer cannot move the trainer's policy.
    expect((await postPolicy("rp-read", { version: 4 }, TOKENS.producer)).status).toBe(403);
    expect(
      await d1("SELECT version, max_lag, paused FROM run_policies WHERE run_id = 'rp-read'"),
    ).toEqual([{ version: 3, max_lag: 1, paused: 0 }]);
  });

  it("gives groups that name no policy_version the run's, and keeps a named one", async () => {
    await postPolicy("rp-default", { version: 7 });
    const taken = await waitForGroup(await startGroup(group("rp-default")));
    expect(taken.policy_version).toBe(7);
    const named = await waitForGroup(
      await startGroup(
        group("rp-default", { policy_version: 6, example: guessExample("rp-2", 41) }),
      ),
    );
    expect(named.policy_version).toBe(6);
    // A run that never set one behaves as before.
    const plain = await waitForGroup(await startGroup(group("rp-none")));
    expect(plain.policy_version).toBe(0);
    // Its turns were all sampled by the group's own version: a span of one.
    expect(plain).toMatchObject({ policy_version_min: 0, policy_version_max: 0 });
  });

  it("refuses a group that would start more than max_lag behind, storing nothing", async () => {
    await postPolicy("rp-stale", { version: 10, max_lag: 2 });
    const response = await postGroup(group("rp-stale", { policy_version: 7 }));
    expect(response.status).toBe(409);
    expect(await errorOf(response)).toMatchObject({
      code: "policy_too_stale",
      message: expect.stringMatching(
        /^policy_version: 7 is 3 versions behind run "rp-stale"'s 10, more than its max_lag of 2/,
      ),
    });
    expect(await d1("SELECT id FROM groups WHERE run_id = 'rp-stale'")).toEqual([]);
    expect((await postGroup(group("rp-stale", { policy_version: 8 }))).status).toBe(202);
  });

  it("only moves forward, and keeps max_lag and paused unless told", async () => {
    await postPolicy("rp-forward", { version: 5, max_lag: 3, paused: true });
    const back = await postPolicy("rp-forward", { version: 4 });
    expect(back.status).toBe(409);
    expect((await errorOf(back)).code).toBe("policy_version_regressed");
    const next = await postPolicy("rp-forward", { version: 6 });
    expect(await next.json()).toMatchObject({ version: 6, max_lag: 3, paused: true });
    const lifted = await postPolicy("rp-forward", { version: 6, max_lag: null, paused: false });
    expect(await lifted.json()).toMatchObject({ version: 6, max_lag: null, paused: false });
  });

  it("refuses a body that is not a policy, naming the field", async () => {
    const response = await postPolicy("rp-bad", { version: -1 });
    expect(response.status).toBe(400);
    expect((await errorOf(response)).message).toMatch(/^version/);
  });
});
