import { beforeAll, describe, expect, it } from "vitest";
import type { EpisodePage } from "../../src/client/edgeroll-client";
import { END } from "../../src/rollout/outcomes";
import { api, getJson, guessExample, d1 as rows, startGroup, waitForGroup } from "./helpers";

/** env_summary's guess-number row before this file's groups landed (other files share D1). */
let guessNumberBefore: { runs: number; groups: number; episodes: number };

beforeAll(async () => {
  const [summary] = await rows<typeof guessNumberBefore>(
    "SELECT runs, groups, episodes FROM env_summary WHERE env = 'guess-number'",
  );
  guessNumberBefore = summary ?? { runs: 0, groups: 0, episodes: 0 };
  const groups = [
    {
      env: "guess-number",
      example: guessExample("v1", 40),
      group_size: 3,
      run_id: "views",
      policy_version: 1,
      sampling: { model: "sim", seed: 2 },
    },
    {
      env: "guess-number",
      example: guessExample("v2", 60),
      group_size: 3,
      run_id: "views",
      policy_version: 2,
      sampling: { model: "sim", temperature: 0 },
    },
    {
      env: "exact-answer",
      example: { id: "v3", input: "What is 3 * 3?", output: "9" },
      group_size: 2,
      run_id: "views",
      policy_version: 2,
      sampling: { model: "sim+fail:400" },
    },
  ];
  const ids = await Promise.all(groups.map((g) => startGroup(g)));
  await Promise.all(ids.map((id) => waitForGroup(id)));
});

describe("SQL views over episode logs", () => {
  it("run_summary: reward, success rate, turns and tokens per run and env", async () => {
    const summary = await rows("SELECT * FROM run_summary WHERE run_id = 'views' ORDER BY env");
    expect(summary.map((r) => [r.env, r.groups, r.episodes, r.failed])).toEqual([
      ["exact-answer", 1, 2, 2],
      ["guess-number", 2, 6, 0],
    ]);
    const guess = summary[1] as Record<string, number>;
    expect(guess.mean_reward).toBeGreaterThan(0);
    expect(guess.success_rate).toBeGreaterThan(0);
    expect(guess.mean_turns).toBeGreaterThan(1);
    expect(guess.tokens_processed).toBeGreaterThan(0);
  });

  it("failures_by_reason: why episodes failed, with a detail", async () => {
    const failures = await rows("SELECT * FROM failures_by_reason WHERE env = 'exact-answer'");
    expect(failures).toEqual([
      expect.objectContaining({
        reason: END.inference_rejected,
        episodes: 2,
        example_detail: expect.stringMatching(/400/),
      }),
    ]);
  });

  it("group_accounting: every group started is accounted for", async () => {
    const accounting = await rows(
      "SELECT accounting, COUNT(*) AS n FROM group_accounting WHERE run_id = 'views' GROUP BY accounting ORDER BY accounting",
    );
    expect(accounting).toEqual([
      { accounting: "failed", n: 1 },
      { accounting: "landed", n: 2 },
    ]);
    expect(
      await rows("SELECT * FROM groups_by_delivery WHERE run_id = 'views' ORDER BY accounting"),
    ).toEqual([
      expect.objectContaining({ accounting: "failed", groups: 1 }),
      expect.objectContaining({ accounting: "landed", groups: 2 }),
    ]);
  });

  it("reward_by_policy_version: reward by the policy that sampled", async () => {
    const byVersion = await rows(
      "SELECT policy_version, episodes FROM reward_by_policy_version WHERE run_id = 'views' AND env = 'guess-number'",
    );
    expect(byVersion).toEqual([
      { policy_version: 1, episodes: 3 },
      { policy_version: 2, episodes: 3 },
    ]);
    // This file's run, its two guess-number groups and their six episodes.
    const [summary] = await rows("SELECT * FROM env_summary WHERE env = 'guess-number'");
    expect(summary).toMatchObject({
      runs: guessNumberBefore.runs + 1,
      groups: guessNumberBefore.groups + 2,
      episodes: guessNumberBefore.episodes + 6,
    });
  });
});

describe("GET /v1/episodes", () => {
  it("pages through a run's landed episodes exactly once, resuming from its cursor", async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const query: string = `run_id=views&limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
      const page = await getJson<EpisodePage>(`/v1/episodes?${query}`);
      expect(page.episodes.length).toBeLessThanOrEqual(3);
      seen.push(...page.episodes.map((e) => e.episode_id));
      cursor = page.next_cursor;
    } while (cursor !== null);
    expect(seen).toHaveLength(8);
    expect(new Set(seen).size).toBe(8);
  });

  it("filters by status and success, and carries transcripts", async () => {
    const failed = await getJson<EpisodePage>("/v1/episodes?run_id=views&status=failed");
    expect(failed.episodes.map((e) => e.failure_reason)).toEqual([
      END.inference_rejected,
      END.inference_rejected,
    ]);
    const wins = await getJson<EpisodePage>("/v1/episodes?run_id=views&success=true&include=sft");
    expect(wins.episodes.length).toBeGreaterThan(0);
    expect(
      wins.episodes.every(
        (e) => e.success === true && "sft" in e && e.sft?.masking === "role_aware",
      ),
    ).toBe(true);
    expect(wins.episodes[0]).not.toHaveProperty("messages");
  });

  it("refuses a forged cursor", async () => {
    const response = await api("/v1/episodes?cursor=bm9wZQ");
    expect(response.status).toBe(400);
  });
});
