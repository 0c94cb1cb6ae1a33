"""edgeroll_client as a trainer uses it: samples decoded from either encoding, the token found as
the CLI finds it, and the client against a small stand-in for edgeroll's API (requests, the error
shape, a lease acked when the block ends and released when it raises, a run's budget, and the
429s of a spent budget and of a token's quota). The live API is
test/e2e/trainer-clients.test.ts's (examples/python/train_grpo.py against wrangler dev).

    PYTHONPATH=python python3 -m unittest discover -s python/tests -v   # or with the package installed
"""

from __future__ import annotations

import array
import base64
import json
import os
import sys
import tempfile
import threading
import time
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from unittest import mock

from edgeroll_client import (
    DEFAULT_URL,
    LOCAL_TOKENS_FILE,
    Batch,
    EdgerollClient,
    EdgerollError,
    decode_sample,
    discover_token,
)


def base64_of(code: str, values: list) -> str:
    data = array.array(code, values)
    if sys.byteorder != "little":
        data.byteswap()
    return base64.b64encode(data.tobytes()).decode()


class DecodeSample(unittest.TestCase):
    SAMPLE = {
        "turns": [0, 1],
        "token_ids": [100264, 882, 100265],
        "mask": [0, 1, 1],
        "logprobs": [0, -0.5, -0.25],
        "advantages": [0, 1.5, 1.5],
        "policy_versions": [-1, 3, 4],
    }

    def test_json_lists_come_back_as_they_are(self) -> None:
        self.assertEqual(decode_sample(self.SAMPLE), self.SAMPLE)

    def test_base64_arrays_decode_to_the_same_lists(self) -> None:
        encoded = {
            "turns": [0, 1],
            "token_ids": base64_of("i", self.SAMPLE["token_ids"]),
            "mask": base64_of("B", self.SAMPLE["mask"]),
            "logprobs": base64_of("f", self.SAMPLE["logprobs"]),
            "advantages": base64_of("f", self.SAMPLE["advantages"]),
            "policy_versions": base64_of("i", self.SAMPLE["policy_versions"]),
        }
        self.assertEqual(decode_sample(encoded), self.SAMPLE)

    def test_a_sample_from_an_older_server_has_no_policy_versions(self) -> None:
        older = {k: v for k, v in self.SAMPLE.items() if k != "policy_versions"}
        self.assertNotIn("policy_versions", decode_sample(older))

    def test_a_distilled_sample_keeps_its_teacher_logprobs(self) -> None:
        sample = {**self.SAMPLE, "teacher_logprobs": base64_of("f", [0, -0.125, -2.0])}
        self.assertEqual(decode_sample(sample)["teacher_logprobs"], [0, -0.125, -2.0])
        self.assertNotIn("teacher_logprobs", decode_sample(self.SAMPLE))


