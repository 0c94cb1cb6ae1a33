"""Draws the reward curve and the mismatch of a training run: plot.py results.json out.png"""

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

results = json.load(open(sys.argv[1]))
steps = list(range(len(results["reward_by_step"])))
fig, (reward, mismatch) = plt.subplots(1, 2, figsize=(10, 3.6))
reward.plot(steps, results["reward_by_step"], marker="o", label="mean reward")
reward.plot(steps, results["success_by_step"], marker=".", linestyle="--", label="success rate")
reward.set_xlabel("RL step (policy version)")
reward.set_ylim(0, 1.02)
reward.set_title("mental-math: reward while training on edgeroll's samples")
reward.legend(loc="lower right")
mismatch.semilogy(steps, [max(m, 1e-9) for m in results["mismatch_by_step"]], marker="o")
mismatch.axhline(1e-3, color="red", linestyle=":", label="bound 1e-3")
mismatch.set_xlabel("RL step")
mismatch.set_title("|recomputed - served| logprob, before each update")
mismatch.legend(loc="upper right")
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)
