"""Shape checks for everything that crosses the wire, each problem naming its field.

The same rules as edgeroll's zod schemas (src/sdk/types.ts): strict objects, the four roles,
tool_calls only on assistant messages, tool_call_id only on tool messages, finite numbers.
A failed check raises ShapeError; the caller decides whose fault it is (a 400 for a request,
an env_error for what an environment returned).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from .contract import ROLES


class ShapeError(ValueError):
    """`path: problem`, e.g. `messages[2].role: expected one of system, user, assistant, tool`."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}" if path else problem)
        self.path = path
        self.problem = problem


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, (list, tuple)):
        return "array"
    return type(value).__name__


def expected(path: str, what: str, value: Any) -> ShapeError:
    return ShapeError(path, f"expected {what}, got {type_name(value)}")


def check_object(
    value: Any, path: str, required: Sequence[str], optional: Sequence[str] = ()
) -> dict[str, Any]:
    """A JSON object with exactly these keys (required ones present, no others)."""
    if not isinstance(value, Mapping):
        raise expected(path, "object", value)
    known = [*required, *optional]
    for key in value:
        if key not in known:
            raise ShapeError(
                path, f'unknown field "{key}" (expected {", ".join(known) or "no fields"})'
            )
    for key in required:
        if key not in value:
            raise ShapeError(_join(path, key), "required")
    return dict(value)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def check_string(
    value: Any, path: str, *, min_length: int = 0, max_length: int | None = None
) -> str:
    if not isinstance(value, str):
        raise expected(path, "string", value)
    if len(value) < min_length:
        raise ShapeError(
            path, "must not be empty" if min_length == 1 else f"shorter than {min_length}"
        )
    if max_length is not None and len(value) > max_length:
        raise ShapeError(path, f"longer than {max_length} characters")
    return value


def check_number(value: Any, path: str) -> float | int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise expected(path, "number", value)
    if isinstance(value, float) and not math.isfinite(value):
        raise ShapeError(path, f"expected a finite number, got {value}")
    return value


def check_int(value: Any, path: str, *, minimum: int | None = None) -> int:
    """An integer; 3.0 counts (JSON does not tell them apart), True does not."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise expected(path, "integer", value)
    if isinstance(value, float):
        if not value.is_integer():
            raise ShapeError(path, f"expected integer, got {value}")
        value = int(value)
    if minimum is not None and value < minimum:
        raise ShapeError(path, f"must be >= {minimum}, got {value}")
    return value


def check_bool(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise expected(path, "boolean", value)
    return value


def check_json_object(value: Any, path: str) -> dict[str, Any]:
    """A JSON object of JSON values (finite numbers, string keys), returned as a plain dict."""
    if not isinstance(value, Mapping):
        raise expected(path, "object", value)
    for key in value:
        if not isinstance(key, str):
            raise ShapeError(path, f"keys must be strings, got {type_name(key)}")
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise ShapeError(path, f"not JSON-serialisable ({error})") from None
    return dict(value)


def check_array(value: Any, path: str, *, min_items: int = 0) -> list[Any]:
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise expected(path, "array", value)
    if len(value) < min_items:
        raise ShapeError(path, f"expected at least {min_items} item{'s' if min_items != 1 else ''}")
    return list(value)


def check_example(value: Any, path: str = "example") -> dict[str, Any]:
    """A task example: {id, input, output?, metadata?}; returns the fields with defaults."""
    raw = check_object(value, path, ("id", "input"), ("output", "metadata"))
    fields = {
        "id": check_string(raw["id"], _join(path, "id"), min_length=1, max_length=256),
        "input": check_string(raw["input"], _join(path, "input")),
        "output": raw.get("output"),
        "metadata": {},
    }
    if "metadata" in raw:
        fields["metadata"] = check_json_object(raw["metadata"], _join(path, "metadata"))
    return fields


def check_tool_call(value: Any, path: str) -> dict[str, Any]:
    raw = check_object(value, path, ("id", "type", "function"))
    check_string(raw["id"], _join(path, "id"))
    if raw["type"] != "function":
        raise ShapeError(_join(path, "type"), f'expected "function", got {json.dumps(raw["type"])}')
    function = check_object(raw["function"], _join(path, "function"), ("name", "arguments"))
    check_string(function["name"], _join(path, "function.name"), min_length=1)
    check_string(function["arguments"], _join(path, "function.arguments"))
    return {"id": raw["id"], "type": "function", "function": function}


def check_message(value: Any, path: str) -> dict[str, Any]:
    """One chat message, returned as a plain dict (lists, not tuples)."""
    raw = check_object(
        value, path, ("role", "content"), ("name", "tool_calls", "tool_call_id", "metadata")
    )
    role = raw["role"]
    if role not in ROLES:
        raise ShapeError(
            _join(path, "role"),
            f"expected one of {', '.join(ROLES)}, got {json.dumps(role, default=str)}",
        )
    message: dict[str, Any] = {
        "role": role,
        "content": check_string(raw["content"], _join(path, "content")),
    }
    if "name" in raw:
        message["name"] = check_string(raw["name"], _join(path, "name"), min_length=1)
    if "tool_calls" in raw:
        if role != "assistant":
            raise ShapeError(
                _join(path, "tool_calls"), "only assistant messages may carry tool_calls"
            )
        calls = check_array(raw["tool_calls"], _join(path, "tool_calls"))
        message["tool_calls"] = [
            check_tool_call(call, f"{path}.tool_calls[{i}]") for i, call in enumerate(calls)
        ]
    if "tool_call_id" in raw:
        if role != "tool":
            raise ShapeError(
                _join(path, "tool_call_id"), "only tool messages may carry tool_call_id"
            )
        message["tool_call_id"] = check_string(
            raw["tool_call_id"], _join(path, "tool_call_id"), min_length=1
        )
    if "metadata" in raw:
        message["metadata"] = check_json_object(raw["metadata"], _join(path, "metadata"))
    return message


def check_messages(value: Any, path: str, *, min_items: int = 0) -> list[dict[str, Any]]:
    items = check_array(value, path, min_items=min_items)
    return [check_message(item, f"{path}[{i}]") for i, item in enumerate(items)]


def check_turn(value: Any, path: str) -> dict[str, Any]:
    """An episode turn: {role, content, name?: string | null, metadata?}."""
    raw = check_object(value, path, ("role", "content"), ("name", "metadata"))
    if raw["role"] not in ROLES:
        raise ShapeError(_join(path, "role"), f"expected one of {', '.join(ROLES)}")
    name = raw.get("name")
    if name is not None:
        check_string(name, _join(path, "name"))
    metadata = check_json_object(raw.get("metadata", {}), _join(path, "metadata"))
    return {
        "role": raw["role"],
        "content": check_string(raw["content"], _join(path, "content")),
        "name": name,
        "metadata": metadata,
    }


def check_episode(value: Any, path: str) -> dict[str, Any]:
    """A finished episode as /score carries it: {messages, response_text, turns, metadata}."""
    raw = check_object(value, path, ("messages", "response_text", "turns", "metadata"))
    turns = check_array(raw["turns"], _join(path, "turns"))
    return {
        "messages": check_messages(raw["messages"], _join(path, "messages")),
        "response_text": check_string(raw["response_text"], _join(path, "response_text")),
        "turns": [check_turn(turn, f"{path}.turns[{i}]") for i, turn in enumerate(turns)],
        "metadata": check_json_object(raw["metadata"], _join(path, "metadata")),
    }
