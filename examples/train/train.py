"""GRPO on a tiny policy, with edgeroll as the only source of data.

    python3 examples/train/train.py init --checkpoint DIR
    python3 examples/train/train.py train --checkpoint DIR --policy URL --sft sft.jsonl ...

`init` builds the tokenizer's model and writes its first weights (policy v0). `train` warms the
policy up on SFT rows (edgeroll's own export of episodes the simulator played), then, step after
step: starts rollout groups on edgeroll against the policy server, leases them with token-exact
samples, checks the logprobs it recomputes against the ones the host sampled with (the
mismatch: ~0 when every token is the host's own), takes clipped policy-gradient steps with the
importance ratio against those logprobs, pushes the new weights to the server, and acks.
Every `--eval-every` steps (and after the last) it also plays the held-out drills, which
nothing trains on, as groups of a run of their own, reads them back and acks them untrained.
With `--lr 0` (the control) the weights stay the warm-up's.

With `--overlap`, the next step's groups (token-in) generate while the trainer updates, and each
weight sync pauses the run mid-generation: `--sync interrupt` (the default) aborts what is in
flight, which edgeroll keeps and continues under the new weights; `--sync hold` waits for it to
finish. Each sync's stall (pause to nothing in flight) is in the results, and every token of a
batch is checked against the weights that sampled it (its `policy_versions`).
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import random
import sys
import time
import urllib.request
from pathlib import Path

import torch
from edgeroll_client import EdgerollClient, decode_sample

import tiny_policy as tp

ENV = "mental-math"
# Mean absolute difference allowed between the recomputed and the served logprobs before an
# update. Exact tokens with the host's weights give ~1e-7 (float noise); one wrong token, a
# different template or stale weights give orders of magnitude more.
MISMATCH_BOUND = 1e-3


class OffPolicy(Exception):
    """The trainer's logprobs are not the host's: its tokens or its weights differ."""


def post(url: str, body: dict) -> dict:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.loads(response.read())


# --- supervised warm-up -----------------------------------------------------------------------

def sft_examples(path: Path) -> list[tuple[list[int], list[int]]]:
    """Each SFT row as (ids, mask): the prompt rendered as context, then the target messages,
    the assistant ones supervised up to and including their `<|im_end|>`."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    # Sorted by content: the export lists rows in landing order, with fresh episode ids, both of
    # which vary from run to run; a seed should give the same warm-up.
    rows.sort(key=lambda r: json.dumps([r.get("example_id"), r["prompt_messages"], r["target_messages"]]))
    examples = []
    for row in rows:
        ids = tp.encode(tp.render(row["prompt_messages"], add_generation_prompt=False))
        mask = [0] * len(ids)
        for message in row["target_messages"]:
            head = tp.encode(f"{tp.IM_START}{message['role']}\n")
            body = tp.encode(f"{message['content']}{tp.IM_END}")
            ids += head + body + tp.encode("\n")
            trained = 1 if message["role"] == "assistant" else 0
            mask += [0] * len(head) + [trained] * len(body) + [0]
        examples.append((ids[: tp.CONTEXT], mask[: tp.CONTEXT]))
    return examples


def warm_up(model, examples, steps: int, lr: float, rng: random.Random) -> float:
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, steps)
    model.train()
    loss = torch.tensor(0.0)
    for step in range(steps):
        batch = rng.sample(examples, min(16, len(examples)))
        sequences = [ids for ids, _ in batch]
        lp = tp.token_logprobs(model, sequences)
        m = tp.padded([mask for _, mask in batch], lp.shape[1])
        loss = -(lp * m).sum() / m.sum().clamp(min=1)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
        if step % 100 == 0 or step == steps - 1:
            print(f"warm-up {step}/{steps}: loss {loss.item():.3f}", flush=True)
    return float(loss.detach())


