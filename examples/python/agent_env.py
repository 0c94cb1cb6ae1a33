"""agent-env: the seed's tool-calling AgentEnv with real tools, over a small in-memory store.

A customer-support agent refunds or cancels an order: it verifies the customer, looks the
orders up and resolves the request, calling tools as text blocks in the seed's format,

    <tool_call>{"name": "get_order", "args": {"order_id": "B2010"}}</tool_call>

("arguments" is accepted for "args", as Hermes/Qwen-style models and edgeroll's simulator
write it). Each step's calls come back as one user message,
<tool_result>[{"name": ..., "result": ...}, ...]</tool_result>; a reply without a tool call
ends the episode. A malformed call (bad JSON, unknown tool, wrong arguments, an unclosed
<tool_call>) is answered with an error in the tool result, never raised.

The store is never kept between calls: every step_episode / score_episode rebuilds it from the
example's metadata and replays the transcript's earlier actions (the seed's replay invariants),
so any server process may answer any call. Serve it to edgeroll:

    PYTHONPATH=python python3 -m edgeroll_env serve examples/python/agent_env.py --port 9100
    # another dataset with the same row shape (datasets/tool-agent.jsonl works too):
    #   ... --arg dataset=datasets/tool-agent.jsonl

Rows: input = the customer's request; output = the resolving tool (the seed's
"refund_order"); metadata = {customer: {name, email, zip}, orders: [{id, item, status,
total}], goal: {tool, order_id}, max_calls?}. The metadata has the shape of edgeroll's
tool-agent rows, so those load here as they are (their goal.tool stands in for output).
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from freesolo.datasets import TaskExample, load_dataset
from freesolo.environments import (
    EnvironmentEpisode,
    EnvironmentMultiTurn,
    EnvironmentStepResult,
    RewardResult,
)

TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)
OPEN_TAG = "<tool_call>"
DEFAULT_DATASET = Path(__file__).with_name("agent_env.jsonl")
MAX_TURNS = 8
DEFAULT_MAX_CALLS = 6
CALL_FORMAT = '<tool_call>{"name": "<tool>", "args": {...}}</tool_call>'

# Each tool's arguments (all strings, all required) and what it is for.
TOOLS: dict[str, tuple[tuple[str, ...], str]] = {
    "verify_identity": (("email", "zip"), "confirm who the customer is; required first"),
    "list_orders": ((), "the customer's orders"),
    "get_order": (("order_id",), "one order"),
    "refund_order": (("order_id", "reason"), "refund a delivered order"),
    "cancel_order": (("order_id",), "cancel an order that is still processing"),
}
PRIVILEGED = {"list_orders", "get_order", "refund_order", "cancel_order"}
MUTATIONS = {"refund_order": ("delivered", "refunded"), "cancel_order": ("processing", "cancelled")}
STATUSES = {"processing", "shipped", "delivered", "refunded", "cancelled"}

# The behaviours graded and their weights. Success (the threshold, 0.8) needs the first two:
# without either, the other three add up to at most 0.7.
WEIGHTS = {
    "resolved": 0.5,  # the resolving tool succeeded on the customer's order
    "authenticated_first": 0.3,  # every privileged call came after verify_identity succeeded
    "within_call_budget": 0.1,  # at most max_calls tool calls
    "no_collateral": 0.1,  # no other order was refunded or cancelled
}
THRESHOLD = round(WEIGHTS["resolved"] + WEIGHTS["authenticated_first"], 3)


# --- the task, from an example -------------------------------------------------------------


@dataclass(frozen=True)
class Task:
    customer: dict[str, str]
    orders: tuple[dict[str, Any], ...]
    goal_tool: str
    goal_order: str
    max_calls: int


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str) or value == "":
        raise ValueError(f"{where}: expected a non-empty string, got {value!r}")
    return value


def task_of(example: TaskExample) -> Task:
    """The task in an example's metadata, each problem naming its field."""
    metadata = example.metadata or {}
    customer = metadata.get("customer")
    if not isinstance(customer, dict):
        raise ValueError("metadata.customer: required, an object {name, email, zip}")
    for key in ("name", "email", "zip"):
        _text(customer.get(key), f"metadata.customer.{key}")
    orders = metadata.get("orders")
    if not isinstance(orders, list) or not orders:
        raise ValueError("metadata.orders: required, a non-empty list")
    for i, order in enumerate(orders):
        if not isinstance(order, dict):
            raise ValueError(f"metadata.orders[{i}]: expected an object")
        _text(order.get("id"), f"metadata.orders[{i}].id")
        _text(order.get("item"), f"metadata.orders[{i}].item")
        if order.get("status") not in STATUSES:
            raise ValueError(f"metadata.orders[{i}].status: expected one of {sorted(STATUSES)}")
    goal = metadata.get("goal")
    if not isinstance(goal, dict):
        raise ValueError("metadata.goal: required, an object {tool, order_id}")
    goal_order = _text(goal.get("order_id"), "metadata.goal.order_id")
    goal_tool = example.output if example.output is not None else goal.get("tool")
    if goal_tool not in MUTATIONS:
        raise ValueError(
            f"output: the resolving tool, one of {sorted(MUTATIONS)}, got {goal_tool!r}"
        )
    if goal.get("tool") is not None and goal.get("tool") != goal_tool:
        raise ValueError(
            f"metadata.goal.tool: {goal.get('tool')!r} differs from output {goal_tool!r}"
        )
    if goal_order not in {o["id"] for o in orders}:
        raise ValueError(f"metadata.goal.order_id: {goal_order!r} is not one of metadata.orders")
    max_calls = metadata.get("max_calls", DEFAULT_MAX_CALLS)
    if isinstance(max_calls, bool) or not isinstance(max_calls, (int, float)) or max_calls < 1:
        raise ValueError(f"metadata.max_calls: expected a positive integer, got {max_calls!r}")
    if max_calls != int(max_calls):
        raise ValueError(f"metadata.max_calls: expected a positive integer, got {max_calls!r}")
    return Task(dict(customer), tuple(orders), goal_tool, goal_order, int(max_calls))


