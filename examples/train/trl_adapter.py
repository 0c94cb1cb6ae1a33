"""TRL's GRPOTrainer on edgeroll's rollouts: a `rollout_func` that fetches token-exact episodes
from edgeroll instead of generating them (no vLLM, no `model.generate`).

    from trl import GRPOConfig, GRPOTrainer
    from trl_adapter import EdgerollRollout, edgeroll_reward, trl_dataset
    from tiny_tokenizer import build_tokenizer

    rollout = EdgerollRollout(EdgerollClient(url), examples, policy_admin="http://127.0.0.1:8100",
                              weights_dir=Path("/tmp/trl-weights"), run_id="trl-1")
    trainer = GRPOTrainer(model=tiny_policy.build_model(1), reward_funcs=edgeroll_reward,
                          args=GRPOConfig(num_generations=4, ...), train_dataset=trl_dataset(examples),
                          processing_class=build_tokenizer(), rollout_func=rollout)
    trainer.train()

(`examples/train/trl_run.py` is this, runnable against a running edgeroll and policy server.)

How one call of the rollout function works (TRL 1.13.0, `GRPOTrainer._generate`):

1. TRL hands it the prompts of one generation batch. Its `RepeatSampler` lays them out as each
   dataset prompt `num_generations` times in a row, so the prompts are read in consecutive
   blocks of `num_generations`, one edgeroll rollout group each (`group_size=num_generations`).
   A prompt is an edgeroll example's key (`example_prompt`): TRL passes only the `prompt`
   column to a rollout function, so the adapter finds the example it names in its own table.
2. If the trainer's `global_step` changed since the last push (and on the first call), it saves
   TRL's current weights (`tiny_policy.save` of the unwrapped `trainer.model`) and POSTs
   `/update_weights {path, policy_version}` to the policy server, with
   `policy_version = global_step`: edgeroll's host then samples with exactly the weights TRL
   is about to score.
3. It starts the groups (`tokens: "required"`, that `policy_version`, TRL's `temperature` and
   `top_p`, `max_completion_length` as the per-turn budget), waits for them to land, leases
   them (`include=["tokens"]`, base64), and acks them once they are converted and checked
   (below); if either raises, the batch is released instead.
4. Each episode becomes one TRL completion from its sample: `prompt_ids` = the ids before the
   first sampled token (mask 1), `completion_ids` = the rest (the environment's replies of a
   multi-turn episode included), `env_mask` = the mask of the rest (TRL's tool_mask: 1 = the
   model's tokens, trained; 0 = the environment's, not trained), `logprobs` = the host's
   logprobs of the rest (0 on the environment's tokens). They come back in the prompts' order,
   each group's episodes by `index`.
5. The episode's edgeroll `reward` travels as the extra field `edgeroll_reward` (with
   `edgeroll_success`, `edgeroll_episode_id`, `edgeroll_group_id`); TRL passes extra fields to
   the reward functions as keyword arguments, and `edgeroll_reward()` returns it. TRL then
   computes its own group-relative advantages from it (`scale_rewards`).

Decisions where edgeroll's episodes do not fit TRL's "one prompt, one completion":

- **Prefix breaks.** An episode with more than one sample (a turn whose prompt, as the host
  tokenized it, does not extend the previous turn's prompt and reply) has no single
  completion. By default (`prefix_breaks="first_sample"`) the adapter trains on its first
  sample only, the turns before the break, and gives it the whole episode's reward; the later
  turns get no gradient. The count lands in `history` (`prefix_broken`). They are not rare
  with an untrained tiny policy: when it samples `<|pad|>`, the reply's text (which drops
  padding) no longer re-renders to the reply's tokens, and about a quarter of a random
  policy's 24-token replies do. `prefix_breaks="raise"` raises `PrefixBreak` instead.
- **Failed episodes** (no samples, reward null): a placeholder completion of one `eos` token
  with env_mask 0 and reward None (TRL turns it into NaN, leaves it out of the group's mean
  and gives it advantage 0): it keeps the `num_generations` layout and trains nothing.
- **Episodes without exact tokens** (`token_mode` not `exact`): `NotTokenExact`; there is
  nothing token-exact to train on.
- **Advantages.** edgeroll's per-token advantages (per-turn credit) are not used: TRL's loss
  takes one advantage per completion, computed from the rewards. Groups are started with
  `credit_assignment: "per_episode"`.

The limitation: TRL does not importance-sample against the rollout's logprobs here.
`_generate_and_score_completions` turns the `logprobs` a rollout function returns into
`sampling_per_token_logps`, but corrects the ratio with them only when `use_vllm and
vllm_importance_sampling_correction`. Otherwise `old_per_token_logps` is TRL's own
recomputation (or, with one optimizer step per generation, `per_token_logps.detach()`), so the
clipped ratio is measured against the trainer, not against the host that sampled. (Their one
use without vLLM is `off_policy_mask_threshold`, which drops negative-advantage sequences whose
KL from them is high; it does not correct the ratio.) That is
exact only while the host serves exactly the trainer's weights on exactly these tokens, which
is why step 2 pushes the weights every step and why the adapter measures the gap itself
(`mismatch_bound`, below). With an asynchronous host (stale weights, a faster kernel, another
precision) the samples would be off-policy and TRL would not know. What TRL would need: use the
rollout's `logprobs` as `old_per_token_logps` (or as the denominator of an importance-sampling
correction, as the vLLM branch does with `sampling_per_token_logps`) whenever a rollout function
provides them, independent of `use_vllm`.

The adapter's check: before returning, it scores the batch with TRL's model (the weights just
pushed) and compares with the host's logprobs on the sampled tokens (env_mask 1): `mismatch`,
each sequence on its own (~1e-7 when the weights and tokens are the host's; above
`mismatch_bound`, 1e-3 by default, it raises `OffPolicy` and releases the batch), and
`mismatch_trl_layout`, the batch scored by TRL's own `_get_per_token_logps_and_entropies` as
TRL lays it out. Both land in `rollout.history`, one entry a call. TRL divides the logits by
its `temperature` before the softmax, while the host's logprobs are the model's own (before
temperature, vLLM's default), so the second agrees only at temperature 1 (trl_run.py's).

A second gap, in the layout: TRL left-pads the prompts of a batch and calls the model without
`position_ids`. A model with absolute position embeddings (GPT-2, the tiny policy) then sees a
shorter prompt's tokens at shifted positions, so TRL's logprobs (the ones it takes gradients
of) are not the host's whenever prompt lengths differ in a batch (0.07 to 0.17 mean absolute
on the tiny policy, in the tests; rotary embeddings see only relative positions, so models
that use them are unaffected by the shift). mental-math's
first prompts all have the same length, so it does not arise there. `fold_prompts=True` avoids
it: each prompt is returned as its first token, the rest inside the completion with env_mask 0,
so TRL pads nothing on the left (`fold_prompt`).

Single process only (`accelerator.num_processes == 1`): with several, each process would push
weights and a group of `num_generations` could straddle two processes' prompt slices.
"""

