"""Which bearer token a client on this machine sends, found as the CLI and the TypeScript client
find it (src/client/local-token.ts): EDGEROLL_TOKEN, else, only for a Worker on this machine, the
token file of the local stack serving that URL (each stack, `npm run dev` or `npm run demo`,
notes its port and state directory in .wrangler/edgeroll-stacks/<port>.json), else the token
file in .wrangler/state, else none."""

from __future__ import annotations

import json
import os
import urllib.parse
from pathlib import Path

LOCAL_TOKENS_FILE = "edgeroll-tokens.json"
_LOOPBACK = {"localhost", "127.0.0.1", "::1"}


def _checkout() -> Path | None:
    """The edgeroll checkout this package sits in (python/edgeroll_client/), when it runs from
    one (PYTHONPATH=python, or an editable install), so a script started elsewhere still finds
    the local stack's tokens; None for an installed copy."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "wrangler.toml").is_file() else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except PermissionError:
        return True  # it exists, but is not ours
    except OSError:
        return False
    return True


def _serving(root: Path, port: int) -> Path | None:
    """The state directory of the live local stack a checkout notes on this port, if any."""
    note = root / ".wrangler" / "edgeroll-stacks" / f"{port}.json"
    try:
        stack = json.loads(note.read_text())
    except (OSError, ValueError):
        return None
    pid = stack.get("pid")
    return Path(stack["state_dir"]) if isinstance(pid, int) and _alive(pid) else None


def discover_token(base_url: str) -> str | None:
    """EDGEROLL_TOKEN, else the token of the local stack serving base_url (only for a local
    URL), else the default state directory's, else None."""
    if os.environ.get("EDGEROLL_TOKEN"):
        return os.environ["EDGEROLL_TOKEN"]
    url = urllib.parse.urlsplit(base_url)
    if url.hostname not in _LOOPBACK:
        return None  # a local stack's token is never sent to a deployment
    port = url.port or (443 if url.scheme == "https" else 80)
    roots = [root for root in (Path.cwd(), _checkout()) if root]
    for root in roots:
        state = _serving(root, port)
        if state is not None:
            file = state / LOCAL_TOKENS_FILE
            return json.loads(file.read_text())["admin"] if file.is_file() else None
    for root in roots:
        file = root / ".wrangler" / "state" / LOCAL_TOKENS_FILE
        if file.is_file():
            return json.loads(file.read_text())["admin"]
    return None