def cached_warm_up(model, examples, args, rng: random.Random) -> dict:
    """The warm-up, kept under `--warm-up-cache` by everything that determines it (the rows, the
    initial weights, its steps and rate, the seed): a seed's control then starts from its RL
    run's very weights, and the trainer's random state goes on from where it left it."""
    if args.warm_up_cache is None:
        t0 = time.monotonic()
        loss = warm_up(model, examples, args.sft_steps, args.sft_lr, rng)
        return {"loss": loss, "seconds": time.monotonic() - t0, "cached": False}
    key = hashlib.sha256(json.dumps([examples, weights_sha256(model), args.sft_steps, args.sft_lr,
                                     args.seed]).encode()).hexdigest()[:24]
    weights, meta = args.warm_up_cache / f"{key}.pt", args.warm_up_cache / f"{key}.json"
    if weights.exists() and meta.exists():
        model.load_state_dict(torch.load(weights, weights_only=True))
        kept = json.loads(meta.read_text())
        version, state, gauss = kept.pop("rng_state")
        rng.setstate((version, tuple(state), gauss))
        print(f"warm-up {key} from the cache (loss {kept['loss']:.3f})", flush=True)
        return {**kept, "cached": True}
    t0 = time.monotonic()
    loss = warm_up(model, examples, args.sft_steps, args.sft_lr, rng)
    kept = {"loss": loss, "seconds": time.monotonic() - t0}
    args.warm_up_cache.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), weights)
    meta.write_text(json.dumps({**kept, "rng_state": rng.getstate()}))
    return {**kept, "cached": False}


# --- reinforcement learning -------------------------------------------------------------------

def mismatch(model, samples: list[dict], version: int | None = None) -> dict:
    """How far the logprobs recomputed now sit from the host's, over the sampled tokens: the
    mean absolute difference and the k3 estimate of KL(host || trainer). With `version`, over
    the tokens that version sampled alone (`policy_versions`): an overlapped step's batch also
    holds tokens of the version before, whose logprobs are rightly another policy's."""
    if not samples:
        return {"mean_abs": float("nan"), "kl": float("nan"), "tokens": 0}
    model.eval()
    with torch.no_grad():
        new = tp.token_logprobs(model, [s["token_ids"] for s in samples])
    old = tp.padded([s["logprobs"] for s in samples], new.shape[1])
    m = tp.padded([s["mask"] for s in samples], new.shape[1]).bool()
    if version is not None:
        sampled_by = tp.padded([[float(v) for v in s["policy_versions"]] for s in samples], new.shape[1])
        m &= sampled_by == version
    d = (new - old)[m]
    k = torch.exp(d) - 1 - d
    return {"mean_abs": float(d.abs().mean()), "kl": float(k.mean()), "tokens": int(d.numel())}


def check_on_policy(check: dict, bound: float = MISMATCH_BOUND) -> None:
    if not check["mean_abs"] < bound:
        raise OffPolicy(f"mismatch {check['mean_abs']:.3g} over {check['tokens']} tokens, bound "
                        f"{bound:g}: the trainer is not scoring the host's tokens with the host's weights")


def grpo_step(model, optimizer, samples: list[dict], clip: float = 0.2) -> float:
    """One clipped policy-gradient step (PPO-style) over every sampled token of the batch."""
    model.train()
    optimizer.zero_grad()
    new = tp.token_logprobs(model, [s["token_ids"] for s in samples])
    width = new.shape[1]
    m = tp.padded([s["mask"] for s in samples], width)
    old = tp.padded([s["logprobs"] for s in samples], width)
    advantage = tp.padded([s["advantages"] for s in samples], width)
    ratio = torch.exp((new - old) * m)
    surrogate = torch.minimum(ratio * advantage, torch.clamp(ratio, 1 - clip, 1 + clip) * advantage)
    loss = -(surrogate * m).sum() / m.sum().clamp(min=1)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return float(loss.detach())


