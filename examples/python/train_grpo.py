"""A minimal GRPO-style training loop over edgeroll batches: where the data comes from, and
where the loss goes. It trains on token-exact samples (the host's own token ids, a mask on the
sampled tokens, the host's logprobs), never on re-tokenized text. No ML framework here; the
comments mark what a real trainer does.

    PYTHONPATH=python python3 examples/python/train_grpo.py --url http://127.0.0.1:8787 --steps 3 --max-groups 4

It imports the edgeroll_client package from python/: PYTHONPATH=python from the repo root as
above, or `pip install ./python` into the virtual environment that runs it. The token is found
as edgeroll_client.discover_token says (EDGEROLL_TOKEN, or a local stack's).
"""

from __future__ import annotations

import argparse
import sys
import time
import urllib.error

from edgeroll_client import EdgerollClient, EdgerollError, decode_sample


def grpo_loss(groups: list[dict]) -> tuple[float, int]:
    """Stands in for the policy-gradient loss; returns (surrogate, sampled tokens used)."""
    total, tokens = 0.0, 0
    for group in groups:
        for episode in group["episodes"]:
            if episode["status"] == "failed" or episode["token_mode"] != "exact":
                continue  # failed episodes carry no advantage; inexact ones are not trained on
            for sample in map(decode_sample, episode["samples"]):
                # Real trainer: new_logprobs = policy(sample["token_ids"]) (one forward pass);
                #   ratio = exp(new_logprobs - sample["logprobs"])      (importance sampling)
                #   loss += -(clip(ratio) * sample["advantages"] * sample["mask"]).sum() / n
                # With ratio 1 (no model here) the surrogate is the masked advantage sum.
                for m, advantage in zip(sample["mask"], sample["advantages"]):
                    if m:
                        total -= advantage
                        tokens += 1
    return total, tokens


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
    if args.run:
        # Asynchronous RL: carry on from the run's version (a restarted trainer), else start at 0;
        # groups the producer starts from now on take it, and max_lag cancels what falls behind.
        try:
            policy_version = client.get_policy(args.run)["version"]
        except EdgerollError as error:
            if error.status != 404:
                raise
        client.set_policy(args.run, policy_version, max_lag=args.max_policy_lag)
    for step in range(args.steps):
        request = dict(max_groups=args.max_groups, current_policy_version=policy_version,
                       max_policy_lag=args.max_policy_lag, include=["tokens"],
                       token_encoding="base64")
        if args.run:
            request["run_id"] = args.run
        deadline = time.monotonic() + args.wait
        while True:
            with client.leased(**request) as batch:
                if batch.groups:
                    loss, tokens = grpo_loss(batch.groups)
                    # optimizer.zero_grad(); loss.backward(); optimizer.step()
                    for group in batch.groups:
                        rewards = [e["reward"] for e in group["episodes"]]
                        advantages = [None if e["advantage"] is None else round(e["advantage"], 3)
                                      for e in group["episodes"]]
                        print(f"step {step}: trained on group {group['group_id']} ({group['env']}) "
                              f"rewards={rewards} advantages={advantages}")
                    print(f"step {step}: batch {batch.batch_id} acked, {tokens} sampled tokens, "
                          f"surrogate loss {loss:.2f}")
                    break
            if time.monotonic() > deadline:
                print(f"step {step}: no data within {args.wait}s")
                break
            time.sleep(0.5)
        if args.run:
            # The weight sync: new generations of the run wait (none fails, no deadline runs)
            # while the host loads the new weights; generations in flight finish first.
            client.set_policy(args.run, policy_version, paused=True)
        policy_version += 1  # a real trainer pushes new weights to the inference host here
        if args.run:
            # Resumed at the new version: every turn sent from now on records it, and running
            # groups more than max_lag behind it are cancelled (their episodes end stale_policy).
            client.set_policy(args.run, policy_version, paused=False)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except EdgerollError as error:  # the API's own message names the problem
        hints = {
            401: " (the server does not know this token: for a local stack, leave EDGEROLL_TOKEN"
                 " unset and the client finds the stack's own, or pass --token $(npx edgeroll token))",
            403: " (this token lacks the trainer role: pass --token $(npx edgeroll token --role trainer))",
        }
        sys.exit(f"train_grpo: {error}{hints.get(error.status, '')}")
    except urllib.error.URLError as error:
        sys.exit(f"train_grpo: nothing answered ({error.reason}): is edgeroll running? (npm run dev)")