class DiscoverToken(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = tempfile.TemporaryDirectory()
        state = Path(self.dir.name) / ".wrangler" / "state"
        state.mkdir(parents=True)
        (state / LOCAL_TOKENS_FILE).write_text(json.dumps({"admin": "local-admin"}))
        cwd = os.getcwd()
        os.chdir(self.dir.name)
        self.addCleanup(os.chdir, cwd)
        self.addCleanup(self.dir.cleanup)

    def test_edgeroll_token_comes_first(self) -> None:
        with mock.patch.dict(os.environ, {"EDGEROLL_TOKEN": "from-env"}):
            self.assertEqual(discover_token("http://127.0.0.1:8787"), "from-env")
            self.assertEqual(discover_token("https://edgeroll.example.com"), "from-env")

    def test_a_local_stacks_token_goes_only_to_a_local_worker(self) -> None:
        with mock.patch.dict(os.environ, {"EDGEROLL_TOKEN": ""}):
            self.assertEqual(discover_token("http://localhost:8787"), "local-admin")
            self.assertIsNone(discover_token("https://edgeroll.example.com"))

    def test_a_url_finds_the_token_of_the_stack_serving_it(self) -> None:
        # A second stack (npm run dev -- --port 8788 --persist-to .wrangler/state-2) notes itself.
        second = Path(self.dir.name) / ".wrangler" / "state-2"
        second.mkdir(parents=True)
        (second / LOCAL_TOKENS_FILE).write_text(json.dumps({"admin": "second-admin"}))
        notes = Path(self.dir.name) / ".wrangler" / "edgeroll-stacks"
        notes.mkdir(parents=True)
        (notes / "8788.json").write_text(json.dumps({"pid": os.getpid(), "api_url": "http://127.0.0.1:8788",
                                                     "state_dir": str(second), "started_at": ""}))
        with mock.patch.dict(os.environ, {"EDGEROLL_TOKEN": ""}):
            self.assertEqual(discover_token("http://127.0.0.1:8788"), "second-admin")
            self.assertEqual(discover_token("http://127.0.0.1:8787"), "local-admin")
            # A stack that is gone serves nothing: its note is ignored.
            (notes / "8788.json").write_text(json.dumps({"pid": 2**22 + 12345, "api_url": "",
                                                         "state_dir": str(second), "started_at": ""}))
            self.assertEqual(discover_token("http://127.0.0.1:8788"), "local-admin")

    def test_the_client_sends_the_token_it_found(self) -> None:
        with mock.patch.dict(os.environ, {"EDGEROLL_TOKEN": "", "EDGEROLL_URL": ""}):
            client = EdgerollClient()
        self.assertEqual((client.base_url, client.token), (DEFAULT_URL, "local-admin"))


NO_LIMITS = {"max_sampled_tokens": None, "max_prompt_tokens": None, "max_usd": None, "max_groups": None}


def budget_view(run_id: str, limits: dict[str, Any]) -> dict[str, Any]:
    """What /v1/runs/:id/budget answers (src/views/cost-view.ts budgetView), nothing spent."""
    return {
        "run_id": run_id,
        "limits": limits,
        "spent": {"max_sampled_tokens": 0, "max_prompt_tokens": 0, "max_usd": 0, "max_groups": 0},
        "exhausted": False,
        "reached": [],
        "overshoot": {},
        "updated_at": "2026-12-05T19:27:56.000Z" if limits != NO_LIMITS else None,
        "updated_by": "trainer" if limits != NO_LIMITS else None,
    }


BUDGET_EXHAUSTED = (
    429,
    {"error": {"code": "budget_exhausted", "message": 'run "r1" has reached max_groups (2 of 2)',
               "details": {"reached": [{"limit": "max_groups", "max": 2, "spent": 2}]}}},
    {},
)


def quota_exceeded(retry_after: str) -> tuple[int, dict[str, Any], dict[str, str]]:
    return (
        429,
        {"error": {"code": "quota_exceeded", "message": "this token may have 1 groups in flight",
                   "details": {"max_inflight_groups": 1, "in_flight": 1}}},
        {"retry-after": retry_after},
    )


class StandIn(BaseHTTPRequestHandler):
    """Answers as edgeroll does, recording each request: a lease with one batch, acks and
    releases, a run's budget, group starts (after the refusals queued in `refusals`), and a 404
    in the API's error shape for anything else."""

    calls: list[dict[str, Any]] = []
    # What GET /v1/runs/r1 answers for in_flight_generations, call after call (then 0).
    in_flight: list[int] = []
    # What POST /v1/groups answers before it starts one: (status, body, headers), in turn.
    refusals: list[tuple[int, dict[str, Any], dict[str, str]]] = []

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.calls.append({"method": "GET", "path": self.path, "body": None, "headers": dict(self.headers)})
        if self.path == "/v1/datasets":
            self.answer(200, {"datasets": [{"name": "math", "examples": 2}]})
        elif self.path == "/v1/runs/r1":
            left = StandIn.in_flight.pop(0) if StandIn.in_flight else 0
            self.answer(200, {"run_id": "r1", "in_flight_generations": left})
        elif self.path == "/v1/runs/r1/budget":
            self.answer(200, budget_view("r1", NO_LIMITS))
        elif self.path == "/v1/groups/g_2":
            self.answer(200, {"group_id": "g_2", "status": "landed"})
        elif self.path == "/v1/runs/r1/evals":
            self.answer(200, [{"env": "quiz", "policy_version": 2, "k": 1, "pass_at_k": 0.5}])
        else:
            self.answer(404, {"error": {"code": "not_found", "message": f"no route {self.path}"}})

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        if self.path.startswith("/v1/datasets/"):  # the file itself, not JSON
            raw = self.rfile.read(int(self.headers["content-length"]))
            self.calls.append({"method": "POST", "path": self.path, "body": raw, "headers": dict(self.headers)})
            name = self.path.split("/")[-1].split("?")[0]
            self.answer(201, {"name": name, "bytes": len(raw), "result": "created"})
            return
        raw = self.rfile.read(int(self.headers["content-length"] or 0))
        body = json.loads(raw or b"null")
        call = {"method": "POST", "path": self.path, "body": body, "raw": raw, "headers": dict(self.headers)}
        self.calls.append(call)
        if self.path == "/v1/batches/lease":
            self.answer(200, {"batch_id": "b_1", "lease_expires_at": "soon", "groups": [
                {"group_id": "g_1", "episodes": [{"episode_id": "e_1"}, {"episode_id": "e_2"}]}]})
        elif self.path in ("/v1/batches/b_1/ack", "/v1/batches/b_1/release"):
            self.answer(200, {"batch_id": "b_1"})
        elif self.path == "/v1/groups" and StandIn.refusals:
            self.answer(*StandIn.refusals.pop(0))
        elif self.path == "/v1/groups":
            self.answer(202, {"group_id": "g_2", "created": True})
        elif self.path in ("/v1/runs/r1/budget", "/v1/runs/a%2Fb/budget"):
            self.answer(200, budget_view("r1", {**NO_LIMITS, **body}))
        else:
            self.answer(404, {"error": {"code": "not_found", "message": f"no route {self.path}"}})

    def answer(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:  # quiet
        pass


class AgainstStandIn(unittest.TestCase):
    """A client against a fresh stand-in: `StandIn.calls` is what it was sent."""

    def setUp(self) -> None:
        StandIn.calls = []
        StandIn.refusals = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), StandIn)
        # A short poll: shutdown waits for the loop to see it.
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        self.addCleanup(self.server.server_close)
        self.addCleanup(self.server.shutdown)
        self.client = EdgerollClient(f"http://127.0.0.1:{self.server.server_port}/", token="t-1")

    def paths(self) -> list[str]:
        return [call["path"] for call in StandIn.calls]


