"""Which bearer token a client on this machine sends, found as the CLI and the TypeScript client
find it (src/client/local-token.ts): EDGEROLL_TOKEN, else, only for a Worker on this machine, the
token file a local stack (`npm run dev`, `npm run demo`) keeps in .wrangler/state, else none."""

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


def discover_token(base_url: str) -> str | None:
    """EDGEROLL_TOKEN, else a local stack's token (only for a local URL), else None."""
    if os.environ.get("EDGEROLL_TOKEN"):
        return os.environ["EDGEROLL_TOKEN"]
    if urllib.parse.urlsplit(base_url).hostname not in _LOOPBACK:
        return None  # a local stack's token is never sent to a deployment
    for root in (Path.cwd(), _checkout()):
        file = root / ".wrangler" / "state" / LOCAL_TOKENS_FILE if root else None
        if file and file.is_file():
            return json.loads(file.read_text())["admin"]
    return None
