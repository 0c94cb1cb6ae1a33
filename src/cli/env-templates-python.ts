/**
 * What `edgeroll env new <name> --python` writes: a multi-turn environment in the guess-number
 * shape, written against the seed's `freesolo.*` imports (edgeroll_env provides them when no
 * real freesolo is installed), its dataset, and a test that serves it over HTTP with
 * `python3 -m edgeroll_env serve` and plays it through the protocol.
 */
export interface PythonStarterNames {
  name: string;
  /** The module's name: the environment's name with underscores. */
  module: string;
  className: string;
}

export const pythonPaths = {
  environment: (module: string) => `python/environments/${module}.py`,
  test: (module: string) => `python/tests/test_${module}.py`,
};

const environment = ({
  name,
  className,
}: PythonStarterNames) => `"""${name}: find a secret whole number in [1, 100] from higher/lower hints, one guess a turn.

Serve it to edgeroll (docs/remote-env-protocol.md), then register it in wrangler.toml:

    PYTHONPATH=python python3 -m edgeroll_env serve python/environments/${name.replaceAll("-", "_")}.py --port 9100
    REMOTE_ENVS = { "${name}" = "http://127.0.0.1:9100" }

Keep no episode state on \`self\`: each call carries the transcript, and any server may answer it.
"""

from __future__ import annotations

import re
from pathlib import Path

from freesolo.datasets import TaskExample, load_dataset
from freesolo.environments import (
    EnvironmentEpisode,
    EnvironmentMultiTurn,
    EnvironmentStepResult,
    RewardResult,
)

try:  # edgeroll's refusal of an example: /start answers 422 naming the field, nothing is stored
    from edgeroll_env import ExampleRejected
except ImportError:  # under Flash alone: a ValueError

    class ExampleRejected(ValueError):
        def __init__(self, problems: dict) -> None:
            super().__init__("; ".join(f"{path}: {why}" for path, why in problems.items()))

DATASET = Path(__file__).resolve().parents[2] / "datasets" / "${name}.jsonl"
GUESS = re.compile(r"<guess>\\s*(-?\\d+)\\s*</guess>")
TURNS = 7


def parse_guess(action: str) -> int | None:
    found = GUESS.findall(action)
    return int(found[-1]) if found else None


def secret_of(example: TaskExample) -> int:
    """The task data this environment reads; an example without it cannot be played."""
    secret = (example.metadata or {}).get("secret")
    if isinstance(secret, bool) or not isinstance(secret, int) or not 1 <= secret <= 100:
        raise ExampleRejected({"metadata.secret": "required: a whole number from 1 to 100"})
    return secret


def sampled(message) -> bool:
    metadata = message.get("metadata") if isinstance(message, dict) else message.metadata
    role = message.get("role") if isinstance(message, dict) else message.role
    return role == "assistant" and bool((metadata or {}).get("sampled"))


class ${className}(EnvironmentMultiTurn):
    name = "${name}"
    version = "1"

    def __init__(self, *, split: str = "train") -> None:
        self.split = split
        self.dataset = list(load_dataset(str(DATASET)).examples)

    def max_episode_turns(self, example: TaskExample) -> int:
        return TURNS

    def start_episode(self, example: TaskExample, prompt_text: str) -> list[dict]:
        secret_of(example)  # refuse, at the opening, an example that cannot be played
        rules = f"Reply with one guess per turn as <guess>N</guess>. You have {TURNS} guesses."
        return [{"role": "user", "content": f"{example.input}\\n\\n{rules}"}]

    def step_episode(self, example: TaskExample, messages: list[dict], assistant_response: str) -> EnvironmentStepResult:
        secret = secret_of(example)
        guess = parse_guess(assistant_response)
        if guess is None:
            text, done = "Reply with your guess as <guess>N</guess>.", False
        elif guess == secret:
            text, done = f"{guess} is correct!", True
        else:
            text, done = f"{guess} is too {'low' if guess < secret else 'high'}.", False
        return EnvironmentStepResult(done=done, messages=({"role": "user", "content": text},), metadata={"guess": guess})

    def score_episode(self, example: TaskExample, episode: EnvironmentEpisode) -> RewardResult:
        guesses = [parse_guess(turn.content) for turn in episode.turns if sampled(turn)]
        solved = secret_of(example) in guesses
        return RewardResult(score=1.0 if solved else 0.0, threshold=1.0, metadata={"guesses": len(guesses)})


def load_environment(split: str = "train", **kwargs) -> ${className}:
    return ${className}(split=split, **kwargs)
`;

const test = ({
  name,
  module,
}: PythonStarterNames) => `"""${name}, served over HTTP by edgeroll_env and played through the protocol by binary search."""

import json
import subprocess
import sys
import unittest
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def post(url: str, path: str, body: dict) -> dict:
    request = urllib.request.Request(url + path, json.dumps(body).encode(), {"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


class ${module.replace(/(^|_)([a-z0-9])/g, (_, __, c: string) => c.toUpperCase())}Test(unittest.TestCase):
    def setUp(self) -> None:
        self.server = subprocess.Popen(
            [sys.executable, "-m", "edgeroll_env", "serve", str(ROOT / "python/environments/${module}.py"), "--port", "0"],
            cwd=ROOT, env={"PYTHONPATH": str(ROOT / "python")}, stdout=subprocess.PIPE, text=True)
        self.url = self.server.stdout.readline().split(" on ")[-1].strip()

    def tearDown(self) -> None:
        self.server.terminate()
        self.server.wait(timeout=10)
        self.server.stdout.close()

    def test_binary_search_solves_every_example(self) -> None:
        for line in (ROOT / "datasets/${name}.jsonl").read_text().splitlines():
            example = json.loads(line)
            messages = post(self.url, "/start", {"example": example, "prompt_text": ""})["messages"]
            low, high, done, turn = 1, 100, False, 0
            while not done:
                guess = (low + high) // 2
                action = {"role": "assistant", "content": f"<guess>{guess}</guess>", "metadata": {"sampled": True}}
                messages.append(action)
                step = post(self.url, "/step", {"example": example, "messages": messages, "assistant_response": action["content"], "episode_id": example["id"], "turn": turn})
                messages += step["messages"]
                done, turn = step["done"], turn + 1
                text = step["messages"][0]["content"]
                low, high = (guess + 1, high) if "low" in text else (low, guess - 1) if "high" in text else (low, high)
            episode = {"messages": messages, "response_text": action["content"], "turns": messages[1:], "metadata": {}}
            scored = post(self.url, "/score", {"example": example, "episodes": [episode]})["results"][0]
            self.assertEqual(scored["score"], 1.0, example["id"])


if __name__ == "__main__":
    unittest.main()
`;

const dataset = (name: string) =>
  `${[42, 7, 93, 64]
    .map((secret, i) =>
      JSON.stringify({
        id: `${name}-${i + 1}`,
        input: "Find the secret whole number between 1 and 100.",
        metadata: { secret },
      }),
    )
    .join("\n")}\n`;

export function pythonStarterFiles(names: PythonStarterNames) {
  return { environment: environment(names), dataset: dataset(names.name), test: test(names) };
}
