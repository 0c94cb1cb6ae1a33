"""edgeroll_env end to end: the real server as a subprocess on port 0, serving the guess-number
starter and a single-turn fixture written against freesolo.* imports, checked against the
protocol (docs/remote-env-protocol.md), its JSON Schemas and the TypeScript guess-number's
own answers (fixtures/guess_number_golden.json).

    PYTHONPATH=python python3 -m unittest discover -s python/tests   # or with the package installed
"""

from __future__ import annotations

import http.client
import json
import os
import re
import select
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

HERE = Path(__file__).resolve().parent
PYTHON_DIR = HERE.parent
REPO = PYTHON_DIR.parent

from edgeroll_env import (
    Component,
    EnvironmentContractError,
    EnvironmentEpisode,
    EnvironmentMultiTurn,
    RewardResult,
    Rubric,
    SftError,
    TaskExample,
    UnparseableSftTargetError,
    default_sft_completion,
    install_freesolo_shim,
    load_dataset,
    run_episode,
)
from edgeroll_env.datasets import DatasetError, load_task_examples
from edgeroll_env.episode import check_reward
from edgeroll_env.service import reward_json
from edgeroll_env.idempotency import IdempotencyCache
from edgeroll_env.loader import load_environment

STARTER = PYTHON_DIR / "edgeroll_env" / "starters" / "guess_number.py"
QUIZ = HERE / "fixtures" / "quiz_env.py"
SCHEMAS = REPO / "docs" / "remote-env-schema"
GOLDEN = json.loads((HERE / "fixtures" / "guess_number_golden.json").read_text(encoding="utf-8"))
TOKEN = "test-secret"


