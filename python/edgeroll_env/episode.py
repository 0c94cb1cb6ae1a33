"""The steps of the episode loop, each validated against the contract, and the reference loop
that composes them. The HTTP server runs the same steps, so what an author tests in-process
is what the rollout engine gets over the wire (as in edgeroll's src/sdk/episode.ts)."""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import contract, jsrules
from .contract import (
    ChatMessage,
    EnvironmentEpisode,
    EnvironmentStepResult,
    RewardComponent,
    RewardResult,
)
from .errors import EnvironmentContractError
from .shapes import (
    ShapeError,
    check_array,
    check_bool,
    check_int,
    check_json_object,
    check_messages,
    check_number,
    check_object,
    check_string,
)
from .transcript import is_sampled_action, sampled_message

COMPONENT_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")


@dataclass(frozen=True)
class Records:
    """The record classes handed to environment code: ours, or the real freesolo's."""

    TaskExample: type = contract.TaskExample
    EnvironmentEpisode: type = contract.EnvironmentEpisode
    EnvironmentTurn: type = contract.EnvironmentTurn

    def build(self, cls: type, **fields: Any) -> Any:
        # A foreign class may lack some of our fields (latency_ms...): pass only what it takes.
        if dataclasses.is_dataclass(cls):
            names = {f.name for f in dataclasses.fields(cls)}
            fields = {k: v for k, v in fields.items() if k in names}
        return cls(**fields)

    def example(self, fields: Mapping[str, Any]) -> Any:
        return self.build(self.TaskExample, **fields)

    def episode(self, fields: Mapping[str, Any]) -> Any:
        turns = tuple(self.build(self.EnvironmentTurn, **t) for t in fields["turns"])
        return self.build(
            self.EnvironmentEpisode,
            messages=tuple(fields["messages"]),
            response_text=fields["response_text"],
            turns=turns,
            metadata=fields["metadata"],
            latency_ms=fields.get("latency_ms"),
            total_tokens=fields.get("total_tokens"),
        )


OWN_RECORDS = Records()


def _get(value: Any, name: str, default: Any = None) -> Any:
    if isinstance(value, Mapping):
        return value.get(name, default)
    return getattr(value, name, default)


def _reject_sampled_marks(hook: str, messages: Sequence[ChatMessage]) -> None:
    """Only the loop may mark an action as sampled; an environment that does so would forge one."""
    for i, message in enumerate(messages):
        if "sampled" in message.get("metadata", {}):
            raise EnvironmentContractError(
                hook, f"messages[{i}].metadata.sampled is reserved for sampled actions"
            )


def with_prompt_text(messages: list[ChatMessage], prompt_text: str) -> list[ChatMessage]:
    """The run's prompt text becomes the system message when the opening has none or an empty
    one."""
    if jsrules.trim(prompt_text) == "":
        return messages
    for i, message in enumerate(messages):
        if message["role"] == "system":
            if jsrules.trim(message["content"]) != "":
                return messages
            return [*messages[:i], {**message, "content": prompt_text}, *messages[i + 1 :]]
    return [{"role": "system", "content": prompt_text}, *messages]


def open_episode(env: Any, example: Any, prompt_text: str) -> list[ChatMessage]:
    """start_episode (build_prompt_messages for a bare single-turn env), validated, with the
    prompt-text rule applied."""
    hook = "start_episode" if hasattr(env, "start_episode") else "build_prompt_messages"
    raw = getattr(env, hook)(example, prompt_text)
    try:
        messages = check_messages(raw, "messages", min_items=1)
    except ShapeError as error:
        raise EnvironmentContractError(hook, str(error)) from None
    _reject_sampled_marks(hook, messages)
    return with_prompt_text(messages, prompt_text)


def turn_budget(env: Any, example: Any) -> int:
    """max_episode_turns, validated: a positive integer."""
    budget = env.max_episode_turns(example) if hasattr(env, "max_episode_turns") else 1
    try:
        return check_int(budget, "", minimum=1)
    except ShapeError:
        raise EnvironmentContractError(
            "max_episode_turns", f"must return a positive integer, got {budget!r}"
        ) from None