from __future__ import annotations

import json
import time
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterator

import torch
from edgeroll_client import EdgerollClient, decode_sample

import tiny_policy as tp
from train import ENV, MISMATCH_BOUND, OffPolicy, post  # the same bound and push as train.py

PREFIX_BREAK_POLICIES = ("first_sample", "raise")


class PrefixBreak(Exception):
    """An episode has more than one sample: no single TRL completion holds it."""


class NotTokenExact(Exception):
    """An episode came without exact token ids and logprobs."""


class GroupMismatch(Exception):
    """The leased batch is not exactly the groups this call started."""


# --- the dataset ------------------------------------------------------------------------------

def example_prompt(example: dict) -> str:
    """The `prompt` TRL passes for an example. It must name the example, since the rollout
    function gets only prompts; the id makes it unique (mental-math's inputs are all alike)."""
    return f"{example['id']}: {example['input']}"


def examples_by_prompt(examples: list[dict]) -> dict[str, dict]:
    table: dict[str, dict] = {}
    for example in examples:
        prompt = example_prompt(example)
        if prompt in table:
            raise ValueError(f"two examples share the prompt {prompt!r}: ids must be unique")
        table[prompt] = example
    return table


def trl_dataset(examples: list[dict]):
    """A `datasets.Dataset` with the one column GRPOTrainer needs, `prompt`."""
    from datasets import Dataset

    return Dataset.from_dict({"prompt": [example_prompt(e) for e in examples]})


