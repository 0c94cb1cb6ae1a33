"""The TRL adapter: the tokenizer, the sample-to-TRL mapping, and real GRPOTrainer steps whose
rollouts a real policy server samples.

    /tmp/venv-trl/bin/python -m unittest discover -s examples/train -p "test_trl_adapter.py" -v

Needs TRL (examples/train/requirements-trl.txt); without it every test is skipped, saying so,
except under CI=true (.ci/run sets it for this step), where a missing TRL is a failure: a green
step must have run them. The trainer
test stands a small fake in for edgeroll's API (start_group, wait_for_group, leased): it rolls
each group out against the real policy server, two turns an episode with an environment reply
between them, and records the episode as edgeroll's sample, base64-encoded as a lease sends it.
Everything else is real: TRL's trainer, the weight push, the policy server's sampling.
"""

from __future__ import annotations

import array
import base64
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request
from contextlib import contextmanager
from pathlib import Path

try:
    from trl import GRPOConfig, GRPOTrainer
    NO_TRL = None
except ImportError as error:
    NO_TRL = (f"TRL is not importable ({error}); install it in a venv of its own: python3 -m venv "
              "/tmp/venv-trl && /tmp/venv-trl/bin/pip install -r examples/train/requirements.txt "
              "-r examples/train/requirements-trl.txt ./python")
# Every test here is skipped without TRL (a class decorator, so that loading the module by name
# works too, where a SkipTest raised at import would be an error)...
needs_trl = unittest.skipIf(NO_TRL is not None, NO_TRL or "")
# ...except in CI, where skipping them all would let the TRL step pass having tested nothing.
IN_CI = os.environ.get("CI", "").strip().lower() in ("true", "1")


class TrlIsInstalled(unittest.TestCase):
    def test_trl_is_importable_where_ci_runs_these_tests(self) -> None:
        if NO_TRL is None:
            return
        if IN_CI:
            self.fail(f"CI=true and {NO_TRL}")
        self.skipTest(NO_TRL)

import torch
from transformers import PrinterCallback

import tiny_policy as tp
import trl_adapter as ta
from edgeroll_client import Batch
from tiny_tokenizer import build_tokenizer

HERE = Path(__file__).resolve().parent
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is experimental; we know


def base64_of(code: str, values: list) -> str:
    """A sample array as a base64 lease sends it: little-endian bytes."""
    data = array.array(code, values)
    if sys.byteorder != "little":
        data.byteswap()
    return base64.b64encode(data.tobytes()).decode()


def edgeroll_sample(ids: list[int], mask: list[int], logprobs: list[float], turns=(0, 0)) -> dict:
    """A sample in the batch format with token_encoding base64 (int32, uint8, float32, float32)."""
    return {"turns": list(turns), "token_ids": base64_of("i", ids), "mask": base64_of("B", mask),
            "logprobs": base64_of("f", logprobs), "advantages": base64_of("f", [0.0] * len(ids))}


def episode_of(samples: list[dict], index: int = 0, reward: float | None = 0.5, status: str = "completed",
               token_mode: str = "exact") -> dict:
    return {"episode_id": f"g-e{index}", "index": index, "status": status, "token_mode": token_mode,
            "token_mode_reason": None, "reward": reward, "success": reward == 1.0,
            "prefix_breaks": max(len(samples) - 1, 0), "samples": samples}


@needs_trl
class Tokenizer(unittest.TestCase):
    def setUp(self) -> None:
        self.tokenizer = build_tokenizer()

    def test_encode_and_decode_are_tiny_policys(self) -> None:
        text = tp.render([{"role": "user", "content": "A drill.\nWhat is 12 + 3?\t~é"}]) + "<answer>15</answer><|im_end|>\n"
        ids = self.tokenizer(text).input_ids
        self.assertEqual(ids, tp.encode(text))  # é is not in the vocabulary: `?` in both
        self.assertEqual(self.tokenizer.decode(ids), tp.decode(ids))
        padded = [tp.PAD_ID] * 3 + ids + [tp.PAD_ID]
        self.assertEqual(self.tokenizer.decode(padded), tp.decode(padded))  # both drop the padding

    def test_every_id_decodes_alone(self) -> None:
        for i in range(len(tp.VOCAB)):
            self.assertEqual(self.tokenizer.decode([i]), tp.decode([i]), f"id {i}")

    def test_skip_special_tokens_keeps_question_marks(self) -> None:
        ids = tp.encode("<|im_start|>assistant\nWhy? 4?<|im_end|>")
        self.assertEqual(self.tokenizer.decode(ids, skip_special_tokens=True), "assistant\nWhy? 4?")

    def test_special_ids_and_template(self) -> None:
        t = self.tokenizer
        self.assertEqual((t.pad_token_id, t.bos_token_id, t.eos_token_id), (tp.PAD_ID, tp.IM_START_ID, tp.IM_END_ID))
        self.assertEqual(len(t), len(tp.VOCAB))
        self.assertEqual(t.padding_side, "left")
        messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "What is 1 + 1?"}]
        self.assertEqual(t.apply_chat_template(messages, tokenize=False, add_generation_prompt=True),
                         tp.render(messages))


