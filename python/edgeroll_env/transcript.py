"""Marks sampled actions so replay and per-turn credit never confuse them with environment text."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .contract import ChatMessage, EnvironmentEpisode, EnvironmentTurn


def sampled_message(content: str) -> ChatMessage:
    """The assistant message recorded for a sampled action: metadata.sampled = True."""
    return {"role": "assistant", "content": content, "metadata": {"sampled": True}}


def is_sampled_action(message: ChatMessage | EnvironmentTurn | Any) -> bool:
    """An assistant message whose metadata.sampled is exactly True (a dict or a turn)."""
    if isinstance(message, Mapping):
        role, metadata = message.get("role"), message.get("metadata")
    else:
        role, metadata = getattr(message, "role", None), getattr(message, "metadata", None)
    return role == "assistant" and isinstance(metadata, Mapping) and metadata.get("sampled") is True


def sampled_actions(messages: Iterable[ChatMessage]) -> list[ChatMessage]:
    """The sampled actions of a transcript, in order."""
    return [m for m in messages if is_sampled_action(m)]


def sampled_turns(episode: EnvironmentEpisode) -> list[EnvironmentTurn]:
    """The episode's sampled assistant turns, the ones per_turn_rewards grade, in order."""
    return [t for t in episode.turns if is_sampled_action(t)]