def episode_tools(env: Any, example: Any) -> list[dict[str, Any]] | None:
    """tools, validated loosely: a list of OpenAI function definitions, or None for a text-only
    environment. (edgeroll checks each definition fully when the episode opens.)"""
    if not hasattr(env, "tools"):
        return None
    raw = env.tools(example)
    if raw is None or (isinstance(raw, (list, tuple)) and len(raw) == 0):
        return None
    try:
        tools = check_array(raw, "tools")
        for i, tool in enumerate(tools):
            definition = check_object(tool, f"tools[{i}]", ("type", "function"))
            if definition["type"] != "function":
                raise ShapeError(f"tools[{i}].type", 'expected "function"')
            function = check_object(
                definition["function"], f"tools[{i}].function", ("name",),
                ("description", "parameters", "strict"),
            )
            check_string(function["name"], f"tools[{i}].function.name", min_length=1)
    except ShapeError as error:
        raise EnvironmentContractError("tools", str(error)) from None
    return [dict(tool) for tool in tools]


def check_step_result(raw: Any) -> EnvironmentStepResult:
    """An EnvironmentStepResult (or a dict with its fields), normalised and checked."""
    try:
        if raw is None:
            raise ShapeError("", "returned None; return an EnvironmentStepResult")
        if isinstance(raw, Mapping):
            check_object(raw, "", (), ("done", "messages", "final_response_text", "metadata"))
        final = _get(raw, "final_response_text")
        result = EnvironmentStepResult(
            done=check_bool(_get(raw, "done", True), "done"),
            messages=tuple(check_messages(_get(raw, "messages", ()), "messages")),
            final_response_text=None
            if final is None
            else check_string(final, "final_response_text"),
            metadata=check_json_object(_get(raw, "metadata", {}), "metadata"),
        )
    except ShapeError as error:
        raise EnvironmentContractError("step_episode", str(error)) from None
    _reject_sampled_marks("step_episode", result.messages)
    return result


def step_environment(
    env: Any, example: Any, messages: Sequence[ChatMessage]
) -> EnvironmentStepResult:
    """step_episode for the sampled action that ends messages, validated. The environment gets
    its own list, so it cannot rewrite the recorded transcript."""
    if not messages or not is_sampled_action(messages[-1]):
        raise EnvironmentContractError(
            "step_episode", "the transcript must end with the sampled action being stepped"
        )
    if hasattr(env, "step_episode"):
        raw = env.step_episode(example, list(messages), messages[-1]["content"])
    else:  # a bare single-turn environment: its one reply ends the episode
        raw = EnvironmentStepResult(done=True, final_response_text=messages[-1]["content"])
    return check_step_result(raw)


def check_reward(hook: str, raw: Any, path: str = "") -> RewardResult:
    """A RewardResult (or a dict with its fields) with a finite score and threshold; path
    prefixes the fields in a problem (`results[2].score: ...`)."""
    field = (lambda name: f"{path}.{name}") if path else (lambda name: name)
    try:
        if raw is None:
            raise ShapeError(path, "returned None; return a RewardResult")
        if isinstance(raw, Mapping):
            check_object(raw, path, ("score",), ("threshold", "metadata", "components"))
        threshold = _get(raw, "threshold")
        score = check_number(_get(raw, "score"), field("score"))
        components = check_components(_get(raw, "components"), field("components"), score)
        return RewardResult(
            score=score,
            threshold=None if threshold is None else check_number(threshold, field("threshold")),
            metadata=check_json_object(_get(raw, "metadata", None) or {}, field("metadata")),
            components=components,
        )
    except ShapeError as error:
        raise EnvironmentContractError(hook, str(error)) from None