@needs_trl
class Mapping(unittest.TestCase):
    # prompt (mask 0) | first reply (sampled) | the environment's reply (mask 0) | second reply
    PROMPT, FIRST, ENV, SECOND = [1, 10, 11, 12, 13], [20, 21, tp.IM_END_ID], [3, 1, 30, 31], [40, tp.IM_END_ID]
    LOGPROBS = [-0.5, -0.25, -0.125, -1.0, -2.0]  # exact in float32

    def sample(self) -> dict:
        ids = self.PROMPT + self.FIRST + self.ENV + self.SECOND
        mask = [0] * 5 + [1] * 3 + [0] * 4 + [1] * 2
        logprobs = [0.0] * 5 + self.LOGPROBS[:3] + [0.0] * 4 + self.LOGPROBS[3:]
        return edgeroll_sample(ids, mask, logprobs, turns=(0, 1))

    def test_prompt_completion_env_mask_and_logprobs(self) -> None:
        c = ta.episode_completion(episode_of([self.sample()], reward=0.5), "g", tp.IM_END_ID)
        self.assertEqual(c.prompt_ids, self.PROMPT)
        self.assertEqual(c.completion_ids, self.FIRST + self.ENV + self.SECOND)
        self.assertEqual(c.env_mask, [1, 1, 1, 0, 0, 0, 0, 1, 1])  # the environment's tokens: 0
        self.assertEqual(c.logprobs, [-0.5, -0.25, -0.125, 0, 0, 0, 0, -1.0, -2.0])
        self.assertEqual(len(c.completion_ids), len(c.env_mask))
        self.assertEqual(len(c.completion_ids), len(c.logprobs))
        self.assertEqual(c.reward, 0.5)

    def test_json_samples_map_the_same(self) -> None:
        ids = self.PROMPT + self.FIRST
        json_sample = {"turns": [0, 0], "token_ids": ids, "mask": [0] * 5 + [1] * 3,
                       "logprobs": [0.0] * 5 + self.LOGPROBS[:3], "advantages": [0.0] * 8}
        c = ta.episode_completion(episode_of([json_sample]), "g", tp.IM_END_ID)
        self.assertEqual((c.prompt_ids, c.completion_ids, c.env_mask), (self.PROMPT, self.FIRST, [1, 1, 1]))

    def test_prefix_break_keeps_the_first_sample_or_raises(self) -> None:
        second = edgeroll_sample([1, 50, 51], [0, 1, 1], [0.0, -0.5, -0.5], turns=(2, 2))
        episode = episode_of([self.sample(), second])
        c = ta.episode_completion(episode, "g", tp.IM_END_ID)
        self.assertEqual((c.completion_ids, c.samples), (self.FIRST + self.ENV + self.SECOND, 2))
        with self.assertRaises(ta.PrefixBreak):
            ta.episode_completion(episode, "g", tp.IM_END_ID, prefix_breaks="raise")

    def test_failed_episode_is_an_untrained_placeholder(self) -> None:
        c = ta.episode_completion(episode_of([], reward=None, status="failed"), "g", tp.IM_END_ID)
        self.assertEqual((c.completion_ids, c.env_mask, c.reward), ([tp.IM_END_ID], [0], None))

    def test_inexact_episode_raises(self) -> None:
        with self.assertRaises(ta.NotTokenExact):
            ta.episode_completion(episode_of([], token_mode="none"), "g", tp.IM_END_ID)

    def test_group_order_and_fields(self) -> None:
        group = {"group_id": "g", "episodes": [episode_of([self.sample()], index=i, reward=r)
                                               for i, r in ((2, 0.2), (0, 0.0), (1, 0.1))]}
        fields = ta.rollout_fields(ta.group_completions(group, 3, tp.IM_END_ID))
        self.assertEqual(fields["edgeroll_reward"], [0.0, 0.1, 0.2])  # by episode index
        self.assertEqual(set(fields) >= {"prompt_ids", "completion_ids", "logprobs", "env_mask"}, True)
        self.assertEqual(ta.edgeroll_reward(completions=["x"] * 3, edgeroll_reward=[0.0, None, 1]), [0.0, None, 1.0])
        with self.assertRaises(ta.GroupMismatch):
            ta.group_completions(group, 4, tp.IM_END_ID)

    def test_prompt_blocks_follow_the_repeat_sampler(self) -> None:
        self.assertEqual(ta.prompt_blocks(["a"] * 4 + ["b"] * 4 + ["a"] * 4, 4), ["a", "b", "a"])
        with self.assertRaises(ValueError):
            ta.prompt_blocks(["a"] * 3 + ["b"], 2)
        with self.assertRaises(ValueError):
            ta.prompt_blocks(["a"] * 6, 4)