class Server:
    """`python3 -m edgeroll_env serve SPEC --port 0 ...` until close(); waits for the ready line."""

    def __init__(self, spec: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.stderr = tempfile.TemporaryFile()
        environ = {**os.environ, "PYTHONPATH": str(PYTHON_DIR), **(env or {})}
        if "EDGEROLL_ENV_TOKEN" not in (env or {}):
            environ.pop("EDGEROLL_ENV_TOKEN", None)  # a token in the caller's shell stays there
        self.process = subprocess.Popen(
            [sys.executable, "-m", "edgeroll_env", "serve", str(spec), "--port", "0", *args],
            cwd=REPO,
            env=environ,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
        )
        ready, _, _ = select.select([self.process.stdout], [], [], 10)
        line = self.process.stdout.readline().decode() if ready else ""
        if " on http://" not in line:
            self.close()
            raise RuntimeError(f"server did not start: {line!r} {self.errors()}")
        self.ready_line = line.strip()
        parts = urlsplit(line.split(" on ", 1)[1].strip())
        self.host, self.port = parts.hostname, parts.port

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        token: str | None = None,
        headers: dict[str, str] | None = None,
        raw: bytes | None = None,
    ) -> tuple[int, dict[str, str], Any]:
        connection = http.client.HTTPConnection(self.host, self.port, timeout=10)
        sent = dict(headers or {})
        if token is not None:
            sent["Authorization"] = f"Bearer {token}"
        data = raw if raw is not None else None if body is None else json.dumps(body).encode()
        if data is not None:
            sent["Content-Type"] = "application/json"
        try:
            connection.request(method, path, body=data, headers=sent)
            response = connection.getresponse()
            payload = json.loads(response.read() or b"null")
            return response.status, {k.lower(): v for k, v in response.getheaders()}, payload
        finally:
            connection.close()

    def errors(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read().decode(errors="replace")

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process.stdout.close()
        self.stderr.close()


class Schemas:
    """A small JSON Schema (2020-12) checker for the keywords of docs/remote-env-schema (derived
    from edgeroll's zod schemas by scripts/remote-env-schema.ts). A keyword it does not know
    fails the test, so a schema that grows one is noticed rather than half-checked."""

    ANNOTATIONS = {"$id", "$schema", "title", "description", "default"}
    KEYWORDS = {
        "type", "const", "enum", "minLength", "maxLength", "minimum", "maximum",
        "exclusiveMinimum", "required", "properties", "additionalProperties", "propertyNames",
        "items", "minItems", "anyOf", "pattern",
    }  # fmt: skip

    def __init__(self, folder: Path) -> None:
        self.docs = {p.stem: json.loads(p.read_text()) for p in folder.glob("*.json")}

    def errors(self, instance: Any, name: str) -> list[str]:
        found: list[str] = []
        self._check(instance, self.docs[name], "$", found)
        return found

    @staticmethod
    def _is(value: Any, kind: str) -> bool:
        if kind == "integer":
            return not isinstance(value, bool) and (
                isinstance(value, int) or (isinstance(value, float) and value.is_integer())
            )
        if kind == "number":
            return not isinstance(value, bool) and isinstance(value, (int, float))
        types = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}
        return isinstance(value, types[kind])

    def _check(self, value: Any, schema: dict, path: str, out: list[str]) -> None:
        unknown = set(schema) - self.KEYWORDS - self.ANNOTATIONS
        if unknown:
            raise AssertionError(f"the test's schema checker does not know {sorted(unknown)}")
        kinds = schema.get("type")
        if kinds is not None:
            kinds = [kinds] if isinstance(kinds, str) else kinds
            if not any(self._is(value, k) for k in kinds):
                out.append(f"{path}: not {kinds}")
                return
        if "const" in schema and json.dumps(value) != json.dumps(schema["const"]):
            out.append(f"{path}: not {schema['const']!r}")
        if "enum" in schema and json.dumps(value) not in map(json.dumps, schema["enum"]):
            out.append(f"{path}: not one of {schema['enum']}")
        if isinstance(value, str):
            if not schema.get("minLength", 0) <= len(value) <= schema.get("maxLength", len(value)):
                out.append(f"{path}: length out of bounds")
            if "pattern" in schema and not re.search(schema["pattern"], value):
                out.append(f"{path}: does not match {schema['pattern']}")
        if self._is(value, "number"):
            low, high = schema.get("minimum", value), schema.get("maximum", value)
            above = schema.get("exclusiveMinimum", value - 1)
            if not (low <= value <= high and value > above):
                out.append(f"{path}: out of bounds")
        if isinstance(value, dict):
            out.extend(f"{path}: missing {k}" for k in schema.get("required", []) if k not in value)
            properties, extra = schema.get("properties", {}), schema.get("additionalProperties", {})
            for key, item in value.items():
                if "propertyNames" in schema:
                    self._check(key, schema["propertyNames"], f"{path}.{key} (name)", out)
                if key in properties:
                    self._check(item, properties[key], f"{path}.{key}", out)
                elif extra is False:
                    out.append(f"{path}: unexpected {key}")
                else:
                    self._check(item, extra, f"{path}.{key}", out)
        if isinstance(value, list):
            if len(value) < schema.get("minItems", 0):
                out.append(f"{path}: too few items")
            for i, item in enumerate(value if "items" in schema else []):
                self._check(item, schema["items"], f"{path}[{i}]", out)
        if "anyOf" in schema:
            probes = [[] for _ in schema["anyOf"]]
            for sub, probe in zip(schema["anyOf"], probes):
                self._check(value, sub, path, probe)
            if all(probes):
                out.append(f"{path}: matches none of anyOf")


SCHEMA = Schemas(SCHEMAS)


def example_of(case: dict[str, Any]) -> dict[str, Any]:
    metadata = {"secret": case["secret"]}
    if "max_turns" in case:
        metadata["max_turns"] = case["max_turns"]
    return {"id": "g", "input": GOLDEN["example_input"], "metadata": metadata}


def sampled(content: str) -> dict[str, Any]:
    return {"role": "assistant", "content": content, "metadata": {"sampled": True}}


