"""The HTTP side of the protocol: routes, bearer auth, the busy answer, Idempotency-Key
replays and the one error body, {"error": {"code", "message"}}. See docs/remote-env-protocol.md."""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
import sys
import threading
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .errors import EnvironmentContractError, EnvironmentHookError, error_message
from .idempotency import IdempotencyCache
from .service import EnvService, HttpError

MAX_BODY_BYTES = 64 * 1024 * 1024
MAX_KEY_LENGTH = 512
ROUTES = {"/info": "GET", "/start": "POST", "/step": "POST", "/score": "POST"}


def encode(payload: Any) -> bytes:
    return json.dumps(payload, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


class EnvHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def __init__(
        self,
        address: tuple[str, int],
        service: EnvService,
        *,
        token: str | None = None,
        max_inflight: int = 64,
        cache_size: int = 4096,
        log_requests: bool = False,
    ) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, EnvRequestHandler)
        self.service = service
        self.token = token or None
        self.inflight = threading.BoundedSemaphore(max_inflight)
        self.cache = IdempotencyCache(cache_size)
        self.log_requests = log_requests

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


class EnvRequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the rollout engine reuses connections
    server_version = "edgeroll_env/0.1"
    timeout = 120  # an idle keep-alive connection is closed after this many seconds
    # Headers and body are two writes; with Nagle on, the body waits for the client's delayed
    # ACK, 40 ms a call on Linux (measured: 22 -> 4,400 sequential steps a second).
    disable_nagle_algorithm = True
    server: EnvHTTPServer

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self._handle("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._handle("POST")

    def do_PUT(self) -> None:  # noqa: N802
        self._handle("PUT")

    def do_DELETE(self) -> None:  # noqa: N802
        self._handle("DELETE")

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        if self.server.log_requests:
            super().log_message(format, *args)

    def _handle(self, method: str) -> None:
        path = self.path.split("?", 1)[0]
        try:
            self._route(method, path)
        except HttpError as error:
            self._send_error(error)
        except Exception as error:  # noqa: BLE001 - the environment's code raised
            known = isinstance(error, (EnvironmentContractError, EnvironmentHookError))
            message = str(error) if known else error_message(error)
            print(f"edgeroll_env: {path}: env_error: {message}", file=sys.stderr)
            if not isinstance(error, EnvironmentContractError):
                traceback.print_exc(file=sys.stderr)
            self._send_error(HttpError(500, "env_error", message))

    def _route(self, method: str, path: str) -> None:
        allowed = ROUTES.get(path)
        if allowed is None:
            self.close_connection = True
            raise HttpError(404, "not_found", f"no route {path} (routes: {', '.join(ROUTES)})")
        if method != allowed:
            self.close_connection = True
            raise HttpError(
                405, "method_not_allowed", f"{path} takes {allowed}", {"Allow": allowed}
            )
        self._authorise()
        if method == "GET":
            self._send(200, encode(self.server.service.info()))
            return
        raw = self._read_body()
        if not self.server.inflight.acquire(blocking=False):
            raise HttpError(503, "busy", "the environment is busy; retry", {"Retry-After": "1"})
        # The slot is the environment's work, not the reply's bytes: it is free again before the
        # client can read the answer, so a client's next call never finds its own call's slot.
        try:
            status, payload, headers = self._answer(path, raw)
        finally:
            self.server.inflight.release()
        self._send(status, payload, headers)

    def _answer(self, path: str, raw: bytes) -> tuple[int, bytes, dict | None]:
        try:
            body = json.loads(
                raw.decode("utf-8") if raw else "null", parse_constant=_reject_constant
            )
        except (UnicodeDecodeError, ValueError) as error:
            raise HttpError(400, "bad_request", f"body is not valid JSON ({error})") from None
        if not isinstance(body, dict):
            raise HttpError(400, "bad_request", "body must be a JSON object")
        handler = getattr(self.server.service, path[1:])
        compute = lambda: encode(handler(body))  # noqa: E731
        key = self.headers.get("Idempotency-Key")
        if key is None:
            return 200, compute(), None
        if key == "" or len(key) > MAX_KEY_LENGTH:
            raise HttpError(
                400, "bad_request", f"Idempotency-Key must be 1 to {MAX_KEY_LENGTH} characters"
            )
        fingerprint = hashlib.sha256(
            json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
        ).hexdigest()
        answer, replayed = self.server.cache.run(path, key, fingerprint, compute)
        return 200, answer, {"Idempotent-Replayed": "true"} if replayed else None

    def _authorise(self) -> None:
        token = self.server.token
        if token is None:
            return
        header = self.headers.get("Authorization", "")
        scheme, _, given = header.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            given.strip().encode(), token.encode()
        ):
            self.close_connection = True  # the body is left unread
            raise HttpError(
                401,
                "unauthorized",
                "missing or wrong bearer token"
                if header
                else "missing Authorization: Bearer <token>",
                {"WWW-Authenticate": 'Bearer realm="edgeroll_env"'},
            )

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return self._read_chunked()
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            self.close_connection = True
            raise HttpError(400, "bad_request", "Content-Length is not a number") from None
        if length > MAX_BODY_BYTES:
            self.close_connection = True
            raise HttpError(413, "payload_too_large", f"body over {MAX_BODY_BYTES} bytes")
        return self.rfile.read(length) if length > 0 else b""

    def _read_chunked(self) -> bytes:
        parts, total = [], 0
        while True:
            size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return b"".join(parts)
            total += size
            if total > MAX_BODY_BYTES:
                self.close_connection = True
                raise HttpError(413, "payload_too_large", f"body over {MAX_BODY_BYTES} bytes")
            parts.append(self.rfile.read(size))
            self.rfile.readline()

    def _send_error(self, error: HttpError) -> None:
        detail = {} if error.details is None else {"details": error.details}
        body = encode({"error": {"code": error.code, "message": error.message, **detail}})
        self._send(error.status, body, error.headers)

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
