"""TRL's GRPOTrainer training the tiny policy on a running edgeroll, through trl_adapter.

    /tmp/venv-trl/bin/python examples/train/trl_run.py --url EDGEROLL --policy-admin POLICY_URL --steps N

It needs what `npm run train:example` (run.ts) starts: a local edgeroll whose inference URL is
the policy server (`startLocalStack({persistTo, inferenceUrl: POLICY_URL + "/v1"})` from
src/cli/local-stack), and the policy server itself (`python examples/train/policy_server.py
--checkpoint DIR --port P`, on this machine: it loads the weights this script saves). The token
is found as edgeroll_client finds it (EDGEROLL_TOKEN, else a local stack's).

Each step: TRL asks for `--groups` prompts × `--group-size` completions; the adapter pushes TRL's
weights to the policy server, starts the groups on edgeroll, leases them with token-exact
samples and hands them to TRL, which takes one GRPO step. One line a step: edgeroll's mean
reward and success, the host/trainer logprob gap, TRL's loss. `--sft FILE` (edgeroll's
`export --kind sft` rows, as run.ts makes them) warms the policy up first with train.py's
warm-up; without it the policy is untrained and mental-math's reward stays near 0.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

import torch

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is experimental in TRL 1.13

from transformers import PrinterCallback, TrainerCallback  # noqa: E402
from trl import GRPOConfig, GRPOTrainer  # noqa: E402

import tiny_policy as tp  # noqa: E402
import trl_adapter as ta  # noqa: E402
from edgeroll_client import EdgerollClient  # noqa: E402
from tiny_tokenizer import build_tokenizer  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


class StepLines(TrainerCallback):
    """One line a step: the adapter's figures for the step's rollout and TRL's own logs."""

    def __init__(self, rollout: ta.EdgerollRollout, results: list[dict]) -> None:
        self.rollout = rollout
        self.results = results

    def on_log(self, args, state, control, logs=None, **kwargs) -> None:
        if not logs or "loss" not in logs or not self.rollout.history:
            return
        h = self.rollout.history[-1]
        row = {**h, "trl_reward": logs.get("reward"), "loss": logs.get("loss"),
               "grad_norm": logs.get("grad_norm"), "step_time": logs.get("step_time")}
        self.results.append(row)
        print(f"step {state.global_step - 1}: reward {h['reward']:.3f} success {h['success']:.2f} "
              f"(TRL's reward {fmt(logs.get('reward'))}) | mismatch {h['mismatch']:.1e}, as TRL lays "
              f"it out {h['mismatch_trl_layout']:.1e} | {h['sampled_tokens']} sampled + {h['env_tokens']} env "
              f"tokens, {h['prefix_broken']} prefix-broken | loss {fmt(logs.get('loss'))} | rollout "
              f"{h['seconds']:.1f} s", flush=True)


def fmt(value) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{float(value):+.4f}"


def initial_model(args):
    # A checkpoint (e.g. train.py's, after its warm-up), else fresh weights.
    model = tp.load_initial(args.checkpoint) if args.checkpoint else tp.build_model(args.seed)
    if args.sft:
        import train  # train.py's warm-up, only when asked for

        rows = train.sft_examples(args.sft)
        print(f"warm-up on {len(rows)} SFT rows", flush=True)
        train.warm_up(model, rows, args.sft_steps, args.sft_lr, random.Random(args.seed))
    return model


def config(args, output_dir: Path) -> GRPOConfig:
    return GRPOConfig(
        output_dir=str(output_dir), use_cpu=True, bf16=False, report_to=[], logging_steps=1,
        save_strategy="no", disable_tqdm=True, seed=args.seed, max_steps=args.steps,
        per_device_train_batch_size=args.groups * args.group_size, num_generations=args.group_size,
        max_completion_length=args.max_completion_length, temperature=1.0, top_p=1.0,
        learning_rate=args.lr, lr_scheduler_type="constant", beta=0.0,
        gradient_checkpointing=False, dataloader_num_workers=0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=None, help="edgeroll (default: EDGEROLL_URL, else :8787)")
    parser.add_argument("--policy-admin", required=True, help="the policy server, for /update_weights")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--groups", type=int, default=2, help="prompts (rollout groups) a step")
    parser.add_argument("--group-size", type=int, default=4, help="TRL's num_generations")
    parser.add_argument("--max-completion-length", type=int, default=48, help="tokens a turn")
    parser.add_argument("--dataset", type=Path, default=ROOT / "datasets" / f"{ta.ENV}.jsonl")
    parser.add_argument("--env", default=ta.ENV)
    parser.add_argument("--run", default=None, help="edgeroll run id (default: trl-<time>, fresh)")
    parser.add_argument("--weights-dir", type=Path, default=None, help="where weights go for the server")
    parser.add_argument("--checkpoint", type=Path, default=None, help="start from this tiny_policy checkpoint")
    parser.add_argument("--sft", type=Path, default=None, help="warm up on these SFT rows first")
    parser.add_argument("--sft-steps", type=int, default=500)
    parser.add_argument("--sft-lr", type=float, default=3e-3)
    # 3e-4 (train.py's) took the reward to 0 after one TRL step in a measured run; 3e-5 did not.
    parser.add_argument("--lr", type=float, default=3e-5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--fold-prompts", action="store_true", help="see trl_adapter.fold_prompt")
    parser.add_argument("--out", type=Path, default=None, help="write the per-step figures as JSON")
    args = parser.parse_args()
    torch.set_num_threads(1)  # the policy server and the Worker share the machine
    torch.manual_seed(args.seed)

    work = Path(tempfile.mkdtemp(prefix="trl-run-"))
    examples = [json.loads(line) for line in args.dataset.read_text().splitlines() if line.strip()]
    rollout = ta.EdgerollRollout(
        EdgerollClient(args.url), examples, policy_admin=args.policy_admin, env=args.env,
        weights_dir=args.weights_dir or work / "weights", run_id=args.run or f"trl-{int(time.time())}",
        seed=args.seed, fold_prompts=args.fold_prompts)
    trainer = GRPOTrainer(model=initial_model(args), reward_funcs=ta.edgeroll_reward,
                          args=config(args, work / "trl"), train_dataset=ta.trl_dataset(examples),
                          processing_class=build_tokenizer(), rollout_func=rollout)
    results: list[dict] = []
    trainer.remove_callback(PrinterCallback)  # StepLines prints instead
    trainer.add_callback(StepLines(rollout, results))
    print(f"run {rollout.run_id}: {args.steps} steps of {args.groups} groups x {args.group_size}", flush=True)
    started = time.monotonic()
    try:
        trainer.train()
    finally:
        shutil.rmtree(work, ignore_errors=True)  # the server has loaded the weights it needs
    print(f"{args.steps} steps in {time.monotonic() - started:.1f} s", flush=True)
    if args.out:
        args.out.write_text(json.dumps({"run_id": rollout.run_id, "steps": results}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
