"""Loads an environment from `path/to/environment.py[:factory]`, as Flash's load_environment."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from typing import Any

DEFAULT_FACTORY = "load_environment"
_FACTORY = re.compile(r"^(?P<path>.+\.py):(?P<factory>[A-Za-z_][A-Za-z0-9_]*)$")


class EnvironmentLoadError(Exception):
    """The file, the factory or what it returned is unusable; the message says which."""


def split_spec(spec: str) -> tuple[Path, str]:
    """`env.py:make_env` -> (env.py, make_env); a bare path uses load_environment."""
    match = _FACTORY.match(spec)
    if match:
        return Path(match["path"]), match["factory"]
    return Path(spec), DEFAULT_FACTORY


def parse_args(pairs: list[str]) -> dict[str, Any]:
    """`key=value` pairs; a value that parses as JSON is used as JSON, else as a string."""
    kwargs: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.isidentifier():
            raise EnvironmentLoadError(
                f'--arg expects key=value with a Python name as key, got "{pair}"'
            )
        try:
            kwargs[key] = json.loads(value)
        except json.JSONDecodeError:
            kwargs[key] = value
    return kwargs


def import_file(path: Path) -> Any:
    """Imports a Python file as a module; its folder goes on sys.path for sibling imports."""
    path = path.resolve()
    if not path.is_file():
        raise EnvironmentLoadError(f"no such file: {path}")
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    name = f"edgeroll_env_loaded_{re.sub(r'[^0-9A-Za-z_]', '_', path.stem)}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise EnvironmentLoadError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # before exec, so dataclasses and pickling find the module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def load_environment(spec: str, **kwargs: Any) -> Any:
    """Imports the file, calls its factory with kwargs, and checks the result has the hooks."""
    path, factory_name = split_spec(spec)
    module = import_file(path)
    factory = getattr(module, factory_name, None)
    if not callable(factory):
        raise EnvironmentLoadError(f"{path} has no callable {factory_name}()")
    env = factory(**kwargs)
    single = hasattr(env, "build_prompt_messages") and hasattr(env, "score_response")
    multi = all(
        hasattr(env, hook)
        for hook in ("start_episode", "max_episode_turns", "step_episode", "score_episode")
    )
    if not (single or multi):
        raise EnvironmentLoadError(
            f"{factory_name}() returned {type(env).__name__}, which is neither an "
            "EnvironmentMultiTurn nor an EnvironmentSingleTurn"
        )
    return env
