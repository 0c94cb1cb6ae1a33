"""Rubrics: a score made of named components, each a function of the example and the episode
with a weight. The score is the weighted sum; a weight of 0 makes a component a metric, recorded
by edgeroll (D1's `reward_components`) and never rewarded. The same helper as the TypeScript
SDK's (src/sdk/rubric.ts): /score answers the components with the score."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .contract import RewardComponent, RewardResult

_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")


@dataclass(frozen=True)
class Component:
    """A rubric's part: `value(example, episode)` gives a finite number; `weight` its share."""

    name: str
    weight: float
    value: Callable[[Any, Any], float]


class Rubric:
    def __init__(self, components: Sequence[Component], threshold: float | None = None) -> None:
        if not components:
            raise ValueError("a rubric needs at least one component")
        names: set[str] = set()
        for c in components:
            if not _NAME.fullmatch(c.name):
                raise ValueError(f'rubric component "{c.name}": letters, digits, _ - . only')
            if c.name in names:
                raise ValueError(f'rubric component "{c.name}" is named twice')
            if not math.isfinite(c.weight):
                raise ValueError(f'rubric component "{c.name}": weight must be finite')
            names.add(c.name)
        self.components = tuple(components)
        self.threshold = threshold

    def score(self, example: Any, episode: Any) -> RewardResult:
        """Every component's value, and their weighted sum as the score."""
        parts = []
        for c in self.components:
            value = c.value(example, episode)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f'rubric component "{c.name}" gave {value!r}, not a number')
            if not math.isfinite(value):
                raise ValueError(f'rubric component "{c.name}" gave {value}, not finite')
            parts.append(RewardComponent(name=c.name, value=value, weight=c.weight))
        total = sum(p.weight * p.value for p in parts)
        return RewardResult(score=total, threshold=self.threshold, components=tuple(parts))