def grpo_update(model, optimizer, samples: list[dict], epochs: int, minibatches: int,
                rng: random.Random) -> float:
    """PPO-style passes over one batch: `epochs` shuffled passes of `minibatches` steps each.
    Every step's ratio is against the served logprobs (the policy that sampled), so later steps
    are clipped where the policy already moved; many small Adam steps learn where one large one
    (a fresh Adam's first step moves every weight by the full learning rate) unlearns."""
    loss = 0.0
    for _ in range(epochs):
        order = samples[:]
        rng.shuffle(order)
        size = -(-len(order) // minibatches)
        for start in range(0, len(order), size):
            loss = grpo_step(model, optimizer, order[start:start + size])
    return loss


def trainable(model, names: str) -> list:
    """The parameters the RL step trains: `all`, or those whose names start with one of the
    comma-separated prefixes (`transformer.ln_f`: the final layer norm alone). The rest are
    frozen, so the policy gradient's noise in them cannot move the policy."""
    prefixes = [n for n in names.split(",") if n]
    chosen = [p for n, p in model.named_parameters()
              if names == "all" or any(n.startswith(prefix) for prefix in prefixes)]
    if not chosen:
        raise SystemExit(f"--trainable {names!r} names no parameter of the model")
    for p in model.parameters():
        p.requires_grad_(any(p is q for q in chosen))
    return chosen


def examples_from(dataset: Path) -> list[dict]:
    return [json.loads(line) for line in dataset.read_text().splitlines() if line.strip()]


def check_held_out(heldout: list[dict], train: list[dict], sft_rows: list[dict]) -> None:
    """The held-out drills are no training drill and no warm-up row's (the split makes them so;
    this refuses a run given files that do not)."""
    drill = lambda e: json.dumps(e["metadata"]["questions"])  # noqa: E731
    seen_ids = {e["id"] for e in train} | {r.get("example_id") for r in sft_rows}
    seen_drills = {drill(e) for e in train}
    leaked = [e["id"] for e in heldout if e["id"] in seen_ids or drill(e) in seen_drills]
    if leaked:
        raise SystemExit(f"held-out drills also trained on: {leaked[:5]}")


def weights_sha256(model) -> str:
    """One digest of every weight: the control's stays the warm-up's, and a seed's RL run and
    control start from the same one."""
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().contiguous().numpy().tobytes())
    return digest.hexdigest()


def start_eval(client: EdgerollClient, args, heldout: list[dict], version: int) -> tuple[str, list[str]]:
    """Starts one evaluation group (`kind: "eval"`) a held-out drill, in the training run: pinned
    to `version`, never leased, sampled as training samples are. The seeds depend on the seed
    and the version only, so a seed's RL run and its control draw alike."""
    ids = []
    for i, example in enumerate(heldout):
        started = client.start_group({
            "env": ENV, "example": example, "group_size": args.eval_group_size,
            "run_id": args.run, "kind": "eval", "policy_version": version,
            "sampling": {"model": "policy", "temperature": 1.0, "top_p": 1.0,
                         "max_completion_tokens": 48,
                         "seed": args.seed * 100_000 + 50_000 + version * 100 + i},
            "max_context_tokens": tp.CONTEXT,
        }, idempotency_key=f"{args.run}:eval:v{version}:{i}")
        ids.append(started["group_id"])
    return args.run, ids


def finish_eval(client: EdgerollClient, run_id: str, group_ids: list[str], version: int) -> dict:
    """The held-out figure at `version`, from edgeroll's `eval_results` (the mean reward, pass@k,
    maj@k), with the standard error over the drills from the groups (each drill's mean is one
    draw). The view and the groups must agree: a figure the trainer computed alone is not kept."""
    wait_landed(client, group_ids)
    groups = [client.get_group(group_id) for group_id in group_ids]
    scored = [[e["score"] for e in g["episodes"] if e["score"] is not None] for g in groups]
    means = [sum(g) / len(g) for g in scored if g]
    rows = {r["k"]: r for r in client.get_evals(run_id) if r["env"] == ENV and r["policy_version"] == version}
    view = rows.get(1)
    if view is None or view["examples"] != len(group_ids) or view["unmeasured_episodes"] != 0:
        raise SystemExit(f"held-out v{version}: eval_results has {view} for {len(group_ids)} groups")
    mean = sum(means) / len(means)
    if abs(view["avg_reward"] - mean) > 1e-9:
        raise SystemExit(f"held-out v{version}: eval_results says {view['avg_reward']}, the groups {mean}")
    var = sum((m - mean) ** 2 for m in means) / max(len(means) - 1, 1)
    return {"version": version, "reward": view["avg_reward"], "se": (var / len(means)) ** 0.5,
            "success": view["avg_success"], "episodes": view["episodes"],
            "unscored": sum(len(g["episodes"]) for g in groups) - view["episodes"],
            "pass_at_k": {str(k): r["pass_at_k"] for k, r in sorted(rows.items())}}


