"""A trainer-side client for edgeroll, using only the Python standard library.

    client = EdgerollClient("http://127.0.0.1:8787")
    with client.leased(max_groups=8, run_id="my-run") as batch:
        for group in batch.groups:
            ...  # compute the loss
    # leaving the block acks the batch; an exception releases it instead

The bearer token is found as the CLI finds it: the `token` argument, else EDGEROLL_TOKEN, else,
for a Worker on this machine, the token file of a local stack (`npm run dev`) in
.wrangler/state, else none.
"""

from __future__ import annotations

import array
import base64
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

DEFAULT_URL = "http://127.0.0.1:8787"
LOCAL_TOKENS_FILE = "edgeroll-tokens.json"
_LOOPBACK = {"localhost", "127.0.0.1", "::1"}
# This file's checkout, for when the script runs from somewhere else.
_CHECKOUT = Path(__file__).resolve().parents[2]


def discover_token(base_url: str) -> str | None:
    """EDGEROLL_TOKEN, else a local stack's token (only for a local URL), else None."""
    if os.environ.get("EDGEROLL_TOKEN"):
        return os.environ["EDGEROLL_TOKEN"]
    if urllib.parse.urlsplit(base_url).hostname not in _LOOPBACK:
        return None  # a local stack's token is never sent to a deployment
    for root in (Path.cwd(), _CHECKOUT):
        file = root / ".wrangler" / "state" / LOCAL_TOKENS_FILE
        if file.is_file():
            return json.loads(file.read_text())["admin"]
    return None


def _array(code: str, value: Any) -> list:
    """A sample array from the batch format: a JSON list, or base64 of little-endian bytes."""
    if isinstance(value, list):
        return value
    values = array.array(code)
    values.frombytes(base64.b64decode(value))
    if sys.byteorder != "little":
        values.byteswap()
    return values.tolist()


# int32 ids: "i" is 4 bytes wherever CPython runs, "l" where it is not.
_INT32 = "i" if array.array("i").itemsize == 4 else "l"


def decode_sample(sample: dict[str, Any]) -> dict[str, Any]:
    """One token-exact sample, in either encoding, as plain lists.

    `token_ids` is the sequence the host saw and produced, `mask` is 1 exactly on the tokens the
    policy sampled, `logprobs` the host's sampling logprob there (0 elsewhere), `advantages` the
    advantage each sampled token gets (0 elsewhere), and in a distilled group `teacher_logprobs`
    the teacher's logprob there (0 elsewhere). With numpy, base64 arrays decode faster as
    `np.frombuffer(base64.b64decode(s), "<i4")` (`"u1"` for the mask, `"<f4"` for the floats).
    """
    return {
        "turns": sample["turns"],
        "token_ids": _array(_INT32, sample["token_ids"]),
        "mask": _array("B", sample["mask"]),
        "logprobs": _array("f", sample["logprobs"]),
        "advantages": _array("f", sample["advantages"]),
        # On-policy distillation: the teacher's logprob of each sampled token (0 elsewhere).
        **(
            {"teacher_logprobs": _array("f", sample["teacher_logprobs"])}
            if "teacher_logprobs" in sample
            else {}
        ),
    }


class EdgerollError(Exception):
    """An answer with edgeroll's error shape: {"error": {"code", "message"}}."""

    def __init__(self, method: str, url: str, status: int, code: str, message: str):
        super().__init__(f"{method} {url} -> {status} {code}: {message}")
        self.status = status
        self.code = code


@dataclass
class Batch:
    batch_id: str | None
    lease_expires_at: str | None
    groups: list[dict[str, Any]] = field(default_factory=list)

    @property
    def episodes(self) -> list[dict[str, Any]]:
        return [episode for group in self.groups for episode in group["episodes"]]


class EdgerollClient:
    def __init__(self, base_url: str | None = None, token: str | None = None, timeout: float = 60.0):
        self.base_url = (base_url or os.environ.get("EDGEROLL_URL") or DEFAULT_URL).rstrip("/")
        self.token = token if token is not None else discover_token(self.base_url)
        self.timeout = timeout

    def _request(self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> Any:
        url = self.base_url + path
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, method=method)
        request.add_header("content-type", "application/json")
        if self.token:
            request.add_header("authorization", f"Bearer {self.token}")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as error:
            try:
                detail = json.loads(error.read())["error"]
            except Exception:  # not our error shape
                detail = {"code": "http_error", "message": str(error)}
            raise EdgerollError(method, url, error.code, detail["code"], detail["message"]) from None

    def start_group(self, request: dict[str, Any], idempotency_key: str | None = None) -> dict[str, Any]:
        headers = {"idempotency-key": idempotency_key} if idempotency_key else None
        return self._request("POST", "/v1/groups", request, headers)

    def get_group(self, group_id: str) -> dict[str, Any]:
        return self._request("GET", f"/v1/groups/{group_id}")

    def wait_for_group(self, group_id: str, timeout: float = 600.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            group = self.get_group(group_id)
            if group["status"] in ("landed", "failed"):
                return group
            if time.monotonic() > deadline:
                raise TimeoutError(f"group {group_id} is still {group['status']}")
            time.sleep(0.5)

    def set_policy(
        self, run_id: str, version: int, max_lag: int | None = None, paused: bool | None = None
    ) -> dict[str, Any]:
        """Asynchronous RL: the policy the trainer trains now (trainer role). Groups of the run
        that name no policy_version take it; with max_lag, ones too far behind are refused."""
        body: dict[str, Any] = {"version": version}
        if max_lag is not None:
            body["max_lag"] = max_lag
        if paused is not None:
            body["paused"] = paused
        return self._request("POST", f"/v1/runs/{run_id}/policy", body)

    def get_policy(self, run_id: str) -> dict[str, Any]:
        return self._request("GET", f"/v1/runs/{run_id}/policy")

    def get_run(self, run_id: str) -> dict[str, Any]:
        """The run's progress, policy and pacing: groups in flight and landed but unleased,
        by version (what a producer keeps below a bound so it never runs ahead)."""
        return self._request("GET", f"/v1/runs/{run_id}")

    def lease(self, **request: Any) -> Batch:
        """Leases whole scored groups; see the README's batch format. An empty batch is normal."""
        answer = self._request("POST", "/v1/batches/lease", request)
        return Batch(answer["batch_id"], answer["lease_expires_at"], answer["groups"])

    def ack(self, batch_id: str) -> dict[str, Any]:
        return self._request("POST", f"/v1/batches/{batch_id}/ack", {})

    def release(self, batch_id: str) -> dict[str, Any]:
        return self._request("POST", f"/v1/batches/{batch_id}/release", {})

    @contextmanager
    def leased(self, **request: Any) -> Iterator[Batch]:
        """Acks the batch when the block finishes; releases it at once if the block raises."""
        batch = self.lease(**request)
        try:
            yield batch
        except BaseException:
            if batch.batch_id:
                self.release(batch.batch_id)
            raise
        if batch.batch_id:
            self.ack(batch.batch_id)