# --- a real GRPOTrainer against a real policy server -------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def chat(url: str, messages: list[dict], seed: int, budget: int, temperature: float, top_p: float) -> dict:
    body = {"model": "policy", "messages": messages, "max_tokens": budget, "temperature": temperature,
            "top_p": top_p, "seed": seed, "logprobs": True, "return_token_ids": True}
    request = urllib.request.Request(f"{url}/v1/chat/completions", json.dumps(body).encode(),
                                     {"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        reply = json.loads(response.read())
    choice = reply["choices"][0]
    return {"prompt": reply["prompt_token_ids"], "tokens": choice["token_ids"],
            "logprobs": [e["logprob"] for e in choice["logprobs"]["content"]],
            "text": choice["message"]["content"]}


def question(example: dict, turn: int) -> str:
    a, b = example["metadata"]["questions"][turn]
    return f"What is {a} + {b}?"


def digit_share(tokens: list[int]) -> float:
    """A reward a random policy varies on (so GRPO's advantages are not all 0)."""
    return sum(1 for t in tokens if tp.VOCAB[t].isdigit()) / max(len(tokens), 1)


class FakeEdgeroll:
    """edgeroll's API as the adapter calls it, rolling out against the real policy server. An
    episode is two turns, recorded as edgeroll records them: one sample when the second prompt
    (the host's tokens) extends the first prompt and reply, the tokens between being the
    environment's (mask 0); else a prefix break, one sample a turn."""

    def __init__(self, policy_url: str) -> None:
        self.policy_url = policy_url
        self.groups: dict[str, dict] = {}
        self.started: list[dict] = []
        self.leases: list[dict] = []
        self.acked: set[str] = set()

    def start_group(self, request: dict, idempotency_key: str | None = None) -> dict:
        group_id = f"group-{len(self.groups)}"
        episodes: list = [None] * request["group_size"]

        def play(index: int) -> None:
            episodes[index] = self.episode(request, group_id, index)

        threads = [threading.Thread(target=play, args=(i,)) for i in range(request["group_size"])]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.started.append(request)
        self.groups[group_id] = {"group_id": group_id, "run_id": request["run_id"],
                                 "policy_version": request["policy_version"], "episodes": episodes}
        return {"group_id": group_id}

    def episode(self, request: dict, group_id: str, index: int) -> dict:
        example, s = request["example"], request["sampling"]
        settings = dict(budget=s["max_completion_tokens"], temperature=s["temperature"], top_p=s["top_p"])
        messages = [{"role": "user", "content": f"{example['input']}\n{question(example, 0)}"}]
        first = chat(self.policy_url, messages, seed=s["seed"] * 10 + 2 * index, **settings)
        messages += [{"role": "assistant", "content": first["text"]},
                     {"role": "user", "content": f"Noted.\n{question(example, 1)}"}]
        second = chat(self.policy_url, messages, seed=s["seed"] * 10 + 2 * index + 1, **settings)
        ids = first["prompt"] + first["tokens"]
        if second["prompt"][: len(ids)] == ids:  # one sample: the tokens between are the env's
            between = second["prompt"][len(ids):]
            samples = [edgeroll_sample(
                ids + between + second["tokens"],
                [0] * len(first["prompt"]) + [1] * len(first["tokens"]) + [0] * len(between) + [1] * len(second["tokens"]),
                [0.0] * len(first["prompt"]) + first["logprobs"] + [0.0] * len(between) + second["logprobs"],
                turns=(0, 1))]
        else:  # a prefix break (the reply sampled <|pad|>, which its text drops): two samples
            samples = [edgeroll_sample(ids, [0] * len(first["prompt"]) + [1] * len(first["tokens"]),
                                       [0.0] * len(first["prompt"]) + first["logprobs"], turns=(0, 0)),
                       edgeroll_sample(second["prompt"] + second["tokens"],
                                       [0] * len(second["prompt"]) + [1] * len(second["tokens"]),
                                       [0.0] * len(second["prompt"]) + second["logprobs"], turns=(1, 1))]
        reward = digit_share(first["tokens"] + second["tokens"])
        return {**episode_of(samples, index=index, reward=reward), "episode_id": f"{group_id}-e{index}"}

    def wait_for_group(self, group_id: str, timeout: float = 600.0) -> dict:
        return {"group_id": group_id, "status": "landed"}

    @contextmanager
    def leased(self, **request):
        self.leases.append(request)
        ready = [g for gid, g in self.groups.items() if gid not in self.acked and g["run_id"] == request["run_id"]
                 and g["policy_version"] >= request.get("min_policy_version", 0)][: request["max_groups"]]
        yield Batch(f"batch-{len(self.leases)}", None, ready)
        self.acked |= {g["group_id"] for g in ready}


def examples(n: int) -> list[dict]:
    # Two-digit sums on odd examples: in order, each step's two prompts differ in length.
    return [{"id": f"ex-{i}", "input": "Sums.", "metadata": {"questions": [[i, 2], [3, i]] if i % 2 == 0
                                                              else [[10 + i, 25], [i, 40]]}}
            for i in range(n)]


@needs_trl
class TrainerSteps(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        torch.set_num_threads(1)
        cls.work = tempfile.TemporaryDirectory()
        cls.checkpoint = Path(cls.work.name) / "server"
        # The server starts from other weights than TRL's: only the adapter's push makes them agree.
        tp.save(tp.build_model(seed=3), cls.checkpoint, 0)
        port = free_port()
        cls.server = subprocess.Popen(
            [sys.executable, str(HERE / "policy_server.py"), "--checkpoint", str(cls.checkpoint),
             "--port", str(port)], cwd=HERE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        cls.url = f"http://127.0.0.1:{port}"
        for _ in range(240):
            try:
                urllib.request.urlopen(f"{cls.url}/health", timeout=1)
                return
            except OSError:
                time.sleep(0.25)
        raise RuntimeError("the policy server did not come up")

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.terminate()
        cls.server.wait(timeout=10)
        cls.work.cleanup()

    def trainer(self, rollout: ta.EdgerollRollout, data: list[dict], steps: int) -> GRPOTrainer:
        config = GRPOConfig(
            output_dir=str(Path(self.work.name) / "trl"), use_cpu=True, bf16=False,
            per_device_train_batch_size=8, num_generations=4, max_completion_length=24,
            max_steps=steps, learning_rate=1e-3, report_to=[], logging_steps=1, save_strategy="no",
            gradient_checkpointing=False, disable_tqdm=True, seed=1, dataloader_num_workers=0,
            shuffle_dataset=False)  # in order: each step's two groups have prompts of two lengths
        trainer = GRPOTrainer(model=tp.build_model(seed=1), reward_funcs=ta.edgeroll_reward, args=config,
                              train_dataset=ta.trl_dataset(data), processing_class=build_tokenizer(),
                              rollout_func=rollout)
        trainer.remove_callback(PrinterCallback)  # the logs stay in trainer.state.log_history
        return trainer

    def test_two_grpo_steps_on_policy_server_rollouts(self) -> None:
        fake = FakeEdgeroll(self.url)
        data = examples(4)
        rollout = ta.EdgerollRollout(fake, data, policy_admin=self.url,
                                     weights_dir=Path(self.work.name) / "weights", run_id="trl-test")
        trainer = self.trainer(rollout, data, steps=2)
        before = {k: v.clone() for k, v in trainer.model.state_dict().items()}
        started = time.monotonic()
        trainer.train()
        seconds = time.monotonic() - started

        # One rollout call a step, each after the weights of that step reached the server.
        self.assertEqual([h["policy_version"] for h in rollout.history], [0, 1])
        self.assertEqual([r["policy_version"] for r in fake.started], [0, 0, 1, 1])
        with urllib.request.urlopen(f"{self.url}/v1/models") as response:
            self.assertEqual(json.loads(response.read())["data"][0]["policy_version"], 1)
        for request in fake.started:
            self.assertEqual((request["group_size"], request["tokens"]), (4, "required"))
            self.assertEqual(request["sampling"]["max_completion_tokens"], 24)
        for lease in fake.leases:
            self.assertEqual((lease["include"], lease["token_encoding"]), (["tokens"], "base64"))
        # The host sampled with TRL's weights: float noise only. But TRL's own layout (left-padded
        # prompts, no position_ids) shifts a GPT-2's positions on the shorter prompts.
        for h in rollout.history:
            self.assertLess(h["mismatch"], 1e-4, h)
            self.assertGreater(h["env_tokens"], 0)
            self.assertGreater(h["mismatch_trl_layout"], 1e-2, "TRL now scores left-padded prompts at "
                               "the host's positions? Then fold_prompts is no longer needed")

        # TRL read the rewards and the env_mask: its mean reward is edgeroll's, and its completion
        # length counts only the sampled tokens (env_mask 1).
        logs = [entry for entry in trainer.state.log_history if "rewards/edgeroll_reward/mean" in entry]
        self.assertEqual(len(logs), 2)
        for log, h in zip(logs, rollout.history):
            self.assertAlmostEqual(log["rewards/edgeroll_reward/mean"], h["reward"], places=5)
            self.assertAlmostEqual(log["completions/mean_length"], h["sampled_tokens"] / h["episodes"], places=4)
        changed = any(not torch.equal(before[k], v) for k, v in trainer.model.state_dict().items())
        self.assertTrue(changed, "the optimizer did not move the weights")
        print(f"\n  2 GRPOTrainer steps in {seconds:.1f} s; per call: " + "; ".join(
            f"reward {h['reward']:.3f}, mismatch {h['mismatch']:.1e}, as TRL lays the batch out "
            f"{h['mismatch_trl_layout']:.1e}" for h in rollout.history), file=sys.stderr)

    def test_folded_prompts_give_trl_the_hosts_positions(self) -> None:
        fake = FakeEdgeroll(self.url)
        data = examples(2)  # a short prompt and a long one in the same step
        rollout = ta.EdgerollRollout(fake, data, policy_admin=self.url, run_id="trl-fold",
                                     weights_dir=Path(self.work.name) / "fold", fold_prompts=True)
        trainer = self.trainer(rollout, data, steps=1)
        trainer.train()
        (h,) = rollout.history
        self.assertLess(h["mismatch"], 1e-4, h)
        self.assertLess(h["mismatch_trl_layout"], 1e-4, h)
        log = next(e for e in trainer.state.log_history if "completions/mean_length" in e)
        self.assertAlmostEqual(log["completions/mean_length"], h["sampled_tokens"] / h["episodes"], places=4)

    def test_stale_host_weights_are_refused(self) -> None:
        fake = FakeEdgeroll(self.url)
        data = examples(2)

        def push_nothing_new(model, directory: Path, version: int) -> Path:
            return tp.save(tp.build_model(seed=3), directory, version)  # the host keeps other weights

        rollout = ta.EdgerollRollout(fake, data, policy_admin=self.url, run_id="trl-stale",
                                     weights_dir=Path(self.work.name) / "stale", save_weights=push_nothing_new)
        trainer = self.trainer(rollout, data, steps=1)
        with self.assertRaises(ta.OffPolicy):
            trainer.train()
        self.assertEqual(fake.acked, set(), "a refused batch must be released, not acked")


if __name__ == "__main__":
    torch.set_num_threads(1)
    unittest.main()
