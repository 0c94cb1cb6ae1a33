"""A minimal GRPO-style training loop over edgeroll batches: where the data comes from, and
where the loss goes. No ML framework here; the comments mark what a real trainer does.

    python3 examples/python/train_grpo.py --url http://127.0.0.1:8787 --steps 3 --max-groups 4

The token is found as edgeroll_client.discover_token says (EDGEROLL_TOKEN, or a local stack's).
"""

from __future__ import annotations

import argparse
import sys
import time
import urllib.error

from edgeroll_client import EdgerollClient, EdgerollError


def sampled_turns(episode: dict) -> list[dict]:
    """The assistant messages the policy sampled: the only tokens that get a gradient."""
    return [m for m in episode["messages"] if m.get("sampled")]


def grpo_loss(groups: list[dict]) -> tuple[float, int]:
    """Stands in for the policy-gradient loss; returns (surrogate, sampled turns used)."""
    total, turns = 0.0, 0
    for group in groups:
        for episode in group["episodes"]:
            if episode["status"] == "failed":
                continue  # failed episodes carry no advantage
            for turn in sampled_turns(episode):
                # Real trainer: tokenize the prompt (messages before this turn) and the turn,
                # compute the policy's log-probs of the turn's tokens, then
                #   loss += -(turn["advantage"] * logprobs).sum() / normaliser
                # (plus a KL or clipping term, as your GRPO variant prescribes).
                total += -turn["advantage"] * len(turn["content"])
                turns += 1
    return total, turns


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=None, help="the Worker (default: EDGEROLL_URL, else :8787)")
    parser.add_argument("--token", default=None, help="bearer token (default: discovered)")
    parser.add_argument("--run", default=None, help="only this run_id")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--max-groups", type=int, default=4)
    parser.add_argument("--max-policy-lag", type=int, default=2)
    parser.add_argument("--wait", type=float, default=10.0, help="seconds to wait for data per step")
    args = parser.parse_args()

    client = EdgerollClient(args.url, token=args.token)
    policy_version = 0
    for step in range(args.steps):
        request = dict(max_groups=args.max_groups, current_policy_version=policy_version,
                       max_policy_lag=args.max_policy_lag, include=["messages", "per_turn"])
        if args.run:
            request["run_id"] = args.run
        deadline = time.monotonic() + args.wait
        while True:
            with client.leased(**request) as batch:
                if batch.groups:
                    loss, turns = grpo_loss(batch.groups)
                    # optimizer.zero_grad(); loss.backward(); optimizer.step()
                    for group in batch.groups:
                        rewards = [e["reward"] for e in group["episodes"]]
                        advantages = [None if e["advantage"] is None else round(e["advantage"], 3)
                                      for e in group["episodes"]]
                        print(f"step {step}: trained on group {group['group_id']} ({group['env']}) "
                              f"rewards={rewards} advantages={advantages}")
                    print(f"step {step}: batch {batch.batch_id} acked, {turns} sampled turns, "
                          f"surrogate loss {loss:.1f}")
                    break
            if time.monotonic() > deadline:
                print(f"step {step}: no data within {args.wait}s")
                break
            time.sleep(0.5)
        policy_version += 1  # a real trainer pushes new weights to the inference host here
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except EdgerollError as error:  # the API's own message names the problem
        hint = " (set EDGEROLL_TOKEN or pass --token)" if error.status in (401, 403) else ""
        sys.exit(f"train_grpo: {error}{hint}")
    except urllib.error.URLError as error:
        sys.exit(f"train_grpo: nothing answered ({error.reason}): is edgeroll running? (npm run dev)")
