"""freesolo.environments / freesolo.datasets for machines without the Freesolo SDK, so an
environment written against Flash's imports runs here unchanged."""

from __future__ import annotations

import importlib
import sys
import types

from . import contract, datasets, environment, loader

_NAMES = ("freesolo", "freesolo.environments", "freesolo.datasets")


def real_freesolo_available() -> bool:
    """True when an importable freesolo package provides both modules the contract uses."""
    try:
        envs = importlib.import_module("freesolo.environments")
        data = importlib.import_module("freesolo.datasets")
    except ImportError:
        for name in _NAMES:  # drop a half-import (e.g. a repo's own freesolo/ folder)
            sys.modules.pop(name, None)
        return False
    if getattr(envs, "__edgeroll_shim__", False):
        return False
    return hasattr(envs, "EnvironmentMultiTurn") and hasattr(data, "TaskExample")


def install_freesolo_shim(*, force: bool = False) -> bool:
    """Registers the shim modules unless a real freesolo is importable (or force is set).
    Returns True when the shim is what `import freesolo...` now gives."""
    current = sys.modules.get("freesolo.environments")
    if current is not None and getattr(current, "__edgeroll_shim__", False):
        return True
    if not force and real_freesolo_available():
        return False
    package = types.ModuleType("freesolo", "edgeroll_env's stand-in for the Freesolo SDK.")
    package.__path__ = []  # a package, so `import freesolo.environments` resolves
    envs = types.ModuleType("freesolo.environments", "Environment types (edgeroll_env shim).")
    data = types.ModuleType("freesolo.datasets", "Task examples and datasets (edgeroll_env shim).")
    for module in (package, envs, data):
        module.__edgeroll_shim__ = True
    for name in (
        "ChatMessage",
        "RewardResult",
        "EnvironmentStepResult",
        "EnvironmentTurn",
        "EnvironmentEpisode",
        "TaskExample",
    ):
        setattr(envs, name, getattr(contract, name))
    envs.EnvironmentMultiTurn = environment.EnvironmentMultiTurn
    envs.EnvironmentSingleTurn = environment.EnvironmentSingleTurn
    envs.load_environment = loader.load_environment
    for name in ("TaskExample",):
        setattr(data, name, getattr(contract, name))
    for name in ("Dataset", "DatasetError", "load_dataset", "load_task_examples"):
        setattr(data, name, getattr(datasets, name))
    package.environments = envs
    package.datasets = data
    sys.modules.update(
        {"freesolo": package, "freesolo.environments": envs, "freesolo.datasets": data}
    )
    return True
