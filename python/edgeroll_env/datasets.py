"""Task records from files: the freesolo.datasets API as the shim provides it.

Rows use `input`, optional `output`, optional `metadata` and optional `id` (a row without one
gets `line-<n>`, stable as long as the file is). Aliases such as prompt or answer are refused,
as Flash refuses them, with the line and the field named.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .contract import TaskExample
from .shapes import ShapeError, check_example


class DatasetError(ValueError):
    """A dataset file or record list has unusable rows; the message lists each problem."""


@dataclass(frozen=True)
class Dataset:
    """The examples of one dataset file, in file order."""

    examples: tuple[TaskExample, ...]
    source: str = "records"

    @property
    def records(self) -> tuple[TaskExample, ...]:  # the older freesolo spelling
        return self.examples

    def __len__(self) -> int:
        return len(self.examples)

    def __iter__(self) -> Iterator[TaskExample]:
        return iter(self.examples)

    def __getitem__(self, index: int) -> TaskExample:
        return self.examples[index]


def _rows(source: str | os.PathLike[str] | Iterable[Any]) -> tuple[str, list[tuple[int, Any]]]:
    """(label, [(line or row number, parsed row)]) for a file or an iterable of records."""
    if not isinstance(source, (str, os.PathLike)):
        return "records", [(i + 1, row) for i, row in enumerate(source)]
    path = Path(source)
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        rows = json.loads(text)
        if isinstance(rows, Mapping) and "examples" in rows:
            rows = rows["examples"]
        if not isinstance(rows, list):
            raise DatasetError(f"{path}: expected a JSON array of records")
        return str(path), [(i + 1, row) for i, row in enumerate(rows)]
    if path.suffix not in (".jsonl", ".ndjson"):
        raise DatasetError(f"{path}: the shim reads .jsonl and .json files")
    rows: list[tuple[int, Any]] = []
    problems = []
    for i, line in enumerate(text.split("\n")):
        if line.strip() == "":
            continue
        try:
            rows.append((i + 1, json.loads(line)))
        except json.JSONDecodeError as error:
            problems.append(f"{path}:{i + 1}: not valid JSON ({error.msg})")
    if problems:
        raise DatasetError("; ".join(problems))
    return str(path), rows


def load_task_examples(source: str | os.PathLike[str] | Iterable[Any]) -> list[TaskExample]:
    """TaskExamples from a .jsonl / .json file or an iterable of records (dicts or TaskExamples)."""
    label, rows = _rows(source)
    examples: list[TaskExample] = []
    problems: list[str] = []
    seen: set[str] = set()
    for number, row in rows:
        if isinstance(row, TaskExample):
            example = row
        else:
            if isinstance(row, Mapping) and "id" not in row:
                row = {"id": f"line-{number}", **row}
            try:
                example = TaskExample(**check_example(row, ""))
            except ShapeError as error:
                problems.append(f"{label}:{number}: {error}")
                continue
        if example.id in seen:
            problems.append(f'{label}:{number}: duplicate id "{example.id}"')
            continue
        seen.add(example.id)
        examples.append(example)
    if problems:
        raise DatasetError("; ".join(problems))
    return examples


def load_dataset(source: str | os.PathLike[str] | Iterable[Any]) -> Dataset:
    """A Dataset (its .examples) from a file or an iterable of records."""
    label = str(source) if isinstance(source, (str, os.PathLike)) else "records"
    return Dataset(examples=tuple(load_task_examples(source)), source=label)
