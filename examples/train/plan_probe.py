"""Probes a training plan offline, in one process, before spending a real run on it.

    python3 examples/train/plan_probe.py curve --lrs 1e-4,3e-4 --steps 12 [--optimizer sgd] [--lr-warm-up 48]
    python3 examples/train/plan_probe.py curve --lrs 1e-2 --steps 16 --trainable transformer.ln_f
    python3 examples/train/plan_probe.py curvature [--steps 0.01,0.03] [--positive-only]

The same tiny policy, warm-up and clipped policy-gradient update as train.py, on mental-math
drills played here rather than through edgeroll: the environment's messages are rewritten in
Python (`first_message`, `reply`: keep them as src/environments/mental-math.ts words them), the
warm-up rows are gold transcripts of every training drill, and samples are one sequence an
episode with each turn's tokens carrying that turn's group-relative advantage (per_turn,
mean_std). Nothing here is a published figure: it is for choosing a plan that train.py then
runs through edgeroll, where the result is measured (docs/training-results.md).

`curve` trains from the warm-up at each learning rate and prints the held-out reward (the first
`--eval-drills` held-out drills, twice each, temperature 1) every `--eval-every` steps.
`curvature` takes one policy-gradient direction from a batch of training groups and moves the
warm-up along it, forward and back, by the given L2 lengths, and along a random direction of the
same length, printing the reward by turn on other training drills: when both signs of the
gradient hurt as much as each other while a random step does not, a step is too long for the
signal the batch carries.
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import re
import sys
import tempfile
import time
from pathlib import Path

import torch

import tiny_policy as tp
import train as trainer

DATASETS = Path(__file__).resolve().parents[2] / "datasets"
ANSWER = re.compile(r"<answer>\s*(-?\d+)\s*</answer>")
RULES = "Answer each question with <answer>N</answer>."


def read(name: str) -> list[dict]:
    return [json.loads(line) for line in (DATASETS / name).read_text().splitlines() if line.strip()]


def question(pair: list[int]) -> str:
    return f"What is {pair[0]} + {pair[1]}?"


def first_message(example: dict) -> dict:
    return {"role": "user", "content": f"{example['input']}\n{RULES}\n{question(example['metadata']['questions'][0])}"}


def reply(example: dict, turn: int, answer: int | None) -> dict:
    questions = example["metadata"]["questions"]
    a, b = questions[turn]
    verdict = "Correct." if answer == a + b else f"Wrong: {a} + {b} = {a + b}."
    following = questions[turn + 1] if turn + 1 < len(questions) else None
    return {"role": "user", "content": f"{verdict}\n{question(following)}" if following else verdict}


def parse(text: str) -> int | None:
    found = ANSWER.findall(text)
    return int(found[-1]) if found else None


def gold_rows(examples: list[dict]) -> list[dict]:
    """Every training drill's gold transcript, as edgeroll's SFT export writes a row."""
    rows = []
    for example in examples:
        targets = []
        for turn, (a, b) in enumerate(example["metadata"]["questions"]):
            targets.append({"role": "assistant", "content": f"<answer>{a + b}</answer>"})
            if turn + 1 < len(example["metadata"]["questions"]):
                targets.append(reply(example, turn, a + b))
        rows.append({"example_id": example["id"], "prompt_messages": [first_message(example)],
                     "target_messages": targets})
    return rows


@torch.no_grad()
def play(model, examples: list[dict], group_size: int, generator, temperature: float = 1.0) -> list[dict]:
    """Every example `group_size` times, all episodes a turn decoded as one batch."""
    model.eval()
    episodes = [{"example": e, "messages": [first_message(e)], "turns": [], "rewards": []}
                for e in examples for _ in range(group_size)]
    for turn in range(len(examples[0]["metadata"]["questions"])):
        prompts = [tp.encode(tp.render(e["messages"])) for e in episodes]
        settings = [{"temperature": temperature, "top_p": 1.0, "budget": 48, "stops": [],
                     "generator": generator} for _ in episodes]
        sampled: list[list[tuple[int, float]]] = [[] for _ in episodes]
        for emitted in tp.generate_batch(model, prompts, settings):
            for row, token, logprob in emitted:
                sampled[row].append((token, logprob))
        for episode, prompt, tokens in zip(episodes, prompts, sampled):
            text = tp.decode([t for t, _ in tokens if t != tp.IM_END_ID])
            answer = parse(text)
            a, b = episode["example"]["metadata"]["questions"][turn]
            episode["rewards"].append(1.0 if answer == a + b else 0.0)
            episode["turns"].append((prompt, [t for t, _ in tokens], [lp for _, lp in tokens]))
            episode["messages"].append({"role": "assistant", "content": text})
            if turn + 1 < len(episode["example"]["metadata"]["questions"]):
                episode["messages"].append(reply(episode["example"], turn, answer))
    return episodes


def samples_of(episodes: list[dict], group_size: int, positive_only: bool = False) -> list[dict]:
    """One sample an episode (a turn that is not a prefix of the next prompt gets its own), each
    turn's tokens carrying its per-turn advantage over the group."""
    samples = []
    for start in range(0, len(episodes), group_size):
        group = episodes[start:start + group_size]
        advantages = []
        for turn in range(len(group[0]["rewards"])):
            rewards = [e["rewards"][turn] for e in group]
            mean = sum(rewards) / len(rewards)
            std = (sum((r - mean) ** 2 for r in rewards) / (len(rewards) - 1)) ** 0.5
            advantages.append([(r - mean) / (std + 1e-6) if abs(r - mean) > 1e-12 else 0.0 for r in rewards])
        for k, episode in enumerate(group):
            prompt, tokens, _ = episode["turns"][-1]
            ids = prompt + tokens
            mask, logprobs, advantage = [0] * len(ids), [0.0] * len(ids), [0.0] * len(ids)
            for turn, (p, t, lp) in enumerate(episode["turns"]):
                a = max(advantages[turn][k], 0.0) if positive_only else advantages[turn][k]
                if ids[:len(p) + len(t)] != p + t:
                    samples.append({"token_ids": p + t, "mask": [0] * len(p) + [1] * len(t),
                                    "logprobs": [0.0] * len(p) + lp, "advantages": [0.0] * len(p) + [a] * len(t)})
                    continue
                for j in range(len(t)):
                    mask[len(p) + j], logprobs[len(p) + j], advantage[len(p) + j] = 1, lp[j], a
            samples.append({"token_ids": ids, "mask": mask, "logprobs": logprobs, "advantages": advantage})
    return samples


