"""edgeroll_client: a trainer-side client for edgeroll, using only the Python standard library.

    from edgeroll_client import EdgerollClient, decode_sample

    client = EdgerollClient("http://127.0.0.1:8787")
    with client.leased(max_groups=8, run_id="my-run") as batch:
        for group in batch.groups:
            ...  # compute the loss
    # leaving the block acks the batch; an exception releases it instead

The bearer token is found as the CLI finds it: the `token` argument, else EDGEROLL_TOKEN, else,
for a Worker on this machine, the token file of a local stack (`npm run dev`) in
.wrangler/state, else none.
"""

from .client import DEFAULT_URL, Batch, EdgerollClient
from .errors import EdgerollError
from .local_token import LOCAL_TOKENS_FILE, discover_token
from .samples import decode_sample

__all__ = [
    "DEFAULT_URL",
    "LOCAL_TOKENS_FILE",
    "Batch",
    "EdgerollClient",
    "EdgerollError",
    "decode_sample",
    "discover_token",
]