def prompt_blocks(prompts: list[str], group_size: int) -> list[str]:
    """The distinct prompt of each consecutive block of `group_size` (RepeatSampler's layout).
    Blocks, not distinct values: two dataset rows with the same prompt are two groups."""
    if len(prompts) % group_size:
        raise ValueError(f"{len(prompts)} prompts are not whole groups of {group_size} "
                         "(num_generations): is a group split across processes?")
    blocks = [prompts[i: i + group_size] for i in range(0, len(prompts), group_size)]
    for block in blocks:
        if any(p != block[0] for p in block):
            raise ValueError(f"a block of {group_size} prompts mixes prompts ({block[0]!r} ...): "
                             "TRL's RepeatSampler layout was expected")
    return [block[0] for block in blocks]


# --- samples to TRL's fields ------------------------------------------------------------------

@dataclass
class Completion:
    """One TRL completion: the fields a rollout function returns for it."""

    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float]
    env_mask: list[int]
    reward: float | None
    success: bool | None
    episode_id: str
    group_id: str
    samples: int = 1  # more than one: a prefix break, only the first is here


def split_sample(sample: dict) -> tuple[list[int], list[int], list[float], list[int]]:
    """(prompt_ids, completion_ids, logprobs, env_mask) of a decoded edgeroll sample: the prompt
    is everything before the first sampled token, the completion everything from it on."""
    mask = list(sample["mask"])
    if 1 not in mask:
        raise ValueError("a sample without a sampled token (mask all 0)")
    first = mask.index(1)
    ids, logprobs = list(sample["token_ids"]), list(sample["logprobs"])
    return ids[:first], ids[first:], logprobs[first:], mask[first:]


def placeholder(episode: dict, group_id: str, eos_id: int) -> Completion:
    """A failed episode's stand-in: keeps the group's size, carries no reward and no gradient."""
    return Completion([eos_id], [eos_id], [0.0], [0], None, None, episode["episode_id"], group_id, samples=0)


def episode_completion(episode: dict, group_id: str, eos_id: int, prefix_breaks: str = "first_sample") -> Completion:
    if episode["status"] == "failed":
        return placeholder(episode, group_id, eos_id)
    if episode["token_mode"] != "exact":
        raise NotTokenExact(f"episode {episode['episode_id']}: token_mode {episode['token_mode']} "
                            f"({episode.get('token_mode_reason')}); start groups with tokens: required")
    samples = episode["samples"]
    if not samples:
        return placeholder(episode, group_id, eos_id)
    if len(samples) > 1 and prefix_breaks == "raise":
        raise PrefixBreak(f"episode {episode['episode_id']} has {len(samples)} samples "
                          f"({episode.get('prefix_breaks')} prefix breaks): one TRL completion cannot "
                          "hold it (prefix_breaks='first_sample' trains on its first sample)")
    prompt_ids, completion_ids, logprobs, env_mask = split_sample(decode_sample(samples[0]))
    return Completion(prompt_ids, completion_ids, logprobs, env_mask, episode["reward"],
                      episode["success"], episode["episode_id"], group_id, samples=len(samples))