def mean_reward(episodes: list[dict]) -> float:
    return sum(sum(e["rewards"]) / len(e["rewards"]) for e in episodes) / len(episodes)


def reward_by_turn(episodes: list[dict]) -> list[float]:
    return [round(sum(e["rewards"][t] for e in episodes) / len(episodes), 3)
            for t in range(len(episodes[0]["rewards"]))]


def warmed_up(args, train: list[dict], rng: random.Random):
    model = tp.build_model(args.seed)
    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / "sft.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in gold_rows(train)))
        rows = trainer.sft_examples(path)
    t0 = time.monotonic()
    loss = trainer.warm_up(model, rows, args.sft_steps, args.sft_lr, rng)
    print(f"warm-up: {len(rows)} gold rows, {args.sft_steps} steps, loss {loss:.3f}, "
          f"{time.monotonic() - t0:.0f} s", flush=True)
    return model


def curve(args) -> None:
    rng = random.Random(args.seed)
    train, heldout = read("mental-math.jsonl"), read("mental-math-heldout.jsonl")[: args.eval_drills]
    model = warmed_up(args, train, rng)
    evaluate = lambda: mean_reward(play(model, heldout, 2, torch.Generator().manual_seed(99)))  # noqa: E731
    print(f"v0 held-out {evaluate():.3f}, greedy {mean_reward(play(model, heldout, 1, None, 0.0)):.3f}", flush=True)
    warm = copy.deepcopy(model.state_dict())
    for lr in [float(x) for x in args.lrs.split(",")]:
        model.load_state_dict(warm)
        trained = trainer.trainable(model, args.trainable)
        optimizer = (torch.optim.SGD if args.optimizer == "sgd" else torch.optim.AdamW)(trained, lr=lr)
        ramp = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda k: min(1.0, (k + 1) / args.lr_warm_up) if args.lr_warm_up else 1.0)
        generator = torch.Generator().manual_seed(args.seed * 1000)
        for step in range(args.steps):
            drills = [train[(step * args.groups + g) % len(train)] for g in range(args.groups)]
            episodes = play(model, drills, args.group_size, generator)
            samples = samples_of(episodes, args.group_size)
            for _ in range(args.epochs if lr > 0 else 0):
                order = samples[:]
                rng.shuffle(order)
                size = -(-len(order) // args.minibatches)
                for start in range(0, len(order), size):
                    trainer.grpo_step(model, optimizer, order[start:start + size])
                    ramp.step()
            if (step + 1) % args.eval_every == 0:
                print(f"lr {lr:g} step {step + 1}: training reward {mean_reward(episodes):.3f}, "
                      f"held-out {evaluate():.3f}", flush=True)


def curvature(args) -> None:
    rng = random.Random(args.seed)
    train = read("mental-math.jsonl")
    model = warmed_up(args, train, rng)
    warm = copy.deepcopy(model.state_dict())
    batch = play(model, train[: args.groups], args.group_size, torch.Generator().manual_seed(3))
    samples = samples_of(batch, args.group_size, args.positive_only)
    model.train()
    model.zero_grad()
    width = max(len(s["token_ids"]) for s in samples)
    logprobs = tp.token_logprobs(model, [s["token_ids"] for s in samples])
    mask = tp.padded([s["mask"] for s in samples], width)
    advantage = tp.padded([s["advantages"] for s in samples], width)
    ((logprobs * advantage * mask).sum() / mask.sum()).backward()
    gradient = {n: p.grad.clone() for n, p in model.named_parameters()}
    torch.manual_seed(args.seed)
    random_direction = {n: torch.randn_like(p) for n, p in model.named_parameters()}
    others = train[args.groups: 2 * args.groups]

    def moved(direction: dict, length: float) -> list[float]:
        norm = torch.sqrt(sum((d ** 2).sum() for d in direction.values()))
        model.load_state_dict(warm)
        with torch.no_grad():
            for n, p in model.named_parameters():
                p += length * direction[n] / norm
        return reward_by_turn(play(model, others, args.group_size, torch.Generator().manual_seed(5)))

    print(f"largest gradients: {sorted(((round(float(g.norm()), 3), n) for n, g in gradient.items()), reverse=True)[:4]}")
    print(f"warm-up: reward by turn {moved(gradient, 0.0)}", flush=True)
    for length in [float(x) for x in args.lengths.split(",")]:
        backwards = {n: -g for n, g in gradient.items()}
        print(f"L2 {length:g}: along the gradient {moved(gradient, length)}, against it "
              f"{moved(backwards, length)}, random {moved(random_direction, length)}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("curve", "curvature"):
        p = sub.add_parser(name)
        p.add_argument("--seed", type=int, default=1)
        p.add_argument("--sft-steps", type=int, default=500)
        p.add_argument("--sft-lr", type=float, default=3e-3)
        p.add_argument("--groups", type=int, default=16 if name == "curve" else 32)
        p.add_argument("--group-size", type=int, default=8)
    c = sub.choices["curve"]
    c.add_argument("--lrs", default="1e-4")
    c.add_argument("--optimizer", choices=["adam", "sgd"], default="adam")
    c.add_argument("--lr-warm-up", type=int, default=0, help="optimizer steps of a linear ramp")
    c.add_argument("--trainable", default="all", help="as train.py's: `all` or parameter-name prefixes")
    c.add_argument("--steps", type=int, default=12)
    c.add_argument("--epochs", type=int, default=3)
    c.add_argument("--minibatches", type=int, default=2)
    c.add_argument("--eval-every", type=int, default=4)
    c.add_argument("--eval-drills", type=int, default=64)
    k = sub.choices["curvature"]
    k.add_argument("--lengths", default="0.01,0.03")
    k.add_argument("--positive-only", action="store_true", help="only samples better than their group")
    args = parser.parse_args()
    torch.set_num_threads(1)
    curve(args) if args.command == "curve" else curvature(args)


if __name__ == "__main__":
    sys.exit(main())
