"""guess-number, the multi-turn starter: find a secret integer in [1, 100] from higher/lower hints.

The Python twin of edgeroll's src/environments/guess-number.ts (same messages, same parsing,
same per-turn rewards and scores for the same transcripts), written against the Freesolo SDK's
imports so it runs under Flash as it is, and under edgeroll through the shim:

    PYTHONPATH=python python3 -m edgeroll_env serve \
        python/edgeroll_env/starters/guess_number.py --port 8765
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from freesolo.datasets import TaskExample, load_dataset
from freesolo.environments import (
    EnvironmentEpisode,
    EnvironmentMultiTurn,
    EnvironmentStepResult,
    RewardResult,
)

try:  # edgeroll's refusal of an example it cannot play: /start answers 422 naming the field
    from edgeroll_env import ExampleRejected
except ImportError:  # under Flash alone, a ValueError with the same message

    class ExampleRejected(ValueError):  # type: ignore[no-redef]
        def __init__(self, problems: dict[str, str]) -> None:
            super().__init__("; ".join(f"{path}: {why}" for path, why in problems.items()))

LOWEST = 1
HIGHEST = 100
DEFAULT_TURNS = 7
DEFAULT_DATASET = Path(__file__).resolve().parents[3] / "datasets" / "guess-number.jsonl"

# JavaScript's \s and \d, spelled out: Python's \s and \d match other characters (\x1c, Arabic
# digits...), and the TypeScript environment is the reference.
_WS = "[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]"
GUESS = re.compile(f"<guess>{_WS}*(-?[0-9]+){_WS}*</guess>")


def parse_guess(action: str) -> int | None:
    """The last <guess>N</guess> of an action when N is in range; None for anything else."""
    matches = GUESS.findall(action)
    if not matches:
        return None
    guess = int(matches[-1])
    return guess if LOWEST <= guess <= HIGHEST else None


def hint_for(guess: int, secret: int) -> str:
    if guess == secret:
        return "correct"
    return "higher" if guess < secret else "lower"


def grade_guesses(guesses: list[int | None], secret: int) -> list[float]:
    """Per-turn rewards: 1.0 for the solving guess, 0.2 for a guess consistent with every earlier
    hint (strictly inside the interval they leave open), 0.0 otherwise or for no valid guess."""
    above, below = LOWEST - 1, HIGHEST + 1
    rewards: list[float] = []
    for guess in guesses:
        if guess is None:
            rewards.append(0)
            continue
        rewards.append(1 if guess == secret else 0.2 if above < guess < below else 0)
        if guess < secret:
            above = max(above, guess)
        if guess > secret:
            below = min(below, guess)
    return rewards


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 'es'}"


def is_sampled(message: Any) -> bool:
    """A sampled action: an assistant message (or turn) marked metadata.sampled = True."""
    if isinstance(message, dict):
        role, metadata = message.get("role"), message.get("metadata")
    else:
        role, metadata = message.role, message.metadata
    return role == "assistant" and isinstance(metadata, dict) and metadata.get("sampled") is True


def _whole(value: Any, field: str, low: int, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        raise ExampleRejected({field: f"expected an integer, got {value!r}"})
    if value < low or (high is not None and value > high):
        bound = f"from {low} to {high}" if high is not None else f">= {low}"
        raise ExampleRejected({field: f"must be {bound}, got {value!r}"})
    return int(value)


def task_of(example: TaskExample) -> tuple[int, int]:
    """(secret, max_turns) from the example's metadata; an example without them is refused,
    naming the field (at /start, a 422 example_rejected: edgeroll stores nothing)."""
    metadata = example.metadata or {}
    if "secret" not in metadata:
        raise ExampleRejected({"metadata.secret": "required"})
    secret = _whole(metadata["secret"], "metadata.secret", LOWEST, HIGHEST)
    if "max_turns" not in metadata:
        return secret, DEFAULT_TURNS
    return secret, _whole(metadata["max_turns"], "metadata.max_turns", 1)


class GuessNumber(EnvironmentMultiTurn):
    name = "guess-number"
    version = "1"

    def __init__(self, *, split: str = "train", dataset: str | Path | None = None) -> None:
        self.split = split
        self.dataset = list(load_dataset(str(dataset or DEFAULT_DATASET)).examples)

    def max_episode_turns(self, example: TaskExample) -> int:
        return task_of(example)[1]

    def start_episode(self, example: TaskExample, prompt_text: str) -> list[dict[str, Any]]:
        budget = plural(self.max_episode_turns(example), "guess")
        rules = (
            "Reply with one guess per turn as <guess>N</guess>. After each guess you learn whether "
            f"the secret is higher or lower. You have {budget}."
        )
        return [{"role": "user", "content": f"{example.input}\n\n{rules}"}]

    def step_episode(
        self, example: TaskExample, messages: list[dict[str, Any]], assistant_response: str
    ) -> EnvironmentStepResult:
        secret = task_of(example)[0]
        left = self.max_episode_turns(example) - sum(1 for m in messages if is_sampled(m))
        guess = parse_guess(assistant_response)

        def reply(content: str, done: bool = False) -> EnvironmentStepResult:
            return EnvironmentStepResult(
                done=done,
                messages=({"role": "user", "content": content},),
                metadata={"guess": guess},
            )

        if guess is None:
            return reply(
                f"Reply with your guess as <guess>N</guess>, N a whole number from {LOWEST} to "
                f"{HIGHEST}. {plural(left, 'guess')} left."
            )
        hint = hint_for(guess, secret)
        if hint == "correct":
            return reply(f"{guess} is correct!", True)
        direction = (
            "too low: the secret is higher" if hint == "higher" else "too high: the secret is lower"
        )
        return reply(f"{guess} is {direction}. {plural(left, 'guess')} left.")

    def score_episode(self, example: TaskExample, episode: EnvironmentEpisode) -> RewardResult:
        guesses = [parse_guess(turn.content) for turn in episode.turns if is_sampled(turn)]
        per_turn = grade_guesses(guesses, task_of(example)[0])
        solved_at = next((i for i, reward in enumerate(per_turn) if reward == 1), None)
        return RewardResult(
            score=0 if solved_at is None else 1,
            threshold=1,
            metadata={"per_turn_rewards": per_turn, "solved_at_turn": solved_at},
        )

    def sft_completion(self, example: TaskExample) -> list[dict[str, Any]]:
        """The gold transcript: a binary search, with the replies this environment gives."""
        secret = task_of(example)[0]
        low, high = LOWEST, HIGHEST
        messages = self.start_episode(example, "")
        opening = len(messages)
        for _ in range(self.max_episode_turns(example)):
            guess = (low + high) // 2
            if guess < secret:
                low = guess + 1
            if guess > secret:
                high = guess - 1
            action = f"<guess>{guess}</guess>"
            messages.append({"role": "assistant", "content": action, "metadata": {"sampled": True}})
            result = self.step_episode(example, list(messages), action)
            messages.extend(result.messages)
            if result.done:
                break
        return [{k: v for k, v in m.items() if k != "metadata"} for m in messages[opening:]]


def load_environment(split: str = "train", **kwargs: Any) -> GuessNumber:
    return GuessNumber(split=split, dataset=kwargs.get("dataset"))