class Client(AgainstStandIn):
    def test_requests_carry_the_token_and_the_idempotency_key(self) -> None:
        self.client.start_group({"env": "guess-number"}, idempotency_key="k-1")
        headers = {k.lower(): v for k, v in StandIn.calls[0]["headers"].items()}
        self.assertEqual(headers["authorization"], "Bearer t-1")
        self.assertEqual(headers["idempotency-key"], "k-1")
        self.assertEqual(StandIn.calls[0]["body"], {"env": "guess-number"})

    def test_a_refusal_raises_the_apis_code_and_message(self) -> None:
        with self.assertRaises(EdgerollError) as raised:
            self.client.set_policy("r1", 3, max_lag=2)
        self.assertEqual((raised.exception.status, raised.exception.code), (404, "not_found"))
        self.assertIn("POST http://127.0.0.1", str(raised.exception))
        self.assertIn("no route /v1/runs/r1/policy", str(raised.exception))
        self.assertEqual(StandIn.calls[0]["body"], {"version": 3, "max_lag": 2})

    def test_an_interrupting_pause_then_waiting_until_nothing_is_in_flight(self) -> None:
        with self.assertRaises(EdgerollError):
            self.client.set_policy("r1", 4, paused=True, interrupt=True)
        self.assertEqual(StandIn.calls[0]["body"], {"version": 4, "paused": True, "interrupt": True})
        StandIn.in_flight = [3, 1]
        self.client.wait_idle("r1", interval=0.01)
        self.assertEqual(self.paths()[1:], ["/v1/runs/r1"] * 3)
        StandIn.in_flight = [2] * 1000
        with self.assertRaises(TimeoutError):
            self.client.wait_idle("r1", timeout=0.05, interval=0.01)

    def test_push_dataset_sends_the_file_as_it_is_under_its_name(self) -> None:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "math-train.jsonl"
            path.write_bytes(b'{"input": "1+1?"}\n{"input": "2+2?"}\n')
            pushed = self.client.push_dataset(path)
            self.client.push_dataset(str(path), name="other", replace=True)
        self.assertEqual(pushed, {"name": "math-train", "bytes": 36, "result": "created"})
        first, second = StandIn.calls
        headers = {k.lower(): v for k, v in first["headers"].items()}
        self.assertEqual(headers["content-type"], "application/x-ndjson")
        self.assertEqual(headers["authorization"], "Bearer t-1")
        self.assertEqual(first["body"], b'{"input": "1+1?"}\n{"input": "2+2?"}\n')
        self.assertEqual(second["path"], "/v1/datasets/other?replace=true")
        self.assertEqual(self.client.list_datasets(), [{"name": "math", "examples": 2}])

    def test_set_host_sends_the_url_and_what_changes(self) -> None:
        with self.assertRaises(EdgerollError):
            self.client.set_host("http://gpu-a:8000/v1", paused=True, policy_version=None)
        self.assertEqual(self.paths(), ["/v1/hosts"])
        self.assertEqual(
            StandIn.calls[0]["body"],
            {"url": "http://gpu-a:8000/v1", "paused": True, "policy_version": None},
        )

    def test_a_lease_is_a_batch_of_groups(self) -> None:
        batch = self.client.lease(max_groups=8, include=["tokens"])
        self.assertIsInstance(batch, Batch)
        self.assertEqual(batch.batch_id, "b_1")
        self.assertEqual([e["episode_id"] for e in batch.episodes], ["e_1", "e_2"])
        self.assertEqual(StandIn.calls[0]["body"], {"max_groups": 8, "include": ["tokens"]})

    def test_leased_acks_when_the_block_ends(self) -> None:
        with self.client.leased(max_groups=1) as batch:
            self.assertEqual(batch.batch_id, "b_1")
        self.assertEqual(self.paths(), ["/v1/batches/lease", "/v1/batches/b_1/ack"])

    def test_leased_releases_when_the_block_raises(self) -> None:
        with self.assertRaises(RuntimeError), self.client.leased(max_groups=1):
            raise RuntimeError("the step failed")
        self.assertEqual(self.paths(), ["/v1/batches/lease", "/v1/batches/b_1/release"])