# --- the store and its tools ---------------------------------------------------------------


@dataclass
class Store:
    """The support system's state, rebuilt for every call: never stored on the environment."""

    task: Task
    verified: bool = False
    orders: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Every tool call made so far: {turn, name, args, ok, verified, result}.
    calls: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def open(cls, task: Task) -> Store:
        return cls(task, orders={o["id"]: copy.deepcopy(o) for o in task.orders})


def run_tool(store: Store, name: str, args: dict[str, Any]) -> dict[str, Any] | list[Any]:
    """Runs one tool against the store (changing it) and returns the tool's result, an
    {"error": ...} when the call cannot be carried out."""
    if name not in TOOLS:
        return {"error": f"unknown tool {name!r} (available: {', '.join(TOOLS)})"}
    expected = TOOLS[name][0]
    unknown = sorted(set(args) - set(expected))
    missing = [a for a in expected if a not in args]
    wrong = [a for a in expected if a in args and not isinstance(args[a], str)]
    if unknown or missing or wrong:
        problems = [f"unknown argument {a!r}" for a in unknown]
        problems += [f"missing argument {a!r}" for a in missing]
        problems += [f"argument {a!r} must be a string" for a in wrong]
        return {"error": f"{name}: {'; '.join(problems)}"}
    if name == "verify_identity":
        customer = store.task.customer
        matches = (
            args["email"].strip().lower() == customer["email"].lower()
            and args["zip"].strip() == customer["zip"]
        )
        if not matches:
            return {"error": "identity could not be verified"}
        store.verified = True
        return {"verified": True, "customer": customer["name"]}
    if not store.verified:
        return {"error": "verify the customer's identity first"}
    if name == "list_orders":
        return [dict(o) for o in store.orders.values()]
    order = store.orders.get(args["order_id"])
    if order is None:
        return {"error": f"no order {args['order_id']} for this customer"}
    if name == "get_order":
        return dict(order)
    before, after = MUTATIONS[name]
    if order["status"] != before:
        return {
            "error": f"order {order['id']} is {order['status']}; "
            f"only {before} orders can be {after}"
        }
    order["status"] = after
    return {"order_id": order["id"], "status": after}


