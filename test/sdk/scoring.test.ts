import { describe, expect, it } from "vitest";
import {
  type EnvironmentEpisode,
  type RewardResultInput,
  runEpisode,
  scoreGroup,
  type TaskExample,
} from "../../src/sdk";
import { counting, example, ScriptedEnv } from "./fixtures";

async function episodes(n: number): Promise<EnvironmentEpisode[]> {
  const env = new ScriptedEnv();
  env.turns = 1;
  return Promise.all(
    Array.from({ length: n }, (_, i) => runEpisode(env, example, { policy: () => "x".repeat(i) })),
  );
}

describe("scoring a group", () => {
  it("scoreEpisodes by default scores each episode, at most maxScoreConcurrency at once", async () => {
    let running = 0;
    let peak = 0;
    class Slow extends ScriptedEnv {
      override maxScoreConcurrency = 3;
      override async scoreEpisode(
        _e: TaskExample,
        episode: EnvironmentEpisode,
      ): Promise<RewardResultInput> {
        running++;
        peak = Math.max(peak, running);
        await new Promise((resolve) => setTimeout(resolve, 5));
        running--;
        return { score: episode.responseText.length };
      }
    }
    const rewards = await new Slow().scoreEpisodes(example, await episodes(10));
    expect(rewards.map((r) => r.score)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(peak).toBe(3);
  });

  it("fails only the episode whose reward is invalid", async () => {
    class Picky extends ScriptedEnv {
      override scoreEpisode(_e: TaskExample, episode: EnvironmentEpisode): RewardResultInput {
        if (episode.responseText === "x") throw new Error("cannot grade this one");
        return { score: episode.responseText === "xx" ? Number.NaN : 1 };
      }
    }
    const outcomes = await scoreGroup(new Picky(), example, await episodes(4));
    expect(outcomes.map((o) => o.ok)).toEqual([true, false, false, true]);
    expect(outcomes[1]).toEqual({
      ok: false,
      error: "scoreEpisode threw: Error: cannot grade this one",
      by: "scorer",
    });
    expect(outcomes[2]).toMatchObject({
      ok: false,
      error: expect.stringMatching(/^scoreEpisode: score: .*NaN/),
    });
  });

  it("grades one by one when the batch answers with the wrong number of rewards", async () => {
    class Miscount extends ScriptedEnv {
      override async scoreEpisodes() {
        return [{ score: 1 }];
      }
    }
    const outcomes = await scoreGroup(new Miscount(), example, await episodes(3));
    expect(outcomes.map((o) => (o.ok ? o.reward.score : o.error))).toEqual([0, 1, 2]);
  });

  it("runs the same loop result through scoring unchanged", async () => {
    const env = new ScriptedEnv();
    const episode = await runEpisode(env, example, { policy: counting });
    const [outcome] = await scoreGroup(env, example, [episode]);
    expect(outcome).toEqual({ ok: true, reward: { score: 2, threshold: 1, metadata: {} } });
  });
});
