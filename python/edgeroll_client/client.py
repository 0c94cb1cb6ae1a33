"""EdgerollClient: the HTTP API a trainer uses (groups, the run's policy and budget, datasets,
leases, acks and releases), over urllib, each refusal raised as an EdgerollError."""

from __future__ import annotations

import json
import os
import re
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import quote

from .errors import EdgerollError
from .local_token import discover_token

DEFAULT_URL = "http://127.0.0.1:8787"

# The limits of a run's budget, as POST /v1/runs/:id/budget names them (src/costs/budget.ts).
BUDGET_LIMITS = ("max_sampled_tokens", "max_prompt_tokens", "max_usd", "max_groups")
# How long evaluate waits, at most, for its token's quota of groups in flight to free.
QUOTA_WAIT_S = 600.0


def _retry_after(value: str | None) -> float | None:
    """Retry-After in seconds: a number of seconds or an HTTP date (None: absent or unreadable)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError, OverflowError):
        return None


@dataclass
class Batch:
    """One lease: pass `batch_id` to ack or release (None when nothing was available)."""

    batch_id: str | None
    lease_expires_at: str | None
    groups: list[dict[str, Any]] = field(default_factory=list)

    @property
    def episodes(self) -> list[dict[str, Any]]:
        return [episode for group in self.groups for episode in group["episodes"]]


class EdgerollClient:
    """The API at `base_url` (else EDGEROLL_URL, else the local stack's), with `token` (else as
    discover_token finds one)."""

    def __init__(self, base_url: str | None = None, token: str | None = None, timeout: float = 60.0):
        self.base_url = (base_url or os.environ.get("EDGEROLL_URL") or DEFAULT_URL).rstrip("/")
        self.token = token if token is not None else discover_token(self.base_url)
        self.timeout = timeout

    def _request(self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        return self._send(method, path, data, {"content-type": "application/json", **(headers or {})})

    def _send(self, method: str, path: str, data: Any, headers: dict[str, str]) -> Any:
        """One call with the token: its JSON answer, or the API's refusal as an EdgerollError."""
        url = self.base_url + path
        request = urllib.request.Request(url, data=data, method=method)
        if self.token:
            request.add_header("authorization", f"Bearer {self.token}")
        for name, value in headers.items():
            request.add_header(name, value)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as error:
            try:
                detail = json.loads(error.read())["error"]
            except Exception:  # not our error shape
                detail = {"code": "http_error", "message": str(error)}
            raise EdgerollError(
                method,
                url,
                error.code,
                detail["code"],
                detail["message"],
                detail.get("details"),
                _retry_after(error.headers.get("retry-after")),
            ) from None

    def start_group(self, request: dict[str, Any], idempotency_key: str | None = None) -> dict[str, Any]:
        """Starts a group. Refused with a 429 when its run has spent a limit of its budget
        (EdgerollError code `budget_exhausted`: raise the limit, waiting does not help) or when
        this token has its most groups in flight (`quota_exceeded`: start it again after the
        error's `retry_after` seconds). Neither is retried here."""
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
        self,
        run_id: str,
        version: int,
        max_lag: int | None = None,
        paused: bool | None = None,
        interrupt: bool | None = None,
    ) -> dict[str, Any]:
        """Asynchronous RL: the policy the trainer trains now (trainer role). Groups of the run
        that name no policy_version take it; with max_lag, ones too far behind are refused;
        paused=True holds new generations, and with interrupt=True aborts those in flight too."""
        body: dict[str, Any] = {"version": version}
        if max_lag is not None:
            body["max_lag"] = max_lag
        if paused is not None:
            body["paused"] = paused
        if interrupt is not None:
            body["interrupt"] = interrupt
        return self._request("POST", f"/v1/runs/{run_id}/policy", body)

    def wait_idle(self, run_id: str, timeout: float = 600.0, interval: float = 0.2) -> None:
        """Waits until the run has no generation in flight (after a pause: the hosts may load
        new weights). Raises TimeoutError after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            in_flight = self.get_run(run_id)["in_flight_generations"]
            if in_flight == 0:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"run {run_id} still has {in_flight} generations in flight")
            time.sleep(interval)

    def get_policy(self, run_id: str) -> dict[str, Any]:
        return self._request("GET", f"/v1/runs/{run_id}/policy")

    def set_budget(self, run_id: str, **limits: float | None) -> dict[str, Any]:
        """Limits what the run may spend (trainer role), before or during the run: any of
        `max_sampled_tokens`, `max_prompt_tokens`, `max_usd` and `max_groups`. Only the limits
        named are sent: a number sets one, None removes it, one not named stays as it was. Once
        the run's spend (landed and in flight) reaches a limit, its new groups are refused (429
        `budget_exhausted`) and its producer waits; raising the limit lets them through again.
        Returns the budget view: run_id, limits, spent, exhausted, reached, overshoot,
        updated_at and updated_by."""
        unknown = sorted(set(limits) - set(BUDGET_LIMITS))
        if unknown:
            raise TypeError(f"set_budget: no limit {', '.join(unknown)}; the limits are {', '.join(BUDGET_LIMITS)}")
        if not limits:
            raise TypeError(f"set_budget: name at least one of {', '.join(BUDGET_LIMITS)} (None removes one)")
        return self._request("POST", f"/v1/runs/{quote(run_id, safe='')}/budget", limits)

    def get_budget(self, run_id: str) -> dict[str, Any]:
        """The run's budget against what it has spent, as set_budget answers it (its limits all
        None when none was set)."""
        return self._request("GET", f"/v1/runs/{quote(run_id, safe='')}/budget")

    def list_hosts(self) -> dict[str, Any]:
        """The inference fleet: each host's state, episodes in flight, cap and declared version."""
        return self._request("GET", "/v1/hosts")

    def set_host(self, url: str, **update: Any) -> dict[str, Any]:
        """A rolling weight sync, host by host (trainer role): `paused=True` sends the host no
        new generations; `policy_version=N` records what it serves now (None: no longer declared)."""
        return self._request("POST", "/v1/hosts", {"url": url, **update})

    def get_run(self, run_id: str) -> dict[str, Any]:
        """The run's progress, policy and pacing: groups in flight and landed but unleased,
        by version (what a producer keeps below a bound so it never runs ahead); `costs`, what
        it has spent (`total`, `landed`, `in_flight`, `groups_in_flight`, `groups_unanswered`),
        and `budget`, as get_budget answers it (None when none was set)."""
        return self._request("GET", f"/v1/runs/{run_id}")

    def start_producer(self, run_id: str, **request: Any) -> dict[str, Any]:
        """Makes the run produce itself, server side, from a dataset uploaded to edgeroll
        (`env`, `dataset`, `group_size`, `sampling`, and `epochs`, `shuffle_seed`, `max_ahead`,
        `dynamic_sampling={"max_resamples": k}`, `sampler="pool"`, ... as POST
        /v1/runs/:id/producer takes them). Returns the producer's progress."""
        return self._request("POST", f"/v1/runs/{run_id}/producer", request)

    def get_producer(self, run_id: str) -> dict[str, Any]:
        """Where the run's producer has got to: `state`, each epoch's examples done, its groups."""
        return self._request("GET", f"/v1/runs/{run_id}/producer")

    def stop_producer(self, run_id: str) -> dict[str, Any]:
        """Stops the run's producer: its groups in flight land, no new one starts."""
        return self._request("DELETE", f"/v1/runs/{run_id}/producer")

    def wait_for_producer(self, run_id: str, timeout: float | None = None, interval: float = 1.0) -> dict[str, Any]:
        """Polls until the run's producer is `done` or `stopped` (or `timeout` seconds pass)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            view = self.get_producer(run_id)
            if view["state"] != "running":
                return view
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"run {run_id!r}'s producer is still running")
            time.sleep(interval)

    def get_evals(self, run_id: str) -> list[dict[str, Any]]:
        """The run's evaluation metrics (the `eval_results` view): per environment, its
        env_version, policy version and k, pass_at_k, maj_at_k, avg_reward and avg_success."""
        return self._request("GET", f"/v1/runs/{run_id}/evals")

    def evaluate(
        self,
        env: str,
        examples: list[dict[str, Any]],
        *,
        group_size: int,
        policy_version: int,
        run_id: str,
        sampling: dict[str, Any],
        k: list[int] | None = None,
        concurrency: int = 8,
        **request: Any,
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Evaluates one policy version: an evaluation group (`kind: "eval"`) per example, then
        the version's rows of `eval_results` (only those `k`, when given). Returns the landed
        groups and the rows. Training goes on meanwhile: evaluations are never leased. Keys
        name the version, so a rerun resumes and the next version starts groups of its own. A
        start over the token's quota of groups in flight is sent again after its Retry-After
        (for up to QUOTA_WAIT_S); one refused for the run's budget raises at once."""
        from concurrent.futures import ThreadPoolExecutor

        def one(example: dict[str, Any]) -> dict[str, Any]:
            body = {
                **request,
                "env": env,
                "example": example,
                "group_size": group_size,
                "run_id": run_id,
                "kind": "eval",
                "policy_version": policy_version,
                "sampling": sampling,
            }
            key = f"edgeroll-eval:{run_id}:{env}:v{policy_version}:{example['id']}:{group_size}"[:255]
            started = self._start_within_quota(body, key)
            return self.wait_for_group(started["group_id"])

        with ThreadPoolExecutor(max_workers=max(1, min(concurrency, len(examples)))) as pool:
            groups = list(pool.map(one, examples))
        rows = [
            row
            for row in self.get_evals(run_id)
            if row["env"] == env and row["policy_version"] == policy_version and (k is None or row["k"] in k)
        ]
        return groups, rows

    def _start_within_quota(self, body: dict[str, Any], key: str, wait: float = QUOTA_WAIT_S) -> dict[str, Any]:
        """start_group, sent again while it is refused `quota_exceeded` (the token's groups in
        flight free as they land), after each refusal's Retry-After. A refused start created
        nothing, so sending it again is safe. Anything else, `budget_exhausted` above all
        (a spent budget does not free itself), raises at once."""
        deadline = time.monotonic() + wait
        while True:
            try:
                return self.start_group(body, idempotency_key=key)
            except EdgerollError as error:
                if error.code != "quota_exceeded" or time.monotonic() > deadline:
                    raise
                pause = 5.0 if error.retry_after is None else error.retry_after
                time.sleep(min(pause, max(0.0, deadline - time.monotonic())))

    def push_dataset(
        self, path: str | os.PathLike[str], name: str | None = None, replace: bool = False
    ) -> dict[str, Any]:
        """Pushes a JSONL dataset (trainer role), streamed from disk as it is. The Worker checks
        every line and stores nothing if one is bad (`invalid_dataset`, naming the first ten).
        `name` defaults to the file's name without .jsonl. The same bytes again answer
        `result: "unchanged"`; other bytes under a taken name raise `dataset_conflict` unless
        `replace`. Returns name, bytes, examples, sha256, uploaded_at and result."""
        file = Path(path)
        name = name or re.sub(r"\.(jsonl|ndjson)$", "", file.name, flags=re.IGNORECASE)
        query = "?replace=true" if replace else ""
        headers = {"content-type": "application/x-ndjson", "content-length": str(file.stat().st_size)}
        with file.open("rb") as data:  # urllib sends a file in blocks, given its length
            return self._send("POST", f"/v1/datasets/{quote(name, safe='')}{query}", data, headers)

    def list_datasets(self) -> list[dict[str, Any]]:
        """Every dataset pushed: name, bytes, examples, sha256 and uploaded_at."""
        return self._request("GET", "/v1/datasets")["datasets"]

    def lease(self, **request: Any) -> Batch:
        """Leases whole scored groups; see docs/batches.md for the batch format. An empty batch is normal."""
        answer = self._request("POST", "/v1/batches/lease", request)
        return Batch(answer["batch_id"], answer["lease_expires_at"], answer["groups"])

    def ack(self, batch_id: str) -> dict[str, Any]:
        return self._request("POST", f"/v1/batches/{batch_id}/ack", {})

    def release(self, batch_id: str) -> dict[str, Any]:
        return self._request("POST", f"/v1/batches/{batch_id}/release", {})

    def rescore(self, group_id: str, all: bool = False) -> dict[str, Any]:
        """Grades a landed group's judge_error episodes again (every episode that played to an
        end, with all=True), once the judge is back: {group_id, rescored, judge_errors, group}."""
        return self._request("POST", f"/v1/groups/{group_id}/rescore", {"all": all})

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