def group_completions(group: dict, group_size: int, eos_id: int, prefix_breaks: str = "first_sample") -> list[Completion]:
    """A leased group's episodes as TRL completions, in episode order."""
    episodes = sorted(group["episodes"], key=lambda e: e["index"])
    if len(episodes) != group_size:
        raise GroupMismatch(f"group {group['group_id']} has {len(episodes)} episodes, not {group_size}")
    return [episode_completion(e, group["group_id"], eos_id, prefix_breaks) for e in episodes]


def fold_prompt(c: Completion) -> Completion:
    """All of the prompt but its first token moved into the completion as environment tokens
    (env_mask 0, logprob 0). Every prompt is then one token long, TRL left-pads none, and a
    model with absolute positions (GPT-2) scores every token at the position the host did."""
    rest = c.prompt_ids[1:]
    return replace(c, prompt_ids=c.prompt_ids[:1], completion_ids=rest + c.completion_ids,
                   logprobs=[0.0] * len(rest) + c.logprobs, env_mask=[0] * len(rest) + c.env_mask)


def rollout_fields(completions: list[Completion]) -> dict[str, list]:
    """What GRPOTrainer reads from a rollout function: the three required lists, `env_mask`,
    and the extra fields it forwards to the reward functions."""
    return {
        "prompt_ids": [c.prompt_ids for c in completions],
        "completion_ids": [c.completion_ids for c in completions],
        "logprobs": [c.logprobs for c in completions],
        "env_mask": [c.env_mask for c in completions],
        "edgeroll_reward": [c.reward for c in completions],
        "edgeroll_success": [c.success for c in completions],
        "edgeroll_episode_id": [c.episode_id for c in completions],
        "edgeroll_group_id": [c.group_id for c in completions],
    }


def edgeroll_reward(completions: list, edgeroll_reward: list, **kwargs) -> list[float | None]:
    """The reward function: edgeroll's own grade of each episode. TRL calls a reward function as
    `f(prompts=, completions=, completion_ids=, **columns_and_extra_fields, trainer_state=,
    log_extra=, log_metric=)`; None (a failed episode) becomes NaN, out of the group baseline."""
    return [None if r is None else float(r) for r in edgeroll_reward]


# --- the host/trainer gap -----------------------------------------------------------------

def _sampled_gap(new: torch.Tensor, old: torch.Tensor, mask: torch.Tensor) -> float:
    d = (new - old)[mask.bool()]
    return float(d.abs().mean()) if d.numel() else float("nan")


@torch.no_grad()
def mismatch_alone(model, completions: list[Completion]) -> float:
    """Each sequence scored on its own (right-padded, positions from its first token, as the
    host scores it): does the trainer hold the host's weights for the host's tokens?"""
    scored = tp.token_logprobs(model, [c.prompt_ids + c.completion_ids for c in completions])
    new = [scored[row, len(c.prompt_ids): len(c.prompt_ids) + len(c.completion_ids)]
           for row, c in enumerate(completions)]
    old = [torch.tensor(c.logprobs) for c in completions]
    mask = [torch.tensor(c.env_mask) for c in completions]
    return _sampled_gap(torch.cat(new), torch.cat(old), torch.cat(mask))


@torch.no_grad()
def mismatch_trl_layout(trainer, completions: list[Completion]) -> float:
    """The batch scored the way GRPOTrainer scores it (TRL 1.13.0 `_get_per_token_logps_and_
    entropies`: prompts left-padded, completions right-padded, no position_ids, logits / T)."""
    from trl.trainer.utils import pad

    pad_id = trainer.processing_class.pad_token_id
    prompts = pad([torch.tensor(c.prompt_ids) for c in completions], pad_id, "left")
    prompt_mask = pad([torch.ones(len(c.prompt_ids), dtype=torch.long) for c in completions], 0, "left")
    answers = pad([torch.tensor(c.completion_ids) for c in completions], pad_id, "right")
    answer_mask = pad([torch.ones(len(c.completion_ids), dtype=torch.long) for c in completions], 0, "right")
    new, _, _ = trainer._get_per_token_logps_and_entropies(
        trainer.model, torch.cat([prompts, answers], 1), torch.cat([prompt_mask, answer_mask], 1),
        answers.size(1))
    old = pad([torch.tensor(c.logprobs) for c in completions], 0.0, "right")
    mask = pad([torch.tensor(c.env_mask) for c in completions], 0, "right") * answer_mask
    return _sampled_gap(new, old, mask)


