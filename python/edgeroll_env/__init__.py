"""edgeroll_env: write an environment in Python against the Freesolo Flash SDK's contract and
serve it to edgeroll over HTTP (docs/remote-env-protocol.md). Standard library only."""

from .contract import (
    ROLES,
    ChatMessage,
    EnvironmentEpisode,
    EnvironmentStepResult,
    EnvironmentTurn,
    RewardComponent,
    RewardResult,
    TaskExample,
)
from .datasets import Dataset, DatasetError, load_dataset, load_task_examples
from .environment import EnvironmentMultiTurn, EnvironmentSingleTurn, environment_kind
from .episode import (
    assemble_episode,
    open_episode,
    run_episode,
    score_batch,
    step_environment,
    turn_budget,
    with_prompt_text,
)
from .errors import (
    EnvironmentContractError,
    ExampleRejected,
    ReplayInvariantError,
    SftError,
    UnparseableSftTargetError,
)
from .rubric import Component, Rubric
from .replay import ReplayContext, current_action, replay_history, replay_step
from .sft import default_sft_completion, parse_target_messages
from .shim import install_freesolo_shim
from .transcript import is_sampled_action, sampled_actions, sampled_message, sampled_turns

__version__ = "0.1.0"

__all__ = [
    "ROLES",
    "ChatMessage",
    "Dataset",
    "DatasetError",
    "EnvironmentContractError",
    "EnvironmentEpisode",
    "EnvironmentMultiTurn",
    "EnvironmentSingleTurn",
    "EnvironmentStepResult",
    "EnvironmentTurn",
    "ExampleRejected",
    "ReplayContext",
    "ReplayInvariantError",
    "Component",
    "RewardComponent",
    "RewardResult",
    "Rubric",
    "SftError",
    "TaskExample",
    "UnparseableSftTargetError",
    "assemble_episode",
    "current_action",
    "default_sft_completion",
    "environment_kind",
    "install_freesolo_shim",
    "is_sampled_action",
    "load_dataset",
    "load_task_examples",
    "open_episode",
    "parse_target_messages",
    "replay_history",
    "replay_step",
    "run_episode",
    "sampled_actions",
    "sampled_message",
    "sampled_turns",
    "score_batch",
    "step_environment",
    "turn_budget",
    "with_prompt_text",
]