class ProtocolCase(unittest.TestCase):
    server: Server
    token: str | None = None

    def call(self, method: str, path: str, body: Any = None, **kwargs: Any):
        kwargs.setdefault("token", self.token)
        return self.server.call(method, path, body, **kwargs)

    def ok(self, path: str, body: Any, schema: str, **kwargs: Any) -> Any:
        status, _, answer = self.call("POST", path, body, **kwargs)
        self.assertEqual(status, 200, answer)
        self.assertEqual(SCHEMA.errors(body, schema.replace("response", "request")), [])
        self.assertEqual(SCHEMA.errors(answer, schema), [])
        return answer

    def fails(self, path: str, body: Any, status: int, code: str, **kwargs: Any) -> str:
        got, _, answer = self.call("POST", path, body, **kwargs)
        self.assertEqual((got, answer["error"]["code"]), (status, code), answer)
        self.assertEqual(SCHEMA.errors(answer, "error"), [])
        return answer["error"]["message"]


class GuessNumberOverHTTP(ProtocolCase):
    """The starter, with a bearer token from EDGEROLL_ENV_TOKEN."""

    token = TOKEN

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = Server(STARTER, env={"EDGEROLL_ENV_TOKEN": TOKEN})

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.close()

    def play(self, case: dict[str, Any], episode_id: str) -> dict[str, Any]:
        """One episode as edgeroll drives it: /start, then /step per action until done."""
        example = example_of(case)
        opened = self.ok(
            "/start",
            {"example": example, "prompt_text": case.get("prompt_text", "")},
            "start.response",
        )
        messages = list(opened["messages"])
        opening, response_text, steps = len(messages), "", []
        for turn in range(opened["max_turns"]):
            action = case["actions"][turn] if turn < len(case["actions"]) else ""
            messages.append(sampled(action))
            body = {
                "example": example,
                "messages": messages,
                "assistant_response": action,
                "episode_id": episode_id,
                "turn": turn,
            }
            result = self.ok(
                "/step", body, "step.response", headers={"Idempotency-Key": f"{episode_id}:{turn}"}
            )
            response_text = (
                action if result["final_response_text"] is None else result["final_response_text"]
            )
            messages.extend(result["messages"])
            steps.append(result["metadata"])
            if result["done"]:
                break
        turns = [
            {
                "role": m["role"],
                "content": m["content"],
                "name": None,
                "metadata": m.get("metadata", {}),
            }
            for m in messages[opening:]
        ]
        return {
            "messages": messages,
            "response_text": response_text,
            "turns": turns,
            "metadata": {"steps": steps},
        }

    def test_ready_line_and_info(self) -> None:
        self.assertRegex(
            self.server.ready_line,
            r"^edgeroll_env serving guess-number on http://127\.0\.0\.1:\d+$",
        )
        status, _, info = self.call("GET", "/info")
        self.assertEqual(status, 200)
        self.assertEqual(
            info,
            {
                "name": "guess-number",
                "version": "1",
                "kind": "multi_turn",
                "max_score_concurrency": 8,
            },
        )
        self.assertEqual(SCHEMA.errors(info, "info.response"), [])

    def test_start_applies_the_prompt_text_rule(self) -> None:
        plain = self.ok(
            "/start", {"example": example_of({"secret": 5}), "prompt_text": ""}, "start.response"
        )
        self.assertEqual(plain["max_turns"], 7)
        self.assertEqual(plain["messages"], GOLDEN["episodes"][0]["episode"]["messages"][:1])
        case = GOLDEN["episodes"][8]  # prompt_text "You are a guesser."
        framed = self.ok(
            "/start",
            {"example": example_of(case["case"]), "prompt_text": case["case"]["prompt_text"]},
            "start.response",
        )
        self.assertEqual(framed["messages"], case["episode"]["messages"][:2])

    def test_episodes_played_to_the_end_match_typescript(self) -> None:
        for i, golden in enumerate(GOLDEN["episodes"]):
            with self.subTest(case=i):
                episode = self.play(golden["case"], f"ep-{i}")
                self.assertEqual(episode["messages"], golden["episode"]["messages"])
                self.assertEqual(episode["response_text"], golden["episode"]["responseText"])
                self.assertEqual(episode["turns"], golden["episode"]["turns"])
                self.assertEqual(episode["metadata"], golden["episode"]["metadata"])
                self.assertTrue(episode["turns"][-1]["content"].endswith(("correct!", "left.")))

    def test_score_grades_several_episodes_as_typescript_does(self) -> None:
        group = [
            g
            for g in GOLDEN["episodes"]
            if g["case"]["secret"] == 37 and "max_turns" not in g["case"]
        ]
        self.assertEqual(len(group), 4)
        episodes = [self.play(g["case"], f"score-{i}") for i, g in enumerate(group)]
        body = {"example": example_of(group[0]["case"]), "episodes": episodes}
        answer = self.ok(
            "/score", body, "score.response", headers={"Idempotency-Key": "group-1:score"}
        )
        self.assertEqual(answer["results"], [g["reward"] for g in group])
        self.assertEqual([r["score"] for r in answer["results"]], [1, 1, 0, 1])
        self.assertEqual(answer["results"][0]["metadata"]["per_turn_rewards"], [0.2, 0.2, 1])

    def test_bad_requests_are_400_and_name_the_field(self) -> None:
        example = example_of({"secret": 37})
        good = {
            "example": example,
            "messages": [{"role": "user", "content": "Find it."}, sampled("<guess>50</guess>")],
            "assistant_response": "<guess>50</guess>",
            "episode_id": "bad",
            "turn": 0,
        }
        self.assertEqual(self.call("POST", "/step", good)[0], 200)
        cases = [
            ("/step", {k: v for k, v in good.items() if k != "turn"}, "turn: required"),
            (
                "/step",
                {**good, "assistant_response": 5},
                "assistant_response: expected string, got number",
            ),
            (
                "/step",
                {**good, "messages": good["messages"][:1]},
                "messages[0]: the transcript must end with the sampled action",
            ),
            (
                "/step",
                {**good, "messages": [*good["messages"], {"role": "user", "content": "hi"}]},
                "messages[2]: the transcript must end",
            ),
            (
                "/step",
                {**good, "assistant_response": "<guess>51</guess>"},
                "assistant_response: differs from messages[1].content",
            ),
            (
                "/step",
                {**good, "turn": 3},
                "turn: 3, but the action ending messages is sampled action 0",
            ),
            (
                "/step",
                {**good, "example": {**example, "prompt": "x"}},
                'example: unknown field "prompt"',
            ),
            ("/step", {**good, "example": {"input": "x"}}, "example.id: required"),
            (
                "/step",
                {**good, "messages": [{"role": "robot", "content": "x"}, good["messages"][1]]},
                "messages[0].role: expected one of",
            ),
            (
                "/step",
                {
                    **good,
                    "example": example_of({"secret": 37, "max_turns": 1}),
                    "messages": [sampled("a"), sampled("b")],
                    "assistant_response": "b",
                    "turn": 1,
                },
                "more than max_episode_turns (1)",
            ),
            ("/start", {"example": example, "promptText": ""}, 'unknown field "promptText"'),
            ("/score", {"example": example, "episodes": []}, "episodes: expected at least 1 item"),
            (
                "/score",
                {"example": example, "episodes": [{"messages": []}]},
                "episodes[0].response_text: required",
            ),
        ]
        for path, body, expected in cases:
            with self.subTest(expected=expected):
                self.assertIn(expected, self.fails(path, body, 400, "bad_request"))
        status, _, answer = self.call("POST", "/step", raw=b"{not json")
        self.assertEqual((status, answer["error"]["code"]), (400, "bad_request"))
        self.assertIn("not valid JSON", answer["error"]["message"])

    def test_an_example_the_environment_cannot_play_is_refused_at_start_naming_the_field(
        self,
    ) -> None:
        for metadata, path, why in [
            ({}, "metadata.secret", "required"),
            ({"secret": 1000}, "metadata.secret", "must be from 1 to 100, got 1000"),
            ({"secret": 5, "max_turns": 0}, "metadata.max_turns", "must be >= 1, got 0"),
        ]:
            with self.subTest(metadata=metadata):
                body = {"example": {"id": "g", "input": "x", "metadata": metadata}}
                status, _, answer = self.call("POST", "/start", {**body, "prompt_text": ""})
                self.assertEqual((status, answer["error"]["code"]), (422, "example_rejected"))
                self.assertEqual(answer["error"]["details"], [{"path": path, "message": why}])
                self.assertEqual(answer["error"]["message"], f"{path}: {why}")
                self.assertEqual(SCHEMA.errors(answer, "error"), [])

    def test_an_exception_in_the_environment_is_a_500_env_error(self) -> None:
        body = {
            "example": {"id": "g", "input": "x", "metadata": {"secret": 1000}},
            "messages": [sampled("<guess>5</guess>")],
            "assistant_response": "<guess>5</guess>",
            "episode_id": "boom",
            "turn": 0,
        }
        message = self.fails("/step", body, 500, "env_error")
        self.assertIn("ExampleRejected: metadata.secret: must be from 1 to 100", message)
        self.assertIn("raised", message)

    def test_a_missing_or_wrong_bearer_is_401(self) -> None:
        for token in (None, "wrong"):
            with self.subTest(token=token):
                status, headers, answer = self.server.call("GET", "/info", token=token)
                self.assertEqual((status, answer["error"]["code"]), (401, "unauthorized"))
                self.assertIn("bearer", headers.get("www-authenticate", "").lower())
        self.fails(
            "/start",
            {"example": example_of({"secret": 5}), "prompt_text": ""},
            401,
            "unauthorized",
            token="wrong",
        )

    def test_a_retried_step_is_answered_from_its_idempotency_key(self) -> None:
        body = {
            "example": example_of({"secret": 37}),
            "messages": [{"role": "user", "content": "Find it."}, sampled("<guess>20</guess>")],
            "assistant_response": "<guess>20</guess>",
            "episode_id": "retry-1",
            "turn": 0,
        }
        key = {"Idempotency-Key": "retry-1:0"}
        first = self.call("POST", "/step", body, headers=key)
        again = self.call("POST", "/step", body, headers=key)
        self.assertEqual((first[0], again[0]), (200, 200))
        self.assertEqual(again[2], first[2])
        self.assertNotIn("idempotent-replayed", first[1])
        self.assertEqual(again[1].get("idempotent-replayed"), "true")
        changed = {
            **body,
            "messages": [body["messages"][0], sampled("<guess>21</guess>")],
            "assistant_response": "<guess>21</guess>",
        }
        self.assertIn(
            "retry-1:0", self.fails("/step", changed, 422, "idempotency_key_reused", headers=key)
        )
        self.assertNotIn("idempotent-replayed", self.call("POST", "/step", body)[1])

    def test_unknown_routes_and_methods(self) -> None:
        self.assertEqual(self.call("GET", "/nope")[2]["error"]["code"], "not_found")
        status, headers, answer = self.call("GET", "/step")
        self.assertEqual(
            (status, answer["error"]["code"], headers.get("allow")),
            (405, "method_not_allowed", "POST"),
        )


