"""The environment contract: the hooks the episode loop drives, for multi-turn and single-turn
tasks. Keep durable episode state in the transcript, never on self: many episodes of one
example run at once, each turn possibly in another process."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .contract import (
    ChatMessage,
    EnvironmentEpisode,
    EnvironmentStepResult,
    RewardResult,
    TaskExample,
)
from .sft import default_sft_completion


class EnvironmentMultiTurn:
    """A task that takes more than one response. Implement start_episode, max_episode_turns,
    step_episode and score_episode; everything else has a default."""

    # How many score_episode calls the default score_episodes runs at once.
    max_score_concurrency: int = 8

    def start_episode(self, example: TaskExample, prompt_text: str) -> list[ChatMessage]:
        """The opening messages, e.g. a system prompt and the first user turn."""
        raise NotImplementedError(f"{type(self).__name__}.start_episode")

    def max_episode_turns(self, example: TaskExample) -> int:
        """The most assistant actions sampled for this example before the episode is ended."""
        raise NotImplementedError(f"{type(self).__name__}.max_episode_turns")

    def step_episode(
        self, example: TaskExample, messages: list[ChatMessage], assistant_response: str
    ) -> EnvironmentStepResult:
        """Reacts to one action. messages already ends with that action; return only the new
        environment messages, and done=True to end the episode."""
        raise NotImplementedError(f"{type(self).__name__}.step_episode")

    def score_episode(self, example: TaskExample, episode: EnvironmentEpisode) -> RewardResult:
        """Grades one finished transcript."""
        raise NotImplementedError(f"{type(self).__name__}.score_episode")

    def score_episodes(
        self, example: TaskExample, episodes: list[EnvironmentEpisode]
    ) -> list[RewardResult]:
        """Grades a group: score_episode for each, max_score_concurrency at once (threads, so
        a scorer that waits on I/O overlaps; a CPU-bound one runs as fast as sequentially)."""
        episodes = list(episodes)
        workers = max(1, min(int(self.max_score_concurrency), len(episodes)))
        if workers == 1:
            return [self.score_episode(example, episode) for episode in episodes]
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="score") as pool:
            return list(pool.map(lambda episode: self.score_episode(example, episode), episodes))

    def sft_completion(self, example: TaskExample) -> list[ChatMessage]:
        """The supervised target for SFT; by default built from example.output."""
        return default_sft_completion(example)

    def tools(self, example: TaskExample) -> list[dict[str, Any]] | None:
        """Native tool calling: the OpenAI function tools ({"type": "function", "function":
        {"name", "description", "parameters"}}) every generation of the episode offers. The
        host turns the model's calls into tool_calls; step_episode answers each with a
        {"role": "tool", "tool_call_id": ...} message, in order. None (the default) means a
        text-only environment. Native tool-calling environments are GRPO-only."""
        return None


class EnvironmentSingleTurn(EnvironmentMultiTurn):
    """A one-response task, run as a one-turn episode through the same machinery."""

    def build_prompt_messages(self, example: TaskExample, prompt_text: str) -> list[ChatMessage]:
        """The prompt for one example."""
        raise NotImplementedError(f"{type(self).__name__}.build_prompt_messages")

    def score_response(self, example: TaskExample, response_text: str) -> RewardResult:
        """Grades the model's one reply."""
        raise NotImplementedError(f"{type(self).__name__}.score_response")

    def start_episode(self, example: TaskExample, prompt_text: str) -> list[ChatMessage]:
        return self.build_prompt_messages(example, prompt_text)

    def max_episode_turns(self, example: TaskExample) -> int:
        return 1

    def step_episode(
        self, example: TaskExample, messages: list[ChatMessage], assistant_response: str
    ) -> EnvironmentStepResult:
        return EnvironmentStepResult(done=True, final_response_text=assistant_response)

    def score_episode(self, example: TaskExample, episode: EnvironmentEpisode) -> RewardResult:
        return self.score_response(example, episode.response_text)


def environment_kind(env: Any) -> str:
    """single_turn for an EnvironmentSingleTurn (ours or the real freesolo's), else multi_turn."""
    names = {cls.__name__ for cls in type(env).__mro__}
    return "single_turn" if "EnvironmentSingleTurn" in names else "multi_turn"
