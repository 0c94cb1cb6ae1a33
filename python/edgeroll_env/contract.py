"""The environment contract's records, with the Freesolo Flash SDK's names and fields."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# A chat message in OpenAI's wire shape: role, content, and optionally name, tool_calls,
# tool_call_id and edgeroll's metadata (sampled actions carry metadata.sampled = True).
ChatMessage = dict[str, Any]

ROLES = ("system", "user", "assistant", "tool")


@dataclass(frozen=True)
class TaskExample:
    """One dataset row: what the model is asked, the gold answer if any, and task data."""

    id: str
    input: str
    output: Any = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RewardComponent:
    """One part of a rubric's grade (rubric.py): a weight of 0 is a metric, never rewarded."""

    name: str
    value: float
    weight: float


@dataclass(frozen=True)
class RewardResult:
    """A grade. Success is `score >= threshold`; without a threshold success is unknown. With
    `components` (a rubric's), the score is their weighted sum."""

    score: float
    threshold: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    components: tuple[RewardComponent, ...] | None = None

    @property
    def success(self) -> bool | None:
        return None if self.threshold is None else self.score >= self.threshold


@dataclass(frozen=True)
class EnvironmentStepResult:
    """What step_episode returns: only the environment's new messages, never the action again."""

    done: bool = True
    messages: tuple[ChatMessage, ...] = ()
    final_response_text: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class EnvironmentTurn:
    """A message of the episode after the opening prompt: a sampled action or an env reply."""

    role: str
    content: str
    name: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class EnvironmentEpisode:
    """A finished episode as the scorer sees it."""

    messages: tuple[ChatMessage, ...]
    response_text: str
    turns: tuple[EnvironmentTurn, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)
    latency_ms: int | None = None
    total_tokens: int | None = None
