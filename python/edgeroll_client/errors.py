"""The one error an edgeroll answer raises: the API's error shape, with the request that met it."""

from __future__ import annotations

from typing import Any


class EdgerollError(Exception):
    """An answer with edgeroll's error shape: {"error": {"code", "message", "details"?}}.

    Branch on `code`, the API's stable name for the problem: a 429 `budget_exhausted` (the run
    has spent a limit of its budget; waiting does not help, raising the limit does) or
    `quota_exceeded` (the token has its most groups in flight; start again after `retry_after`
    seconds, as the answer's Retry-After says)."""

    def __init__(
        self,
        method: str,
        url: str,
        status: int,
        code: str,
        message: str,
        details: Any = None,
        retry_after: float | None = None,
    ):
        super().__init__(f"{method} {url} -> {status} {code}: {message}")
        self.method = method
        self.url = url
        self.status = status
        self.code = code
        self.message = message
        # What the API adds to some refusals (budget_exhausted: {"reached": [...]}), else None.
        self.details = details
        # Seconds the answer's Retry-After asks to wait (quota_exceeded), else None.
        self.retry_after = retry_after