class FreesoloSingleTurnOverHTTP(ProtocolCase):
    """A seed-style single-turn environment (freesolo.* imports), with --split, --arg, no token,
    and room for one call at a time (--max-inflight 1)."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = Server(
            QUIZ,
            "--split",
            "eval",
            "--arg",
            "name=quiz",
            "--arg",
            "case_sensitive=true",
            "--max-inflight",
            "1",
        )

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.close()

    example = {"id": "q1", "input": "Capital of France?", "output": "Paris"}

    def test_info(self) -> None:
        info = self.call("GET", "/info")[2]
        self.assertEqual(
            info,
            {"name": "quiz", "version": "0", "kind": "single_turn", "max_score_concurrency": 4},
        )

    def test_start_and_step(self) -> None:
        opened = self.ok(
            "/start",
            {"example": self.example, "prompt_text": "Answer in one word."},
            "start.response",
        )
        self.assertEqual(
            opened,
            {
                "messages": [
                    {"role": "system", "content": "Answer in one word."},
                    {"role": "user", "content": "Capital of France?"},
                ],
                "max_turns": 1,
            },
        )
        body = {
            "example": self.example,
            "messages": [*opened["messages"], sampled("Paris")],
            "assistant_response": "Paris",
            "episode_id": "q-ep",
            "turn": 0,
        }
        stepped = self.ok("/step", body, "step.response")
        self.assertEqual(
            stepped, {"done": True, "messages": [], "final_response_text": "Paris", "metadata": {}}
        )

    def test_score_grades_several_episodes_and_a_scorer_exception_is_an_env_error(self) -> None:
        def episode(reply: str) -> dict[str, Any]:
            messages = [{"role": "user", "content": "Capital of France?"}, sampled(reply)]
            turn = {"role": "assistant", "content": reply, "name": None}
            turn["metadata"] = {"sampled": True}
            return {"messages": messages, "response_text": reply, "turns": [turn], "metadata": {}}

        replies = ["Paris", "paris", "London", "Paris "]
        body = {"example": self.example, "episodes": [episode(r) for r in replies]}
        results = self.ok("/score", body, "score.response")["results"]
        # case_sensitive=true and --split eval reached the factory; the shim built the example
        metadata = {"split": "eval", "example_class": "edgeroll_env.contract"}
        self.assertEqual(
            results,
            [{"score": s, "threshold": 1.0, "metadata": metadata} for s in (1.0, 0.0, 0.0, 1.0)],
        )
        # One episode the scorer cannot grade fails the call; graded alone (as edgeroll's SDK
        # does after a failed batch), the others still stand.
        body["episodes"].insert(2, episode("raise"))
        message = self.fails("/score", body, 500, "env_error")
        self.assertEqual(message, "score_episodes raised ValueError: cannot grade this reply")
        alone = {"example": self.example, "episodes": body["episodes"][:1]}
        self.assertEqual(self.ok("/score", alone, "score.response")["results"], results[:1])

    def test_an_exception_in_the_prompt_builder_is_a_500_env_error(self) -> None:
        body = {"example": {**self.example, "metadata": {"explode": "prompt"}}, "prompt_text": ""}
        message = self.fails("/start", body, 500, "env_error")
        self.assertEqual(
            message, "build_prompt_messages raised RuntimeError: the prompt builder blew up"
        )
        self.assertIn("the prompt builder blew up", self.server.errors())

    def test_busy_is_503_with_retry_after(self) -> None:
        """With --max-inflight 1, a call made while a slow one runs is turned away."""
        slow = {"example": {**self.example, "metadata": {"sleep": 0.8}}, "prompt_text": ""}
        quick = {"example": self.example, "prompt_text": ""}
        slow_statuses: list[int] = []

        def run_slow() -> None:  # retried as a client would, should a quick call win the slot
            while not slow_statuses or slow_statuses[-1] == 503 and len(slow_statuses) < 5:
                slow_statuses.append(self.call("POST", "/start", slow)[0])

        worker = threading.Thread(target=run_slow)
        worker.start()
        time.sleep(0.2)
        busy = None
        while busy is None and worker.is_alive():
            status, headers, answer = self.call("POST", "/start", quick)
            if status == 503:
                busy = (headers, answer)
            time.sleep(0.02)
        worker.join()
        self.assertIsNotNone(busy, "no call was turned away while the slow one ran")
        self.assertEqual(busy[1]["error"]["code"], "busy")
        self.assertEqual(busy[0].get("retry-after"), "1")
        self.assertEqual(slow_statuses[-1], 200)


class AnInstalledFreesoloIsUsed(unittest.TestCase):
    """With a freesolo package importable, environment code gets that package's classes."""

    def test_the_fixture_runs_on_the_installed_sdk(self) -> None:
        sdk = HERE / "fixtures" / "fake_sdk"
        server = Server(QUIZ, env={"PYTHONPATH": f"{PYTHON_DIR}{os.pathsep}{sdk}"})
        try:
            example = {"id": "q", "input": "Capital of France?", "output": "Paris"}
            status, _, info = server.call("GET", "/info")
            self.assertEqual((status, info["kind"]), (200, "single_turn"))
            opened = server.call("POST", "/start", {"example": example, "prompt_text": ""})[2]
            self.assertEqual(
                opened["messages"], [{"role": "user", "content": "Capital of France?"}]
            )
            episode = {"messages": [], "response_text": "paris", "turns": [], "metadata": {}}
            answer = server.call("POST", "/score", {"example": example, "episodes": [episode]})[2]
            self.assertEqual(answer["results"][0]["score"], 1.0)
            self.assertEqual(answer["results"][0]["metadata"]["example_class"], "freesolo.datasets")
        finally:
            server.close()


