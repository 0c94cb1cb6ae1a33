"""The protocol's four calls over one environment, without HTTP: parse the request, run the
validated hook, build the answer. Raises HttpError for what the caller got wrong; anything
else raised here is the environment's fault (an env_error)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .contract import RewardResult
from .environment import environment_kind
from .episode import (
    OWN_RECORDS,
    Records,
    episode_tools,
    open_episode,
    score_batch,
    step_environment,
    turn_budget,
)
from .errors import EnvironmentContractError, EnvironmentHookError, ExampleRejected
from .shapes import (
    ShapeError,
    check_array,
    check_episode,
    check_example,
    check_int,
    check_messages,
    check_object,
    check_string,
)
from .transcript import is_sampled_action


def reward_json(reward: RewardResult) -> dict[str, Any]:
    """A grade as /score answers it; a rubric's components with it."""
    answer: dict[str, Any] = {
        "score": reward.score,
        "threshold": reward.threshold,
        "metadata": reward.metadata,
    }
    if reward.components is not None:
        answer["components"] = [
            {"name": c.name, "value": c.value, "weight": c.weight} for c in reward.components
        ]
    return answer


class HttpError(Exception):
    """An answer other than 200: its status, the stable code and a message a person reads."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        headers: dict[str, str] | None = None,
        details: list[dict[str, str]] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers or {}
        self.details = details


def bad_request(message: str) -> HttpError:
    return HttpError(400, "bad_request", message)


def example_rejected(refusal: ExampleRejected) -> HttpError:
    """The environment's refusal of an example at /start: 422, each field in `details`."""
    details = [{"path": path, "message": message} for path, message in refusal.problems.items()]
    return HttpError(422, "example_rejected", str(refusal) or "rejected", details=details)


@contextmanager
def blame(hook: str) -> Iterator[None]:
    """Whatever the environment's code raises here becomes an EnvironmentHookError naming hook."""
    try:
        yield
    except (HttpError, EnvironmentContractError, EnvironmentHookError):
        raise
    except Exception as error:  # noqa: BLE001 - any exception of the environment's code
        raise EnvironmentHookError(hook, error) from error


class EnvService:
    """GET /info, POST /start, /step and /score for one loaded environment."""

    def __init__(
        self, env: Any, *, name: str, version: str = "0", records: Records = OWN_RECORDS
    ) -> None:
        self.env = env
        self.name = name
        self.version = version
        self.records = records
        self.kind = environment_kind(env)

    def info(self) -> dict[str, Any]:
        info: dict[str, Any] = {"name": self.name, "version": self.version, "kind": self.kind}
        concurrency = getattr(self.env, "max_score_concurrency", None)
        if isinstance(concurrency, int) and not isinstance(concurrency, bool) and concurrency > 0:
            info["max_score_concurrency"] = concurrency
        return info

    def start(self, body: Any) -> dict[str, Any]:
        try:
            raw = check_object(body, "", ("example", "prompt_text"))
            fields = check_example(raw["example"])
            prompt_text = check_string(raw["prompt_text"], "prompt_text")
        except ShapeError as error:
            raise bad_request(str(error)) from None
        example = self.records.example(fields)
        try:
            with blame("build_prompt_messages" if self.kind == "single_turn" else "start_episode"):
                messages = open_episode(self.env, example, prompt_text)
            with blame("max_episode_turns"):
                budget = turn_budget(self.env, example)
            with blame("tools"):
                tools = episode_tools(self.env, example)
        except EnvironmentHookError as error:
            if isinstance(error.error, ExampleRejected):
                raise example_rejected(error.error) from None
            raise
        opening: dict[str, Any] = {"messages": messages, "max_turns": budget}
        if tools is not None:
            opening["tools"] = tools  # native tool calling: sent with every generation
        return opening

    def step(self, body: Any) -> dict[str, Any]:
        try:
            raw = check_object(
                body, "", ("example", "messages", "assistant_response", "episode_id", "turn")
            )
            fields = check_example(raw["example"])
            messages = check_messages(raw["messages"], "messages", min_items=1)
            assistant_response = check_string(raw["assistant_response"], "assistant_response")
            check_string(raw["episode_id"], "episode_id", min_length=1)
            turn = check_int(raw["turn"], "turn", minimum=0)
        except ShapeError as error:
            raise bad_request(str(error)) from None
        self._check_replay_invariants(messages, assistant_response, turn)
        example = self.records.example(fields)
        actions = sum(1 for m in messages if is_sampled_action(m))
        with blame("max_episode_turns"):
            budget = turn_budget(self.env, example)
        if actions > budget:
            raise bad_request(
                f"messages: {actions} sampled actions, more than max_episode_turns ({budget})"
            )
        with blame("step_episode"):
            result = step_environment(self.env, example, messages)
        return {
            "done": result.done,
            "messages": list(result.messages),
            "final_response_text": result.final_response_text,
            "metadata": result.metadata,
        }

    @staticmethod
    def _check_replay_invariants(messages: list[dict], assistant_response: str, turn: int) -> None:
        """messages[-1] is the sampled action being stepped, and turn is its index."""
        last = messages[-1]
        if not is_sampled_action(last):
            raise bad_request(
                f"messages[{len(messages) - 1}]: the transcript must end with the sampled action "
                "being stepped (role assistant, metadata.sampled true)"
            )
        if last["content"] != assistant_response:
            raise bad_request(
                f"assistant_response: differs from messages[{len(messages) - 1}].content, "
                "the action being stepped"
            )
        index = sum(1 for m in messages if is_sampled_action(m)) - 1
        if turn != index:
            raise bad_request(
                f"turn: {turn}, but the action ending messages is sampled action {index} (0-based)"
            )

    def score(self, body: Any) -> dict[str, Any]:
        try:
            raw = check_object(body, "", ("example", "episodes"))
            fields = check_example(raw["example"])
            items = check_array(raw["episodes"], "episodes", min_items=1)
            parsed = [check_episode(item, f"episodes[{i}]") for i, item in enumerate(items)]
        except ShapeError as error:
            raise bad_request(str(error)) from None
        example = self.records.example(fields)
        episodes = [self.records.episode(p) for p in parsed]
        with blame("score_episodes"):
            rewards = score_batch(self.env, example, episodes)
        return {"results": [reward_json(r) for r in rewards]}