def wait_landed(client: EdgerollClient, group_ids: list[str], timeout: float = 600) -> None:
    for group_id in group_ids:
        client.wait_for_group(group_id, timeout=timeout)


def start_step(client: EdgerollClient, args, examples: list[dict], step: int) -> list[str]:
    """Starts a step's training groups. Synchronous steps name their version; overlapped ones
    take the run's policy (set by the trainer at each sync) and generate from token ids, so a
    turn cut by a sync is continued token-exact under the new weights."""
    group_ids = []
    for g in range(args.groups):
        example = examples[(step * args.groups + g) % len(examples)]
        started_group = client.start_group({
            "env": ENV, "example": example, "group_size": args.group_size,
            "run_id": args.run, "tokens": "required",
            **({"generation": "tokens"} if args.overlap else {"policy_version": step}),
            "credit_assignment": "per_turn", "advantage": "mean_std",
            "sampling": {"model": "policy", "temperature": 1.0, "top_p": 1.0,
                         "max_completion_tokens": 48, "seed": args.seed * 100_000 + step * 100 + g},
            "max_context_tokens": tp.CONTEXT,
        }, idempotency_key=f"{args.run}:{step}:{g}")
        group_ids.append(started_group["group_id"])
    return group_ids


def weight_sync(client: EdgerollClient, args, path: Path, version: int) -> dict:
    """An overlapped step's weight sync while the next step's groups generate: pause the run
    (with `--sync interrupt`, aborting its generations in flight), wait until nothing of it is in
    flight, load the weights, resume at the new version. The stall is the pause to idle."""
    t0 = time.monotonic()
    answer = client.set_policy(args.run, version - 1, paused=True,
                               interrupt=True if args.sync == "interrupt" else None)
    told_all = answer["groups_notified"] >= answer["groups_running"]
    if not (told_all and answer["in_flight_generations"] == 0):
        client.wait_idle(args.run, interval=0.02)
    stall = time.monotonic() - t0
    post(f"{args.policy_admin}/update_weights", {"path": str(path), "policy_version": version})
    load = time.monotonic() - t0 - stall
    client.set_policy(args.run, version, paused=False)
    return {"stall_ms": stall * 1000, "load_ms": load * 1000,
            # hold: the generations the sync waited for; interrupt: 0 once every cut is recorded
            "in_flight_in_answer": answer["in_flight_generations"],
            "groups_running": answer["groups_running"]}


