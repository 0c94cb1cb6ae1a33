"""The default SFT target: what example.output says the model should have written."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from . import jsrules
from .contract import ChatMessage, TaskExample
from .errors import SftError, UnparseableSftTargetError
from .shapes import ShapeError, check_messages


def default_sft_completion(example: TaskExample) -> list[ChatMessage]:
    """A scalar output becomes one assistant message; {messages: [...]} or a bare list is the
    target transcript itself."""
    output = example.output
    if output is None:
        raise SftError(f'example "{example.id}" has no output to use as an SFT target')
    if isinstance(output, bool):
        return [{"role": "assistant", "content": "true" if output else "false"}]
    if isinstance(output, (int, float)):
        return [{"role": "assistant", "content": jsrules.number_string(output)}]
    if isinstance(output, str):
        return [{"role": "assistant", "content": output}]
    if isinstance(output, (list, tuple)):
        return parse_target_messages(example, output)
    if isinstance(output, Mapping) and "messages" in output:
        return parse_target_messages(example, output["messages"])
    raise UnparseableSftTargetError(
        f'example "{example.id}": output is neither a scalar, a message list nor '
        "{messages: [...]}",
        _as_text(output),
    )


def parse_target_messages(example: TaskExample, target: Any) -> list[ChatMessage]:
    """Validates a target transcript, whether it came from the default or an override."""
    try:
        return check_messages(target, "", min_items=1)
    except ShapeError as error:
        raise UnparseableSftTargetError(
            f'example "{example.id}": target transcript is not a list of chat messages ({error})',
            target if isinstance(target, str) else _as_text(target),
        ) from None


def _as_text(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return str(value)
