"""Errors the SDK raises; each names the hook or field at fault, so a failure explains itself."""

from __future__ import annotations

from collections.abc import Mapping


class EnvironmentContractError(Exception):
    """An environment hook returned something that breaks the contract (bad messages, NaN...)."""

    def __init__(self, hook: str, detail: str) -> None:
        super().__init__(f"{hook}: {detail}")
        self.hook = hook
        self.detail = detail


class ReplayInvariantError(Exception):
    """A transcript handed to a replaying environment does not end with the action stepped."""


class SftError(Exception):
    """A supervised target cannot be built (no output, reserved tokens)."""


class UnparseableSftTargetError(SftError):
    """The target exists but is not a transcript; SFT falls back to completion-only."""

    def __init__(self, reason: str, completion_text: str) -> None:
        super().__init__(reason)
        self.completion_text = completion_text


class ExampleRejected(ValueError):
    """The environment cannot play this example: raise it from start_episode, max_episode_turns
    or tools, naming each field at fault by its dotted path in the example, and /start answers
    422 example_rejected with those fields (edgeroll refuses the group, storing nothing):

        raise ExampleRejected({"metadata.secret": "required"})

    A ValueError, so code written for Flash that catches those still does; raised from any
    other hook it is that hook's env_error like any exception."""

    def __init__(self, problems: Mapping[str, str]) -> None:
        self.problems = dict(problems)
        fields = self.problems.items()
        super().__init__("; ".join(f"{path}: {why}" if path else why for path, why in fields))


class BadRequest(Exception):
    """A request broke the protocol: a missing field, a wrong type, a transcript out of order."""


def error_message(error: BaseException) -> str:
    """One line for any exception: `ValueError: metadata.secret: expected integer`."""
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


class EnvironmentHookError(Exception):
    """An environment hook raised; the message names the hook, the cause keeps the traceback."""

    def __init__(self, hook: str, error: BaseException) -> None:
        super().__init__(f"{hook} raised {error_message(error)}")
        self.hook = hook
        self.error = error
