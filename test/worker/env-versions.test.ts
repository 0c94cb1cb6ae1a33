// Environment versions (issue 32): every group and episode records the version its environment
// declares (a built-in's class, a remote server's /info), and a group that pins another is a
// 409 that stores nothing, so a run never mixes two sets of rules unnoticed.
import { describe, expect, it } from "vitest";
import type { EnvironmentInfo } from "../../src/client/edgeroll-client";
import { GuessNumber } from "../../src/environments/guess-number";
import { REMOTE_GUESS_NUMBER_VERSION } from "../setup/remote-env-version";
import {
  count,
  d1,
  errorOf,
  getJson,
  guessExample,
  leaseBatch,
  postGroup,
  startGroup,
  TOKENS,
  waitForGroup,
} from "./helpers";

const sampling = { model: "sim", temperature: 0.7, seed: 5 };
const BUILT_IN_VERSION = new GuessNumber().version;

const group = (run: string, env: string, extra: object = {}) => ({
  env,
  example: guessExample(`${run}-x`, 42),
  group_size: 2,
  run_id: run,
  sampling,
  ...extra,
});

const versionsOf = (table: "groups" | "episodes", run: string) =>
  d1<{ env_version: string | null }>(
    `SELECT DISTINCT env_version FROM ${table} WHERE run_id = ?`,
    run,
  ).then((rows) => rows.map((r) => r.env_version));

describe("environment versions", () => {
  it("are declared: a built-in's by its class, a remote one's by its /info", async () => {
    const producer = { headers: { authorization: `Bearer ${TOKENS.producer}` } };
    const builtIn = await getJson<EnvironmentInfo>("/v1/environments/guess-number", producer);
    const remote = await getJson<EnvironmentInfo>("/v1/environments/guess-number-remote", producer);
    const down = await getJson<EnvironmentInfo>("/v1/environments/remote-down", producer);
    expect([builtIn.version, remote.version, down.version]).toEqual([
      "1",
      REMOTE_GUESS_NUMBER_VERSION,
      null,
    ]);
  });

  it("are recorded on every group and episode, the one its environment declares", async () => {
    const ids = [
      await startGroup(group("ver-built-in", "guess-number")),
      await startGroup(group("ver-remote", "guess-number-remote")),
    ];
    const live = await getJson<{ env_version: string | null }>(`/v1/groups/${ids[0]}`);
    expect(live.env_version).toBe(BUILT_IN_VERSION);
    for (const id of ids) await waitForGroup(id);
    expect(await versionsOf("groups", "ver-built-in")).toEqual([BUILT_IN_VERSION]);
    expect(await versionsOf("episodes", "ver-built-in")).toEqual([BUILT_IN_VERSION]);
    expect(await versionsOf("groups", "ver-remote")).toEqual([REMOTE_GUESS_NUMBER_VERSION]);
    expect(await versionsOf("episodes", "ver-remote")).toEqual([REMOTE_GUESS_NUMBER_VERSION]);
    const landed = await getJson<{ env_version: string | null }>(`/v1/groups/${ids[1]}`);
    expect(landed.env_version).toBe(REMOTE_GUESS_NUMBER_VERSION);
    // And served with the group, so a trainer can tell two rule sets apart in one batch.
    const leased = await leaseBatch({
      run_id: "ver-remote",
      max_groups: 10,
      skip_uniform_groups: false,
    });
    expect(leased.body.groups.map((g) => g.env_version)).toEqual([REMOTE_GUESS_NUMBER_VERSION]);
  });

  it("may be pinned: the declared one runs, another is a 409 naming both, storing nothing", async () => {
    const pinned = await startGroup(
      group("ver-pinned", "guess-number-remote", { env_version: REMOTE_GUESS_NUMBER_VERSION }),
    );
    expect((await waitForGroup(pinned)).status).toBe("landed");
    for (const [env, pin, declared] of [
      ["guess-number", "0.9", BUILT_IN_VERSION],
      ["guess-number-remote", BUILT_IN_VERSION, REMOTE_GUESS_NUMBER_VERSION],
    ] as const) {
      const response = await postGroup(group("ver-mismatch", env, { env_version: pin }));
      expect(response.status).toBe(409);
      expect(await errorOf(response)).toMatchObject({
        code: "env_version_mismatch",
        message: `env_version: the group pins "${pin}" but environment "${env}" is at version "${declared}"`,
      });
    }
    expect(await count("SELECT COUNT(*) AS n FROM groups WHERE run_id = 'ver-mismatch'")).toBe(0);
  });

  it("refuse a pin that is not a version string", async () => {
    const response = await postGroup(group("ver-bad", "guess-number", { env_version: 3 }));
    expect(response.status).toBe(400);
    expect((await errorOf(response)).message).toContain("env_version");
  });
});
