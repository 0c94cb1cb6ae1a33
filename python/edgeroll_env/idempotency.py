"""The last answers by Idempotency-Key, so a retried call gets the first answer, not a second
run of the environment's code (whose external effects must happen once)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from .service import HttpError


@dataclass
class _Entry:
    fingerprint: str
    answer: bytes | None = None  # None while the first call is still running
    ready: threading.Event = field(default_factory=threading.Event)


class IdempotencyCache:
    """Successful answers by (path, key), least recently used first out. A failed call is not
    kept: its retry runs again. A key reused with a different body is refused (422)."""

    def __init__(self, capacity: int = 4096) -> None:
        self.capacity = capacity
        self._entries: OrderedDict[tuple[str, str], _Entry] = OrderedDict()
        self._lock = threading.Lock()

    def run(
        self, path: str, key: str, fingerprint: str, compute: Callable[[], bytes]
    ) -> tuple[bytes, bool]:
        """(answer, replayed): the cached answer for the key, or compute's, now cached."""
        slot = (path, key)
        while True:
            with self._lock:
                entry = self._entries.get(slot)
                if entry is None:
                    entry = _Entry(fingerprint)
                    self._entries[slot] = entry
                    break
                if entry.fingerprint != fingerprint:
                    raise HttpError(
                        422,
                        "idempotency_key_reused",
                        f'Idempotency-Key "{key}" was used for a different {path} request',
                    )
                if entry.answer is not None:
                    self._entries.move_to_end(slot)
                    return entry.answer, True
            # The same call is running on another thread: wait for its answer, then look again
            # (it is gone if that call failed, and this one runs in its place).
            entry.ready.wait()
        try:
            answer = compute()
        except BaseException:
            with self._lock:
                if self._entries.get(slot) is entry:
                    del self._entries[slot]
            entry.ready.set()
            raise
        with self._lock:
            entry.answer = answer
            self._evict()
        entry.ready.set()
        return answer, False

    def _evict(self) -> None:
        while len(self._entries) > self.capacity:
            oldest = next(iter(self._entries))
            if self._entries[oldest].answer is None:
                break  # still running; it leaves when it finishes or fails
            del self._entries[oldest]

    def __len__(self) -> int:
        return len(self._entries)
