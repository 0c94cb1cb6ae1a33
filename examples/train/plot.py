"""Draws docs/training.png from kept runs: the held-out reward by policy version (each seed's RL
run against its control, with standard errors), the training reward by step, and the mismatch
before each update. plot.py out.png runs/rl-seed-1.json runs/control-seed-1.json ..."""

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

runs = [json.loads(Path(p).read_text()) for p in sys.argv[2:]]
seeds = sorted({r["seed"] for r in runs})
colour = {seed: f"C{i}" for i, seed in enumerate(seeds)}
style = {"rl": dict(linestyle="-", marker="o"), "control": dict(linestyle="--", marker="x")}
fig, (heldout, training, mismatch) = plt.subplots(1, 3, figsize=(15, 4))
for r in sorted(runs, key=lambda r: (r["seed"], r["kind"])):
    label = f"seed {r['seed']} {'RL' if r['kind'] == 'rl' else 'control (lr 0)'}"
    h = r["heldout"]
    heldout.errorbar([e["version"] for e in h], [e["reward"] for e in h], yerr=[e["se"] for e in h],
                     color=colour[r["seed"]], capsize=3, label=label, **style[r["kind"]])
    training.plot(range(len(r["reward_by_step"])), r["reward_by_step"], color=colour[r["seed"]],
                  alpha=0.8, label=label, linestyle=style[r["kind"]]["linestyle"])
    if r["kind"] == "rl":
        mismatch.semilogy(range(len(r["mismatch_by_step"])), [max(m, 1e-9) for m in r["mismatch_by_step"]],
                          marker=".", color=colour[r["seed"]], label=f"seed {r['seed']}")
heldout.set_xlabel("policy version (RL steps taken)")
heldout.set_ylabel("mean reward")
heldout.set_title("held-out drills (never trained on), ± SE")
heldout.legend(fontsize="small")
training.set_xlabel("RL step")
training.set_title("training drills (the warm-up's)")
top = max(max(e["reward"] + e["se"] for r in runs for e in r["heldout"]),
          max(max(r["reward_by_step"]) for r in runs))
for axis in (heldout, training):
    axis.set_ylim(0, min(1.0, 1.2 * top))
mismatch.axhline(1e-3, color="red", linestyle=":", label="bound 1e-3")
mismatch.set_xlabel("RL step")
mismatch.set_title("|recomputed - served| logprob, before each update")
mismatch.legend(loc="upper right", fontsize="small")
fig.tight_layout()
fig.savefig(sys.argv[1], dpi=100)
