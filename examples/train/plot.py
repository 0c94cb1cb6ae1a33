"""Draws the reward curve and the mismatch of a training run, with every kept seed's mean per
pass of the dataset beside it: plot.py results.json out.png [runs/]"""

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

results = json.load(open(sys.argv[1]))
steps = list(range(len(results["reward_by_step"])))
fig, (reward, mismatch) = plt.subplots(1, 2, figsize=(10, 3.6))
rewards = results["reward_by_step"]
reward.plot(steps, rewards, marker="o", alpha=0.5, label="mean reward")
# Three steps are one pass over the dataset (16 groups a step, 48 examples): the mean over each
# pass compares the same examples, without the step-to-step spread of their difficulty.
def pass_means(curve):
    starts = range(0, len(curve) - 2, 3)
    return [i + 1 for i in starts], [sum(curve[i:i + 3]) / 3 for i in starts]


reward.plot(*pass_means(rewards), marker="s", linewidth=2,
            label=f"seed {results.get('seed', '?')}: mean over each pass of the dataset")
others = sorted(Path(sys.argv[3]).glob("seed-*.json")) if len(sys.argv) > 3 else []
for path in others:
    run = json.loads(path.read_text())
    if run.get("seed") != results.get("seed") and len(run["reward_by_step"]) == len(rewards):
        reward.plot(*pass_means(run["reward_by_step"]), marker="s", linewidth=1, linestyle=":",
                    label=f"seed {run['seed']}: mean over each pass")
reward.plot(steps, results["success_by_step"], marker=".", linestyle="--", label="success rate")
reward.set_xlabel("RL step (policy version)")
top = max([max(rewards)] + [max(json.loads(p.read_text())["reward_by_step"]) for p in others])
reward.set_ylim(0, max(0.5, 1.3 * top))
reward.set_title("mental-math: reward while training on edgeroll's samples")
reward.legend(loc="upper left", fontsize="small")
mismatch.semilogy(steps, [max(m, 1e-9) for m in results["mismatch_by_step"]], marker="o")
mismatch.axhline(1e-3, color="red", linestyle=":", label="bound 1e-3")
mismatch.set_xlabel("RL step")
mismatch.set_title("|recomputed - served| logprob, before each update")
mismatch.legend(loc="upper right")
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)
