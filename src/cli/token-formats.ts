/**
 * Token samples in the shapes other trainers read, from the batch format's JSON samples:
 *
 * - `samples`: edgeroll's own, one line per sample, with the episode it came from.
 * - `trl`: what a TRL GRPOTrainer `rollout_func` returns per completion: `prompt_ids` (the
 *   tokens before the first sampled one), `completion_ids` (the rest), `logprobs` (one per
 *   completion token, 0.0 where the environment's tokens sit) and `env_mask` (1 on tokens the
 *   model sampled, 0 on the environment's), plus the episode's reward and advantage, and in a
 *   distilled group `teacher_logprobs` aligned with `completion_ids`, and `policy_versions`
 *   aligned with them too (the version that sampled each token, -1 on the environment's).
 * - `atropos`: one Atropos `ScoredDataGroup` per rollout group: `tokens`, `masks` (the token id
 *   where it is trained, -100 elsewhere), `scores` (the episode's reward, once per sequence),
 *   `inference_logprobs` (1.0 where masked, Atropos's placeholder) and per-token `advantages`;
 *   for a distilled group also `distill_token_ids` and `distill_logprobs` ([sequence][position]
 *   [k], k = 1: the sampled token and the teacher's logprob of it; empty where not trained).
 *   Each sequence's `overrides` carry its episode, turns and per-token `policy_versions`.
 */

export interface JsonSample {
  turns: [number, number];
  token_ids: number[];
  mask: number[];
  logprobs: number[];
  advantages: number[];
  /** On-policy distillation: the teacher's logprob of each sampled token, 0 elsewhere. */
  teacher_logprobs?: number[];
  /** The version that sampled each token, -1 where none did. */
  policy_versions: number[];
}

export interface SampledEpisode {
  episode_id: string;
  group_id: string;
  run_id: string;
  env: string;
  example_id: string;
  policy_version: number;
  /** The versions its sampled turns were sent at (async RL); null if it sampled nothing. */
  policy_version_min: number | null;
  policy_version_max: number | null;
  reward: number | null;
  advantage: number | null;
  samples: JsonSample[];
}

export const TOKEN_FORMATS = ["samples", "trl", "atropos"] as const;
export type TokenFormat = (typeof TOKEN_FORMATS)[number];

function identity(e: SampledEpisode) {
  return {
    episode_id: e.episode_id,
    group_id: e.group_id,
    run_id: e.run_id,
    env: e.env,
    example_id: e.example_id,
    policy_version: e.policy_version,
    policy_version_min: e.policy_version_min,
    policy_version_max: e.policy_version_max,
    reward: e.reward,
    advantage: e.advantage,
  };
}

export function samplesRows(e: SampledEpisode): object[] {
  return e.samples.map((s) => ({ ...identity(e), ...s }));
}

export function trlRows(e: SampledEpisode): object[] {
  return e.samples.map((s) => {
    // The first sampled token: where the mask turns 1, or in a masked over-long episode (whose
    // mask is all 0) where a policy version first sampled one.
    const first = Math.max(
      0,
      s.mask.includes(1) ? s.mask.indexOf(1) : s.policy_versions.findIndex((v) => v !== -1),
    );
    return {
      prompt_ids: s.token_ids.slice(0, first),
      completion_ids: s.token_ids.slice(first),
      logprobs: s.logprobs.slice(first),
      env_mask: s.mask.slice(first),
      ...(s.teacher_logprobs ? { teacher_logprobs: s.teacher_logprobs.slice(first) } : {}),
      policy_versions: s.policy_versions.slice(first),
      ...identity(e),
      turns: s.turns,
    };
  });
}

/** Atropos's distillation arrays, top-1: the token sampled at each trained position. */
function distillArrays(samples: readonly JsonSample[]) {
  if (!samples.every((s) => s.teacher_logprobs !== undefined)) return {};
  const at = (s: JsonSample, i: number) => s.mask[i] === 1;
  return {
    distill_token_ids: samples.map((s) => s.token_ids.map((id, i) => (at(s, i) ? [id] : []))),
    distill_logprobs: samples.map((s) =>
      s.token_ids.map((_, i) => (at(s, i) ? [s.teacher_logprobs?.[i] ?? 0] : [])),
    ),
  };
}

/** One ScoredDataGroup of a rollout group's scored episodes (failed ones have no score). */
export function atroposGroup(episodes: readonly SampledEpisode[]): object | null {
  const scored = episodes.filter((e) => e.reward !== null && e.samples.length > 0);
  if (scored.length === 0) return null;
  const sequences = scored.flatMap((e) => e.samples.map((s) => ({ e, s })));
  return {
    tokens: sequences.map(({ s }) => s.token_ids),
    masks: sequences.map(({ s }) => s.token_ids.map((id, i) => (s.mask[i] === 1 ? id : -100))),
    scores: sequences.map(({ e }) => e.reward),
    inference_logprobs: sequences.map(({ s }) =>
      s.logprobs.map((lp, i) => (s.mask[i] === 1 ? lp : 1.0)),
    ),
    advantages: sequences.map(({ s }) => s.advantages),
    ...distillArrays(sequences.map(({ s }) => s)),
    ref_logprobs: null,
    messages: null,
    generation_params: null,
    overrides: sequences.map(({ e, s }) => ({
      episode_id: e.episode_id,
      turns: s.turns,
      policy_versions: s.policy_versions,
    })),
    group_overrides: { group_id: scored[0]?.group_id, group_size: sequences.length },
    images: null,
  };
}
