/**
 * Remote environments over HTTP, in workerd: a real server (test/setup/remote-env-host.ts,
 * guess-number behind the remote protocol) registered by REMOTE_ENVS only, driven by the real
 * step and score workers against the real simulator. Its episodes must match the built-in
 * guess-number's for the same samples, and each of its faults must fail only its own episodes,
 * with a named reason.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { EpisodeView, GroupView, StartGroupInput } from "../../src/client/edgeroll-client";
import { END } from "../../src/rollout/outcomes";
import {
  count,
  episodesOf,
  errorOf,
  getEpisode,
  getJson,
  guessExample,
  itemAt,
  postGroup,
  startGroup,
  waitForGroup,
} from "./helpers";

const sampling = { model: "sim", temperature: 1, seed: 21, max_completion_tokens: 64 };

/** The fixture server's counters (test/setup/remote-env-server.ts). */
interface FixtureStats {
  byPath: Record<string, number>;
  /** Attempts per `path key`: a retried call arrives again with the same key. */
  byKey: Record<string, number>;
}

async function fixtureStats(): Promise<FixtureStats> {
  return (await fetch(`${env.TEST_REMOTE_ENV_URL}/fixture/stats`)).json<FixtureStats>();
}

async function landedEpisodes(
  envName: string,
  example: StartGroupInput["example"],
  size = 3,
): Promise<EpisodeView[]> {
  const id = await startGroup({
    env: envName,
    example,
    group_size: size,
    sampling,
    run_id: `remote-${envName}`,
  });
  const group = await waitForGroup(id, 45_000);
  expect(group.status).toBe("landed");
  return episodesOf(group);
}

const faulty = (id: string, fault: string) => ({
  ...guessExample(id, 50),
  metadata: { secret: 50, remote_fault: fault },
});

describe("remote environments", () => {
  it("are listed with the built-in ones, by configuration only", async () => {
    const listed = await getJson<{ environments: string[]; remote: string[] }>("/v1/environments");
    expect(listed.environments).toEqual(
      expect.arrayContaining(["guess-number", "guess-number-remote", "remote-down"]),
    );
    expect(listed.remote.sort()).toEqual([
      "guess-number-remote",
      "remote-down",
      "rubric-quiz-remote",
      "tool-agent-native-remote",
    ]);
  });

  it("land the same transcripts and rewards as the built-in environment for the same samples", async () => {
    const example = guessExample("remote-same-1", 63);
    const [local, remote] = await Promise.all([
      landedEpisodes("guess-number", example),
      landedEpisodes("guess-number-remote", example),
    ]);
    for (const [i, episode] of remote.entries()) {
      const twin = itemAt(local, i);
      expect(episode.status).toBe(twin.status);
      expect(episode.messages.map((m) => [m.role, m.content])).toEqual(
        twin.messages.map((m) => [m.role, m.content]),
      );
      expect(episode.score).toBe(twin.score);
      expect(episode.per_turn_rewards).toEqual(twin.per_turn_rewards);
      expect(episode.end_reason).toBe(twin.end_reason);
    }
    // Every step call named its episode and turn for idempotency.
    const keys = Object.keys((await fixtureStats()).byKey).filter((k) => k.startsWith("/step "));
    const id = itemAt(remote).episode_id;
    expect(keys).toContain(`/step ${id}:0`);
  });

  it("retries a busy server with the same Idempotency-Key and lands the episode", async () => {
    const episode = itemAt(
      await landedEpisodes("guess-number-remote", faulty("remote-busy-1", "busy_once"), 1),
    );
    expect(episode.status).toBe("completed");
    const stats = await fixtureStats();
    expect(stats.byKey[`/step ${episode.episode_id}:0`]).toBe(2);
  });

  it("fail only their own episodes, with named reasons, when the server answers garbage, errors, hangs or goes away", async () => {
    const cases: [string, string][] = [
      ["garbage", END.env_error],
      ["wrong_shape", END.env_error],
      ["error", END.env_error],
      ["slow", END.step_timeout],
      ["down_after_start", END.env_unavailable],
    ];
    const groups: GroupView[] = await Promise.all(
      cases.map(async ([fault]) => {
        const id = await startGroup({
          env: "guess-number-remote",
          example: faulty(`remote-${fault}`, fault),
          group_size: 2,
          sampling,
          run_id: "remote-faults",
        });
        return waitForGroup(id, 45_000);
      }),
    );
    const healthy = await landedEpisodes(
      "guess-number-remote",
      guessExample("remote-healthy-1", 12),
      2,
    );
    for (const [i, [fault, reason]] of cases.entries()) {
      const group = itemAt(groups, i);
      // Every episode of these groups failed, so the group is recorded failed, with them.
      expect(group.status, fault).toBe("failed");
      for (const e of group.episodes) {
        const episode = await getEpisode(e.episode_id);
        expect([fault, episode.status, episode.failure_reason]).toEqual([fault, "failed", reason]);
      }
    }
    expect(healthy.every((e) => e.status === "completed")).toBe(true);
  });

  it("answers 503 environment_unavailable, storing nothing, when the server is down at the start", async () => {
    const response = await postGroup({
      env: "remote-down",
      example: guessExample("remote-down-1", 5),
      group_size: 1,
      sampling,
    });
    expect(response.status).toBe(503);
    expect(await errorOf(response)).toMatchObject({
      code: "environment_unavailable",
      message: expect.stringMatching(/remote-down/),
    });
  });

  it("refuse at /start as a built-in environment does: a 422 naming the fields, storing nothing", async () => {
    const named = await postGroup({
      env: "guess-number-remote",
      example: { id: "remote-refused-1", input: "Find it.", metadata: { secret: 500 } },
      group_size: 1,
      sampling,
    });
    expect(named.status).toBe(422);
    const error = await errorOf(named);
    expect(error).toMatchObject({
      code: "example_rejected",
      details: [{ path: "example.metadata.secret", message: expect.stringMatching(/100/) }],
    });
    expect(error.message).toMatch(
      /^environment "guess-number-remote" rejected the example: example\.metadata\.secret: /,
    );
    // A refusal that names no field is about the example as a whole.
    const bare = await postGroup({
      env: "guess-number-remote",
      example: faulty("remote-refused-2", "refuse"),
      group_size: 1,
      sampling,
    });
    expect(bare.status).toBe(422);
    expect((await errorOf(bare)).details).toEqual([
      { path: "example", message: "this server plays no such example" },
    ]);
    expect(
      await count("SELECT COUNT(*) AS n FROM groups WHERE example_id LIKE 'remote-refused-%'"),
    ).toBe(0);
  });

  it("takes no URLs from callers", async () => {
    const response = await postGroup({
      env: "http://127.0.0.1:1/",
      example: guessExample("remote-url-1", 5),
      group_size: 1,
      sampling,
    });
    expect(response.status).toBe(400);
    expect((await errorOf(response)).message).toMatch(/env: unknown environment/);
  });
});