def parse_calls(action: str) -> list[tuple[str | None, dict[str, Any] | None, str | None]]:
    """The tool calls of an action, in order, as (name, args, problem): problem is None for a
    well-formed call, else what is wrong with it (and name/args are what could be read)."""
    calls: list[tuple[str | None, dict[str, Any] | None, str | None]] = []
    for number, block in enumerate(TOOL_CALL.findall(action), 1):
        label = f"tool call {number}"
        try:
            call = json.loads(block)
        except json.JSONDecodeError as error:
            calls.append((None, None, f"{label}: not valid JSON ({error.msg})"))
            continue
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            calls.append((None, None, f'{label}: expected a JSON object with "name" and "args"'))
            continue
        name = call["name"]
        if "args" in call and "arguments" in call:
            calls.append((name, None, f'{label}: give "args" or "arguments", not both'))
            continue
        args = call.get("args", call.get("arguments", {}))
        if isinstance(args, str):  # the OpenAI wire format sends arguments as a JSON string
            try:
                args = json.loads(args)
            except json.JSONDecodeError as error:
                calls.append((name, None, f'{label}: "args" is not valid JSON ({error.msg})'))
                continue
        if not isinstance(args, dict):
            calls.append((name, None, f'{label}: "args" must be an object'))
            continue
        calls.append((name, args, None))
    if OPEN_TAG in TOOL_CALL.sub("", action):
        calls.append((None, None, "a <tool_call> block is not closed with </tool_call>"))
    return calls


def apply_action(store: Store, action: str, turn: int) -> list[dict[str, Any]]:
    """Runs one assistant action's tool calls against the store, recording each in
    store.calls, and returns the tool results it produced, [] for a plain reply."""
    results = []
    for name, args, problem in parse_calls(action):
        verified = store.verified
        result = {"error": problem} if problem is not None else run_tool(store, name, args)
        ok = not (isinstance(result, dict) and "error" in result)
        store.calls.append(
            {"turn": turn, "name": name, "args": args or {}, "ok": ok, "verified": verified}
        )
        results.append({"name": name, "result": result})
    return results


# --- the transcript ------------------------------------------------------------------------


def _field(message: Any, name: str) -> Any:
    return message.get(name) if isinstance(message, dict) else getattr(message, name, None)


def _marked(message: Any) -> bool:
    metadata = _field(message, "metadata")
    return (
        _field(message, "role") == "assistant"
        and isinstance(metadata, dict)
        and metadata.get("sampled") is True
    )


def sampled_actions(messages: list[Any]) -> list[str]:
    """The policy's actions in a transcript. edgeroll marks them (metadata.sampled = True) and
    only marked messages count then; a transcript without any mark (the seed's own loop) counts
    every assistant message, which is safe because this environment never writes one."""
    marked = any(_marked(m) for m in messages)
    return [
        _field(m, "content") or ""
        for m in messages
        if (_marked(m) if marked else _field(m, "role") == "assistant")
    ]


def replay(task: Task, actions: list[str]) -> Store:
    """The store after the given actions, from the task's opening state. Pure: no effects."""
    store = Store.open(task)
    for turn, action in enumerate(actions):
        apply_action(store, action, turn)
    return store


# --- the reward ----------------------------------------------------------------------------


def grade(task: Task, calls: list[dict[str, Any]]) -> tuple[float, dict[str, bool]]:
    """The score of a finished conversation from its tool-call log, and the behaviours met."""
    privileged = [c for c in calls if c["name"] in PRIVILEGED]
    mutations = [c for c in calls if c["ok"] and c["name"] in MUTATIONS]
    behaviours = {
        "resolved": any(
            c["name"] == task.goal_tool and c["args"].get("order_id") == task.goal_order
            for c in mutations
        ),
        "authenticated_first": bool(privileged) and all(c["verified"] for c in privileged),
        "within_call_budget": len(calls) <= task.max_calls,
        "no_collateral": all(c["args"].get("order_id") == task.goal_order for c in mutations),
    }
    score = sum(WEIGHTS[name] for name, met in behaviours.items() if met)
    return round(score, 3), behaviours