class InProcess(unittest.TestCase):
    """The package's pieces without HTTP."""

    @classmethod
    def setUpClass(cls) -> None:
        install_freesolo_shim()
        cls.guess = load_environment(str(STARTER))
        cls.module = sys.modules[type(cls.guess).__module__]

    def test_the_shim_re_exports_the_contract(self) -> None:
        import freesolo.datasets
        import freesolo.environments

        self.assertIs(freesolo.environments.RewardResult, RewardResult)
        self.assertIs(freesolo.datasets.TaskExample, TaskExample)
        self.assertIs(freesolo.environments.EnvironmentMultiTurn, EnvironmentMultiTurn)

    def test_starter_sft_and_parsing_match_typescript(self) -> None:
        for item in GOLDEN["sft"]:
            example = TaskExample(
                id="g", input=GOLDEN["example_input"], metadata={"secret": item["secret"]}
            )
            self.assertEqual(self.guess.sft_completion(example), item["target"])
        for item in GOLDEN["parse"]:
            self.assertEqual(self.module.parse_guess(item["text"]), item["guess"], item["text"])
        self.assertEqual(len(self.guess.dataset), 12)  # datasets/guess-number.jsonl, via the shim

    def test_start_sends_a_native_environments_tools(self) -> None:
        from edgeroll_env.service import EnvService

        lookup = {
            "type": "function",
            "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}},
        }

        class Native(EnvironmentMultiTurn):
            def start_episode(self, example, prompt_text):
                return [{"role": "user", "content": example.input}]

            def max_episode_turns(self, example):
                return 2

            def tools(self, example):
                return [lookup]

        body = {"example": {"id": "n", "input": "hi"}, "prompt_text": ""}
        opening = EnvService(Native(), name="native").start(body)
        self.assertEqual(opening["tools"], [lookup])
        # A text-only environment's opening has no tools at all.
        self.assertNotIn("tools", EnvService(self.guess, name="guess").start(body | {
            "example": {"id": "g", "input": "x", "metadata": {"secret": 5}}
        }))

        class Broken(Native):
            def tools(self, example):
                return [{"type": "function", "function": {"name": ""}}]

        with self.assertRaises(Exception) as caught:
            EnvService(Broken(), name="broken").start(body)
        self.assertIn("tools", str(caught.exception))

    def test_reference_loop_matches_typescript(self) -> None:
        golden = GOLDEN["episodes"][5]
        example = TaskExample(**example_of(golden["case"]))
        actions = golden["case"]["actions"]
        episode = run_episode(self.guess, example, lambda _messages, i: actions[i])
        self.assertEqual(list(episode.messages), golden["episode"]["messages"])
        reward = self.guess.score_episode(example, episode)
        self.assertEqual(
            {"score": reward.score, "threshold": reward.threshold, "metadata": reward.metadata},
            golden["reward"],
        )

    def test_score_episodes_runs_at_most_max_score_concurrency_at_once(self) -> None:
        class Slow(EnvironmentMultiTurn):
            max_score_concurrency = 3

            def __init__(self) -> None:
                self.lock, self.now, self.peak = threading.Lock(), 0, 0

            def score_episode(self, example, episode):
                with self.lock:
                    self.now += 1
                    self.peak = max(self.peak, self.now)
                time.sleep(0.03)
                with self.lock:
                    self.now -= 1
                return RewardResult(score=float(episode.response_text))

        env = Slow()
        episodes = [EnvironmentEpisode(messages=(), response_text=str(i)) for i in range(9)]
        scores = [r.score for r in env.score_episodes(TaskExample(id="x", input=""), episodes)]
        self.assertEqual(scores, [float(i) for i in range(9)])
        self.assertLessEqual(env.peak, 3)
        self.assertGreater(env.peak, 1)  # they did overlap

    def test_a_rubric_answers_its_components_with_their_weighted_sum(self) -> None:
        rubric = Rubric(
            [
                Component("correct", 1, lambda example, episode: float(episode == example.output)),
                Component("length", 0, lambda example, episode: len(episode)),
            ],
            threshold=1,
        )
        example = TaskExample(id="r", input="2 + 2?", output="4")
        graded = reward_json(rubric.score(example, "4"))
        self.assertEqual(
            graded,
            {
                "score": 1.0,
                "threshold": 1,
                "metadata": {},
                "components": [
                    {"name": "correct", "value": 1.0, "weight": 1},
                    {"name": "length", "value": 1, "weight": 0},
                ],
            },
        )
        self.assertEqual(SCHEMA.errors({"results": [graded]}, "score.response"), [])
        # A score that is not the weighted sum breaks the contract, as edgeroll's SDK says.
        with self.assertRaisesRegex(EnvironmentContractError, "not their weighted sum"):
            check_reward("score_episodes", {**graded, "score": 0.5})
        with self.assertRaisesRegex(ValueError, "named twice"):
            Rubric([Component("a", 1, len), Component("a", 0, len)])

    def test_default_sft_completion(self) -> None:
        def target(output: Any) -> Any:
            return default_sft_completion(TaskExample(id="x", input="", output=output))

        self.assertEqual(target("yes"), [{"role": "assistant", "content": "yes"}])
        self.assertEqual(target(True), [{"role": "assistant", "content": "true"}])
        self.assertEqual(target(4.0), [{"role": "assistant", "content": "4"}])
        turns = [{"role": "assistant", "content": "a"}, {"role": "user", "content": "b"}]
        self.assertEqual(target({"messages": turns}), turns)
        self.assertEqual(target(turns), turns)
        with self.assertRaises(UnparseableSftTargetError):
            target({"answer": 1})
        with self.assertRaises(SftError):
            target(None)

    def test_datasets_refuse_aliases_and_name_the_line(self) -> None:
        self.assertEqual(
            load_dataset(REPO / "datasets" / "guess-number.jsonl").examples[0].metadata,
            {"secret": 37},
        )
        with self.assertRaises(DatasetError) as raised:
            load_task_examples([{"input": "ok"}, {"prompt": "no"}])
        self.assertIn('records:2: unknown field "prompt"', str(raised.exception))
        self.assertEqual(load_task_examples([{"input": "a"}])[0].id, "line-1")

    def test_concurrent_calls_with_one_key_run_once(self) -> None:
        cache, runs, answers = IdempotencyCache(), [], []

        def compute() -> bytes:
            runs.append(1)
            time.sleep(0.05)
            return b"answer"

        threads = [
            threading.Thread(
                target=lambda: answers.append(cache.run("/step", "e:0", "fp", compute))
            )
            for _ in range(4)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.assertEqual(len(runs), 1)
        self.assertEqual(sorted(replayed for _, replayed in answers), [False, True, True, True])


if __name__ == "__main__":
    unittest.main()