class Budget(AgainstStandIn):
    """set_budget and get_budget, and the 429s a start meets: budget_exhausted is raised at once
    (a spent budget does not free itself), quota_exceeded carries its Retry-After."""

    def test_set_budget_sends_only_the_limits_named_and_none_as_null(self) -> None:
        view = self.client.set_budget("r1", max_usd=12.5, max_groups=None)
        (call,) = StandIn.calls
        self.assertEqual((call["method"], call["path"]), ("POST", "/v1/runs/r1/budget"))
        self.assertEqual(call["body"], {"max_usd": 12.5, "max_groups": None})
        self.assertEqual(json.loads(call["raw"]), {"max_usd": 12.5, "max_groups": None})
        self.assertIn(b'"max_groups": null', call["raw"])
        self.assertNotIn(b"max_sampled_tokens", call["raw"])
        self.assertNotIn(b"max_prompt_tokens", call["raw"])
        headers = {k.lower(): v for k, v in call["headers"].items()}
        self.assertEqual(headers["content-type"], "application/json")
        self.assertEqual(headers["authorization"], "Bearer t-1")
        self.assertEqual(view["limits"], {**NO_LIMITS, "max_usd": 12.5})
        self.assertFalse(view["exhausted"])

    def test_set_budget_quotes_the_run_id(self) -> None:
        self.client.set_budget("a/b", max_sampled_tokens=1_000_000)
        self.assertEqual(self.paths(), ["/v1/runs/a%2Fb/budget"])
        self.assertEqual(StandIn.calls[0]["body"], {"max_sampled_tokens": 1_000_000})

    def test_set_budget_refuses_no_limit_or_an_unknown_one_before_sending(self) -> None:
        with self.assertRaises(TypeError) as raised:
            self.client.set_budget("r1")
        self.assertIn("max_sampled_tokens", str(raised.exception))
        with self.assertRaises(TypeError) as raised:
            self.client.set_budget("r1", max_tokens=10)
        self.assertIn("max_tokens", str(raised.exception))
        self.assertEqual(StandIn.calls, [])

    def test_get_budget_reads_the_view(self) -> None:
        view = self.client.get_budget("r1")
        (call,) = StandIn.calls
        self.assertEqual((call["method"], call["path"], call["body"]), ("GET", "/v1/runs/r1/budget", None))
        self.assertEqual(view["limits"], NO_LIMITS)
        self.assertEqual(set(view), {"run_id", "limits", "spent", "exhausted", "reached", "overshoot",
                                     "updated_at", "updated_by"})

    def test_a_start_refused_for_the_budget_raises_its_code_once(self) -> None:
        StandIn.refusals = [BUDGET_EXHAUSTED]
        with self.assertRaises(EdgerollError) as raised:
            self.client.start_group({"env": "quiz", "run_id": "r1"}, idempotency_key="k-1")
        error = raised.exception
        self.assertEqual((error.status, error.code), (429, "budget_exhausted"))
        self.assertEqual(error.details, {"reached": [{"limit": "max_groups", "max": 2, "spent": 2}]})
        self.assertIsNone(error.retry_after)
        self.assertIn("has reached max_groups", error.message)
        self.assertEqual((error.method, self.paths()), ("POST", ["/v1/groups"]))  # not retried

    def test_a_start_over_the_quota_raises_with_its_retry_after(self) -> None:
        StandIn.refusals = [quota_exceeded("5")]
        with self.assertRaises(EdgerollError) as raised:
            self.client.start_group({"env": "quiz", "run_id": "r1"})
        error = raised.exception
        self.assertEqual((error.status, error.code, error.retry_after), (429, "quota_exceeded", 5.0))
        self.assertEqual(error.details, {"max_inflight_groups": 1, "in_flight": 1})
        self.assertEqual(self.paths(), ["/v1/groups"])

    def evaluate(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        return self.client.evaluate(
            "quiz", [{"id": "q1", "input": "1+1?"}], group_size=2, policy_version=2, run_id="r1",
            sampling={"temperature": 1.0},
        )

    def test_evaluate_starts_again_after_a_quotas_retry_after(self) -> None:
        StandIn.refusals = [quota_exceeded("0"), quota_exceeded("0")]
        groups, rows = self.evaluate()
        self.assertEqual(groups, [{"group_id": "g_2", "status": "landed"}])
        self.assertEqual([row["k"] for row in rows], [1])
        self.assertEqual(self.paths(), ["/v1/groups"] * 3 + ["/v1/groups/g_2", "/v1/runs/r1/evals"])
        starts = [{k.lower(): v for k, v in call["headers"].items()} for call in StandIn.calls[:3]]
        keys = {headers["idempotency-key"] for headers in starts}
        self.assertEqual(keys, {"edgeroll-eval:r1:quiz:v2:q1:2"})  # the same start, sent again

    def test_evaluate_does_not_retry_a_spent_budget(self) -> None:
        StandIn.refusals = [quota_exceeded("0"), BUDGET_EXHAUSTED]
        with self.assertRaises(EdgerollError) as raised:
            self.evaluate()
        self.assertEqual(raised.exception.code, "budget_exhausted")
        self.assertEqual(self.paths(), ["/v1/groups", "/v1/groups"])


class RetryAfter(unittest.TestCase):
    def test_seconds_or_an_http_date(self) -> None:
        from email.utils import formatdate

        from edgeroll_client.client import _retry_after

        self.assertEqual(_retry_after("5"), 5.0)
        self.assertEqual(_retry_after("0"), 0.0)
        self.assertIsNone(_retry_after(None))
        self.assertIsNone(_retry_after("soon"))
        in_a_minute = _retry_after(formatdate(time.time() + 60, usegmt=True))
        assert in_a_minute is not None
        self.assertTrue(55 <= in_a_minute <= 61, in_a_minute)
        self.assertEqual(_retry_after(formatdate(time.time() - 60, usegmt=True)), 0.0)


if __name__ == "__main__":
    unittest.main()