def tool_call(name: str, args: dict[str, Any]) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'args': args})}</tool_call>"


# --- the environment -----------------------------------------------------------------------


class AgentEnv(EnvironmentMultiTurn):
    name = "agent-env"
    version = "1"

    def __init__(self, *, split: str = "train", dataset: str | Path | None = None) -> None:
        self.split = split
        self.dataset = list(load_dataset(str(dataset or DEFAULT_DATASET)).examples)

    def start_episode(self, example: TaskExample, prompt_text: str):
        tools = "\n".join(
            f"- {name} {{{', '.join(args)}}}: {purpose}" for name, (args, purpose) in TOOLS.items()
        )
        rules = (
            "You are a customer-support agent for an online store. "
            f"Call tools with {CALL_FORMAT}; results come back in <tool_result> blocks. "
            f"Reply to the customer in plain text, without tool calls, when done.\nTools:\n{tools}"
        )
        return [
            {"role": "system", "content": f"{prompt_text}\n\n{rules}".strip()},
            {"role": "user", "content": example.input},
        ]

    def max_episode_turns(self, example: TaskExample) -> int:
        return MAX_TURNS

    def step_episode(self, example, messages, assistant_response):
        task = task_of(example)
        # messages[-1] is the current action: replay the ones before it, then apply it once.
        earlier = sampled_actions(list(messages))[:-1]
        store = replay(task, earlier)
        results = apply_action(store, assistant_response, len(earlier))
        if results:  # a TOOL turn: run the calls, feed results back, stay open
            errors = sum(1 for c in store.calls[-len(results) :] if not c["ok"])
            content = f"<tool_result>{json.dumps(results)}</tool_result>"
            calls = parse_calls(assistant_response)
            if any(problem or name not in TOOLS for name, _, problem in calls):
                content += f"\nCall a tool as {CALL_FORMAT}."
            return EnvironmentStepResult(
                done=False,
                messages=({"role": "user", "content": content},),
                metadata={"calls": len(results), "errors": errors},
            )
        # a REPLY turn: no tool call -> the model is done
        return EnvironmentStepResult(
            done=True, final_response_text=assistant_response, metadata={"calls": 0, "errors": 0}
        )

    def score_episode(self, example: TaskExample, episode: EnvironmentEpisode) -> RewardResult:
        task = task_of(example)
        store = replay(task, sampled_actions(list(episode.messages)))
        score, behaviours = grade(task, store.calls)
        return RewardResult(
            score=score,
            threshold=THRESHOLD,
            metadata={"behaviours": behaviours, "calls": len(store.calls)},
        )

    def sft_completion(self, example: TaskExample):
        """The gold conversation, with this environment's own replies: verify, list the
        orders, resolve, then tell the customer."""
        task = task_of(example)
        customer = task.customer
        args = {"order_id": task.goal_order}
        if task.goal_tool == "refund_order":
            args["reason"] = "customer request"
        done = "refunded" if task.goal_tool == "refund_order" else "cancelled"
        actions = [
            tool_call("verify_identity", {"email": customer["email"], "zip": customer["zip"]}),
            tool_call("list_orders", {}),
            tool_call(task.goal_tool, args),
            f"All done, {customer['name']}: order {task.goal_order} is {done}.",
        ]
        messages = self.start_episode(example, "")
        opening = len(messages)
        for action in actions:
            messages.append({"role": "assistant", "content": action})
            result = self.step_episode(example, list(messages), action)
            messages.extend(result.messages)
            if result.done:
                break
        return messages[opening:]


def load_environment(split: str = "train", **kwargs) -> AgentEnv:
    return AgentEnv(split=split, **kwargs)