def check_components(
    raw: Any, path: str, score: float
) -> tuple[RewardComponent, ...] | None:
    """A rubric's components: distinct names, finite values and weights, and the score their
    weighted sum (as edgeroll checks it)."""
    if raw is None:
        return None
    if not isinstance(raw, (list, tuple)) or not 1 <= len(raw) <= 64:
        raise ShapeError(path, "expected a list of 1 to 64 components")
    components = []
    for i, item in enumerate(raw):
        at = f"{path}[{i}]"
        if isinstance(item, Mapping):
            check_object(item, at, ("name", "value", "weight"))
        name = _get(item, "name")
        if not isinstance(name, str) or not COMPONENT_NAME.fullmatch(name):
            raise ShapeError(f"{at}.name", "letters, digits, _ - . only, at most 64")
        components.append(
            RewardComponent(
                name=name,
                value=check_number(_get(item, "value"), f"{at}.value"),
                weight=check_number(_get(item, "weight"), f"{at}.weight"),
            )
        )
    if len({c.name for c in components}) != len(components):
        raise ShapeError(path, "component names must be distinct")
    total = sum(c.weight * c.value for c in components)
    scale = 1 + sum(abs(c.weight * c.value) for c in components)
    if abs(score - total) > 1e-9 * scale:
        raise ShapeError(path, f"the score {score} is not their weighted sum ({total})")
    return tuple(components)


def score_batch(env: Any, example: Any, episodes: Sequence[Any]) -> list[RewardResult]:
    """score_episodes over the whole batch, validated: one finite RewardResult per episode, in
    order. Raises when the environment does or breaks the contract; a caller that wants one bad
    transcript to fail only its own episode then grades the episodes one per call (edgeroll's
    SDK does: its scoreGroup falls back to scoreEpisode, one /score call each)."""
    episodes = list(episodes)
    if hasattr(env, "score_episodes"):
        raw = env.score_episodes(example, episodes)
    else:  # a bare single-turn environment: its one reply per episode
        raw = [env.score_response(example, episode.response_text) for episode in episodes]
    if not isinstance(raw, (list, tuple)) or len(raw) != len(episodes):
        got = f"{len(raw)} results" if isinstance(raw, (list, tuple)) else type(raw).__name__
        raise EnvironmentContractError(
            "score_episodes", f"returned {got} for {len(episodes)} episodes"
        )
    return [check_reward("score_episodes", r, f"results[{i}]") for i, r in enumerate(raw)]


def assemble_episode(
    messages: Sequence[ChatMessage],
    opening_count: int,
    response_text: str,
    steps: Sequence[dict[str, Any]],
    *,
    latency_ms: int | None = None,
    total_tokens: int | None = None,
    records: Records = OWN_RECORDS,
) -> Any:
    """The finished episode the scorer sees: turns are everything after the opening."""
    turns = [
        {
            "role": m["role"],
            "content": m["content"],
            "name": m.get("name"),
            "metadata": m.get("metadata", {}),
        }
        for m in messages[opening_count:]
    ]
    return records.episode(
        {
            "messages": list(messages),
            "response_text": response_text,
            "turns": turns,
            "metadata": {"steps": list(steps)},
            "latency_ms": latency_ms,
            "total_tokens": total_tokens,
        }
    )


Policy = Callable[[list[ChatMessage], int], str]


def run_episode(
    env: Any,
    example: Any,
    policy: Policy,
    *,
    prompt_text: str = "",
    max_turns: int | None = None,
) -> EnvironmentEpisode:
    """The reference loop: open, then sample / append / step until the environment says done or
    the turn budget runs out. policy(messages, turn_index) returns one action's text."""
    started = time.monotonic()
    messages = open_episode(env, example, prompt_text)
    opening_count = len(messages)
    budget = turn_budget(env, example)
    if max_turns is not None:
        budget = min(budget, max_turns)
    steps: list[dict[str, Any]] = []
    response_text = ""
    for index in range(budget):
        action = policy(list(messages), index)
        messages.append(sampled_message(action))
        result = step_environment(env, example, messages)
        response_text = action if result.final_response_text is None else result.final_response_text
        messages.extend(result.messages)
        steps.append(result.metadata)
        if result.done:
            break
    return assemble_episode(
        messages,
        opening_count,
        response_text,
        steps,
        latency_ms=max(0, round((time.monotonic() - started) * 1000)),
    )