def train(args) -> int:
    rng = random.Random(args.seed)
    torch.manual_seed(args.seed)
    # Two threads: the trainer computes while the policy server and the Worker wait on it.
    torch.set_num_threads(2)
    model = tp.load_initial(args.checkpoint)
    started = time.monotonic()
    results: dict = {"reward_by_step": [], "success_by_step": [], "mismatch_by_step": [],
                     "kl_by_step": [], "tokens_by_step": [], "seconds_by_step": [],
                     "rollout_seconds_by_step": [], "syncs": [],
                     "previous_version_tokens_by_step": [], "previous_mismatch_by_step": [],
                     "overlap": args.overlap, "sync": args.sync if args.overlap else None}

    examples = examples_from(args.dataset)
    heldout = examples_from(args.heldout)[: args.eval_examples]
    check_held_out(heldout, examples, examples_from(args.sft))
    sft = sft_examples(args.sft)
    print(f"warm-up on {len(sft)} SFT rows from edgeroll's export", flush=True)
    warmed = cached_warm_up(model, sft, args, rng)
    results["warm_up_loss"] = warmed["loss"]
    results["warm_up_seconds"] = warmed["seconds"]
    results["warm_up_cached"] = warmed["cached"]
    results["warm_up_sha256"] = weights_sha256(model)
    path = tp.save(model, args.checkpoint, 0)
    post(f"{args.policy_admin}/update_weights", {"path": str(path), "policy_version": 0})

    client = EdgerollClient(args.url)
    trained = trainable(model, args.trainable)
    results["trainable"] = args.trainable
    results["trained_parameters"] = sum(p.numel() for p in trained)
    optimizer = torch.optim.AdamW(trained, lr=args.lr)
    results["heldout"] = []

    def evaluated(run_id: str, ids: list[str], version: int) -> None:
        row = finish_eval(client, run_id, ids, version)
        results["heldout"].append(row)
        print(f"held-out at v{version}: reward {row['reward']:.3f} ± {row['se']:.3f} (SE) "
              f"success {row['success']:.2f} over {row['episodes']} episodes", flush=True)

    # Overlapped: a step's groups generate while the trainer updates on the step before (one
    # step off-policy at most), and each sync cuts them mid-turn (`--sync interrupt`) or waits
    # for them (`--sync hold`). The trainer keeps the weights before its last update, to check
    # the tokens the version before sampled against the weights that sampled them.
    behind = None
    if args.overlap:
        client.set_policy(args.run, 0, max_lag=1)
        pending = start_step(client, args, examples, 0)
    for step in range(args.steps):
        t0 = time.monotonic()
        # The held-out drills play beside the step's training groups, with the same weights.
        evaluation = start_eval(client, args, heldout, step) if step % args.eval_every == 0 else None
        if args.overlap:
            group_ids = pending
            wait_landed(client, group_ids)
            pending = start_step(client, args, examples, step + 1) if step + 1 < args.steps else []
        else:
            group_ids = start_step(client, args, examples, step)
            wait_landed(client, group_ids)
            if evaluation:
                evaluated(*evaluation, step)
        rollout_seconds = time.monotonic() - t0
        with client.leased(max_groups=args.groups, run_id=args.run, include=["tokens"],
                           token_encoding="base64", current_policy_version=step,
                           max_policy_lag=1 if args.overlap else 0, skip_uniform_groups=False) as batch:
            episodes = [e for g in batch.groups for e in g["episodes"]]
            samples = [decode_sample(s) for e in episodes for s in e["samples"]]
            rewards = [e["reward"] for e in episodes if e["reward"] is not None]
            inexact = [e for e in episodes if e["token_mode"] != "exact"]
            if inexact:
                raise SystemExit(f"step {step}: {len(inexact)} episodes without exact tokens: "
                                 f"{inexact[0].get('token_mode_reason')}")
            # Before this batch's update: the weights that sampled each token checked.
            check = mismatch(model, samples, step if args.overlap else None)
            if check["tokens"] or not args.overlap:
                check_on_policy(check, args.mismatch_bound)
            if args.overlap and behind is not None:
                previous = mismatch(behind, samples, step - 1)
                if previous["tokens"]:
                    check_on_policy(previous, args.mismatch_bound)
                results["previous_version_tokens_by_step"].append(previous["tokens"])
                results["previous_mismatch_by_step"].append(previous["mean_abs"])
                check = check if check["tokens"] else previous
            if args.overlap:
                behind = copy.deepcopy(model)
            # At lr 0 (the control) an update moves no weight: skipped, the digest shows it.
            loss = grpo_update(model, optimizer, samples, args.epochs, args.minibatches, rng) \
                if args.lr > 0 else 0.0
        path = tp.save(model, args.checkpoint, step + 1)
        if args.overlap:
            if evaluation:  # landed before the sync: each held-out group plays one version
                evaluated(*evaluation, step)
            sync = weight_sync(client, args, path, step + 1)
            results["syncs"].append({"step": step, **sync})
            print(f"sync to v{step + 1} ({args.sync}): stalled {sync['stall_ms']:.0f} ms, "
                  f"loaded in {sync['load_ms']:.0f} ms", flush=True)
        else:
            post(f"{args.policy_admin}/update_weights", {"path": str(path), "policy_version": step + 1})
        mean = sum(rewards) / max(len(rewards), 1)
        success = sum(1 for e in episodes if e["success"]) / max(len(episodes), 1)
        results["reward_by_step"].append(mean)
        results["success_by_step"].append(success)
        results["mismatch_by_step"].append(check["mean_abs"])
        results["kl_by_step"].append(check["kl"])
        results["tokens_by_step"].append(check["tokens"])
        results["seconds_by_step"].append(time.monotonic() - t0)
        results["rollout_seconds_by_step"].append(rollout_seconds)
        print(f"step {step}: reward {mean:.3f} success {success:.2f} | mismatch {check['mean_abs']:.2e} "
              f"kl {check['kl']:.2e} over {check['tokens']} tokens | loss {loss:+.4f} | "
              f"{time.monotonic() - t0:.1f} s ({rollout_seconds:.1f} s rolling out)", flush=True)
    t0 = time.monotonic()
    evaluated(*start_eval(client, args, heldout, args.steps), args.steps)
    results["final_eval_seconds"] = time.monotonic() - t0
    results["final_sha256"] = weights_sha256(model)
    results["seconds"] = time.monotonic() - started
    # What ran it: the trainer and the policy server use the CPU whatever torch sees.
    results["accelerators"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    return 0


def init(args) -> int:
    model = tp.build_model(args.seed)
    tp.save(model, args.checkpoint, 0)
    print(f"initialised {sum(p.numel() for p in model.parameters()):,} parameters in {args.checkpoint}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_init = sub.add_parser("init")
    p_init.add_argument("--checkpoint", type=Path, required=True)
    p_init.add_argument("--seed", type=int, default=1)
    p_train = sub.add_parser("train")
    p_train.add_argument("--checkpoint", type=Path, required=True)
    p_train.add_argument("--url", default=None, help="edgeroll (default: EDGEROLL_URL, else :8787)")
    p_train.add_argument("--policy-admin", required=True, help="the policy server, for /update_weights")
    p_train.add_argument("--sft", type=Path, required=True)
    p_train.add_argument("--dataset", type=Path, default=Path(__file__).resolve().parents[2] / "datasets" / f"{ENV}.jsonl")
    p_train.add_argument("--heldout", type=Path, default=Path(__file__).resolve().parents[2] / "datasets" / f"{ENV}-heldout.jsonl")
    p_train.add_argument("--eval-every", type=int, default=4, help="steps between held-out evaluations")
    p_train.add_argument("--eval-examples", type=int, default=None, help="the first N held-out drills (default: all)")
    p_train.add_argument("--eval-group-size", type=int, default=4)
    p_train.add_argument("--run", default="train-example")
    p_train.add_argument("--steps", type=int, default=24)
    p_train.add_argument("--groups", type=int, default=16)
    p_train.add_argument("--group-size", type=int, default=8)
    p_train.add_argument("--sft-steps", type=int, default=500)
    p_train.add_argument("--sft-lr", type=float, default=3e-3)
    p_train.add_argument("--warm-up-cache", type=Path, default=None,
                         help="keep warm-ups here, by what determines them, and reuse them")
    p_train.add_argument("--lr", type=float, default=1e-4, help="0: the control (no weight moves)")
    p_train.add_argument("--trainable", default="all",
                         help="`all`, or comma-separated parameter-name prefixes the RL step trains")
    p_train.add_argument("--epochs", type=int, default=3, help="passes over each batch")
    p_train.add_argument("--minibatches", type=int, default=2, help="optimizer steps per pass")
    p_train.add_argument("--seed", type=int, default=1)
    p_train.add_argument("--mismatch-bound", type=float, default=MISMATCH_BOUND)
    p_train.add_argument("--overlap", action="store_true",
                         help="generate the next step's groups (token-in) while training; sync weights mid-generation")
    p_train.add_argument("--sync", choices=["interrupt", "hold"], default="interrupt",
                         help="with --overlap: abort generations in flight at a sync (kept and continued), or wait for them")
    p_train.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    return init(args) if args.command == "init" else train(args)


if __name__ == "__main__":
    sys.exit(main())
