"""Draws the reward curve and the mismatch of a training run: plot.py results.json out.png"""

import json
import sys

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
passes = [sum(rewards[i:i + 3]) / 3 for i in range(0, len(rewards) - 2, 3)]
reward.plot([i + 1 for i in range(0, len(rewards) - 2, 3)], passes, marker="s", linewidth=2,
            label="mean over each pass of the dataset")
reward.plot(steps, results["success_by_step"], marker=".", linestyle="--", label="success rate")
reward.set_xlabel("RL step (policy version)")
reward.set_ylim(0, max(0.5, 1.3 * max(rewards)))
reward.set_title("mental-math: reward while training on edgeroll's samples")
reward.legend(loc="upper left", fontsize="small")
mismatch.semilogy(steps, [max(m, 1e-9) for m in results["mismatch_by_step"]], marker="o")
mismatch.axhline(1e-3, color="red", linestyle=":", label="bound 1e-3")
mismatch.set_xlabel("RL step")
mismatch.set_title("|recomputed - served| logprob, before each update")
mismatch.legend(loc="upper right")
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)
