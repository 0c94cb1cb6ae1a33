"""Replay for stateful environments: the transcript is the source of truth, so state is rebuilt
from messages[:-1] and the current action is applied exactly once."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from .contract import ChatMessage, TaskExample
from .errors import ReplayInvariantError
from .transcript import is_sampled_action

S = TypeVar("S")


@dataclass(frozen=True)
class ReplayContext:
    example: TaskExample
    # 0-based index of the action among the sampled actions.
    turn_index: int
    # True only for the action being stepped: perform external effects only then, and make
    # them idempotent on (example.id, turn_index) so a retried step does not repeat them.
    is_current: bool


Reducer = Callable[[S, ChatMessage, ReplayContext], S]


def current_action(messages: Sequence[ChatMessage], assistant_response: str) -> ChatMessage:
    """Invariant 1: messages[-1] is the sampled action assistant_response."""
    if not messages or not is_sampled_action(messages[-1]):
        raise ReplayInvariantError("messages[-1] must be the sampled action being stepped")
    if messages[-1]["content"] != assistant_response:
        raise ReplayInvariantError("messages[-1] differs from the assistant response being stepped")
    return messages[-1]


def replay_history(
    example: TaskExample, messages: Sequence[ChatMessage], initial: S, apply: Reducer[S]
) -> S:
    """Folds every sampled action of a finished transcript; all of them are historical."""
    state = initial
    index = 0
    for message in messages:
        if is_sampled_action(message):
            state = apply(state, message, ReplayContext(example, index, False))
            index += 1
    return state


@dataclass(frozen=True)
class ReplayedStep(Generic[S]):
    before: S  # state after the earlier actions
    after: S  # state after the current action, applied once
    turn_index: int


def replay_step(
    example: TaskExample,
    messages: Sequence[ChatMessage],
    assistant_response: str,
    initial: S,
    apply: Reducer[S],
) -> ReplayedStep[S]:
    """Rebuilds state from messages[:-1], then applies the current action once."""
    action = current_action(messages, assistant_response)
    history = messages[:-1]
    before = replay_history(example, history, initial, apply)
    index = sum(1 for m in history if is_sampled_action(m))
    after = apply(before, action, ReplayContext(example, index, True))
    return ReplayedStep(before, after, index)
