// Token samples in TRL's and Atropos's shapes, as their source reads them.
import { describe, expect, it } from "vitest";
import { atroposGroup, type SampledEpisode, trlRows } from "../../src/cli/token-formats";

const episode = (id: string, reward: number | null): SampledEpisode => ({
  episode_id: id,
  group_id: "g_1",
  run_id: "r",
  env: "guess-number",
  example_id: "x",
  policy_version: 2,
  policy_version_min: 2,
  policy_version_max: 3,
  reward,
  advantage: reward === null ? null : reward - 0.5,
  samples: [
    {
      turns: [0, 1],
      token_ids: [1, 2, 10, 11, 20, 30],
      mask: [0, 0, 1, 1, 0, 1],
      logprobs: [0, 0, -0.5, -0.25, 0, -1],
      advantages: [0, 0, 0.5, 0.5, 0, 0.5],
      // Turn 0 cut after one token by a sync from version 2 to 3.
      policy_versions: [-1, -1, 2, 3, -1, 3],
    },
  ],
});

/** The same episode, distilled: the teacher's logprob of each sampled token. */
const distilled = (id: string): SampledEpisode => {
  const e = episode(id, 1);
  return {
    ...e,
    samples: e.samples.map((s) => ({ ...s, teacher_logprobs: [0, 0, -0.1, -3, 0, -0.2] })),
  };
};

describe("TRL rollout_func rows", () => {
  it("split at the first sampled token: prompt_ids, then completion_ids with env_mask", () => {
    expect(trlRows(episode("e0", 1))[0]).toMatchObject({
      prompt_ids: [1, 2],
      completion_ids: [10, 11, 20, 30],
      logprobs: [-0.5, -0.25, 0, -1],
      env_mask: [1, 1, 0, 1],
      policy_versions: [2, 3, -1, 3],
      // Which policies sampled it travels with each row.
      policy_version_min: 2,
      policy_version_max: 3,
      reward: 1,
      episode_id: "e0",
    });
    expect(trlRows(episode("e0", 1))[0]).not.toHaveProperty("teacher_logprobs");
    expect(trlRows(distilled("e0"))[0]).toMatchObject({ teacher_logprobs: [-0.1, -3, 0, -0.2] });
  });

  it("split a masked over-long episode's samples (mask all 0) where its first token was sampled", () => {
    const e = episode("e0", 1);
    const masked = { ...e, samples: e.samples.map((s) => ({ ...s, mask: s.mask.map(() => 0) })) };
    expect(trlRows(masked)[0]).toMatchObject({
      prompt_ids: [1, 2],
      completion_ids: [10, 11, 20, 30],
      env_mask: [0, 0, 0, 0],
    });
  });
});

describe("Atropos ScoredDataGroups", () => {
  it("hold one sequence per sample: masks carry the id where trained and -100 elsewhere", () => {
    const group = atroposGroup([episode("e0", 1), episode("e1", 0), episode("e2", null)]) as Record<
      string,
      unknown[]
    >;
    expect(group.tokens).toEqual([
      [1, 2, 10, 11, 20, 30],
      [1, 2, 10, 11, 20, 30],
    ]);
    expect(group.masks?.[0]).toEqual([-100, -100, 10, 11, -100, 30]);
    expect(group.scores).toEqual([1, 0]); // the failed episode has no score and is left out
    expect(group.inference_logprobs?.[0]).toEqual([1, 1, -0.5, -0.25, 1, -1]);
    expect(group.advantages?.[0]).toEqual([0, 0, 0.5, 0.5, 0, 0.5]);
    // Each sequence's own fields travel in its overrides, per-token versions among them.
    expect(group.overrides?.[0]).toEqual({
      episode_id: "e0",
      turns: [0, 1],
      policy_versions: [-1, -1, 2, 3, -1, 3],
    });
  });

  it("carry a distilled group's teacher logprobs as top-1 distill arrays, empty where not trained", () => {
    const group = atroposGroup([distilled("e0")]) as Record<string, unknown[]>;
    expect(group.distill_token_ids?.[0]).toEqual([[], [], [10], [11], [], [30]]);
    expect(group.distill_logprobs?.[0]).toEqual([[], [], [-0.1], [-3], [], [-0.2]]);
    expect(atroposGroup([episode("e1", 1)])).not.toHaveProperty("distill_logprobs");
  });

  it("are skipped for a group with nothing scored", () => {
    expect(atroposGroup([episode("e0", null)])).toBeNull();
  });
});