# --- the rollout function ---------------------------------------------------------------------

class EdgerollRollout:
    """GRPOTrainer's `rollout_func`: `rollout(prompts, trainer) -> dict` (see the module doc).

    `examples`: the edgeroll examples behind the dataset's prompts (`trl_dataset(examples)`).
    `policy_admin`: the policy server's base URL, for `/update_weights`. `weights_dir`: where
    the weights are saved for it to load (a path it can read). `save_weights(model, dir,
    version) -> path` defaults to tiny_policy.save. `mismatch_bound=None` skips the check.
    `fold_prompts=True` returns each prompt as its first token, the rest inside the completion
    with env_mask 0 (`fold_prompt`): for absolute-position models when prompt lengths differ.
    """

    def __init__(self, client: EdgerollClient, examples: list[dict], *, policy_admin: str,
                 weights_dir: Path, run_id: str, env: str = ENV, seed: int = 1,
                 prefix_breaks: str = "first_sample", fold_prompts: bool = False,
                 mismatch_bound: float | None = MISMATCH_BOUND,
                 save_weights: Callable[[Any, Path, int], Path] = tp.save,
                 group_timeout: float = 600.0) -> None:
        if prefix_breaks not in PREFIX_BREAK_POLICIES:
            raise ValueError(f"prefix_breaks must be one of {PREFIX_BREAK_POLICIES}")
        self.client = client
        self.examples = examples_by_prompt(examples)
        self.policy_admin = policy_admin.rstrip("/")
        self.weights_dir = Path(weights_dir)
        self.run_id = run_id
        self.env = env
        self.seed = seed
        self.prefix_breaks = prefix_breaks
        self.fold_prompts = fold_prompts
        self.mismatch_bound = mismatch_bound
        self.save_weights = save_weights
        self.group_timeout = group_timeout
        self.pushed_version: int | None = None
        self.calls = 0
        self.history: list[dict] = []

    def __call__(self, prompts: list[str], trainer) -> dict[str, list]:
        if trainer.accelerator.num_processes != 1:
            raise NotImplementedError("EdgerollRollout runs in a single process (see its module doc)")
        started = time.monotonic()
        group_size = trainer.num_generations if trainer.model.training else trainer.num_generations_eval
        version = trainer.state.global_step
        self.push_weights(trainer, version)
        group_ids = self.start_groups(prompt_blocks(prompts, group_size), group_size, version, trainer)
        self.wait_landed(group_ids)
        # Acked when the block ends, released if converting or checking raises.
        with self.leased_groups(group_ids, version) as groups:
            completions = [c for g in groups
                           for c in group_completions(g, group_size, self.eos_id(trainer), self.prefix_breaks)]
            if self.fold_prompts:
                completions = [fold_prompt(c) for c in completions]
            self.record(trainer, completions, version, time.monotonic() - started)
        self.calls += 1
        return rollout_fields(completions)

    @staticmethod
    def eos_id(trainer) -> int:
        return trainer.processing_class.eos_token_id

    def push_weights(self, trainer, version: int) -> None:
        """TRL's current weights to the host, once per optimizer step (and before the first)."""
        if version == self.pushed_version:
            return
        model = trainer.accelerator.unwrap_model(trainer.model)
        path = self.save_weights(model, self.weights_dir, version)
        post(f"{self.policy_admin}/update_weights", {"path": str(path), "policy_version": version})
        self.pushed_version = version

    def group_request(self, example: dict, group_size: int, version: int, index: int, trainer) -> dict:
        return {
            "env": self.env, "example": example, "group_size": group_size, "run_id": self.run_id,
            "policy_version": version, "tokens": "required",
            # TRL computes one advantage per completion from the rewards; per-turn credit is unused.
            "credit_assignment": "per_episode", "advantage": "mean_std",
            "sampling": {"model": "policy", "temperature": trainer.temperature, "top_p": trainer.top_p,
                         # Per turn: a multi-turn completion holds several of these, and the
                         # environment's replies between them.
                         "max_completion_tokens": trainer.max_completion_length,
                         "seed": (self.seed * 1_000_003 + self.calls * 1_000 + index) % 2**31},
            "max_context_tokens": tp.CONTEXT,
        }

    def start_groups(self, prompts: list[str], group_size: int, version: int, trainer) -> list[str]:
        group_ids = []
        for index, prompt in enumerate(prompts):
            if prompt not in self.examples:
                raise KeyError(f"prompt {prompt!r} is not one of the adapter's examples "
                               "(build the dataset with trl_dataset(examples))")
            request = self.group_request(self.examples[prompt], group_size, version, index, trainer)
            started = self.client.start_group(request, idempotency_key=f"{self.run_id}:{self.calls}:{index}")
            group_ids.append(started["group_id"])
        return group_ids

    def wait_landed(self, group_ids: list[str]) -> None:
        for group_id in group_ids:
            group = self.client.wait_for_group(group_id, timeout=self.group_timeout)
            if group["status"] != "landed":
                raise RuntimeError(f"group {group_id} ended {group['status']}: {json.dumps(group)[:400]}")

    @contextmanager
    def leased_groups(self, group_ids: list[str], version: int) -> Iterator[list[dict]]:
        """Exactly this call's groups, in the order they were started."""
        with self.client.leased(max_groups=len(group_ids), run_id=self.run_id, include=["tokens"],
                                token_encoding="base64", min_policy_version=version,
                                skip_uniform_groups=False) as batch:
            by_id = {g["group_id"]: g for g in batch.groups}
            if set(by_id) != set(group_ids):
                raise GroupMismatch(f"leased groups {sorted(by_id)}, started {sorted(group_ids)}: is another "
                                    f"trainer leasing run {self.run_id!r}, or was the run id used before "
                                    "(idempotency keys are run id, call and group)?")
            yield [by_id[group_id] for group_id in group_ids]

    def record(self, trainer, completions: list[Completion], version: int, seconds: float) -> None:
        """The call's figures in `history`; raises OffPolicy past the bound."""
        model = trainer.accelerator.unwrap_model(trainer.model)
        training = model.training
        model.eval()  # no dropout while scoring; the tiny policy has none anyway
        try:
            scored = [c for c in completions if any(c.env_mask)]  # placeholders have nothing to score
            alone = mismatch_alone(model, scored) if scored else float("nan")
            layout = mismatch_trl_layout(trainer, scored) if scored else float("nan")
        finally:
            model.train(training)
        rewards = [c.reward for c in completions if c.reward is not None]
        entry = {
            "call": self.calls, "global_step": version, "policy_version": version,
            "groups": len({c.group_id for c in completions}), "episodes": len(completions),
            "reward": sum(rewards) / len(rewards) if rewards else float("nan"),
            "success": sum(1 for c in completions if c.success) / len(completions),
            "sampled_tokens": sum(sum(c.env_mask) for c in completions),
            # Completion tokens with env_mask 0 (with fold_prompts, the folded prompts too).
            "env_tokens": sum(len(c.env_mask) - sum(c.env_mask) for c in completions),
            "prefix_broken": sum(1 for c in completions if c.samples > 1),
            "failed": sum(1 for c in completions if c.samples == 0),
            "mismatch": alone, "mismatch_trl_layout": layout, "seconds": seconds,
        }
        self.history.append(entry)
        if self.mismatch_bound is not None and scored and not alone < self.mismatch_bound:
            raise OffPolicy(f"call {self.calls}: host vs trainer logprobs differ by {alone:.3g} on average "
                            f"(bound {self.mismatch_bound:g}): the host did not sample with TRL's weights")
