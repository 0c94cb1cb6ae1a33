"""The one error an edgeroll answer raises: the API's error shape, with the request that met it."""

from __future__ import annotations


class EdgerollError(Exception):
    """An answer with edgeroll's error shape: {"error": {"code", "message"}}."""

    def __init__(self, method: str, url: str, status: int, code: str, message: str):
        super().__init__(f"{method} {url} -> {status} {code}: {message}")
        self.status = status
        self.code = code
