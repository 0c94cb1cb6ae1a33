"""Token-exact trainer samples from a lease, in either of the batch format's encodings (JSON
lists, or base64 of little-endian arrays), as plain Python lists."""

from __future__ import annotations

import array
import base64
import sys
from typing import Any


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
    policy sampled (all 0 in an over-long episode its group masks, `overlong: "mask"`),
    `logprobs` the host's sampling logprob there (0 elsewhere), `advantages` the advantage each
    sampled token gets (0 elsewhere), and in a distilled group `teacher_logprobs` the teacher's
    logprob there (0 elsewhere). `policy_versions` is the policy version that
    sampled each token (-1 where none did); absent from servers older than per-token versions,
    and then absent here too. With numpy, base64 arrays decode faster as
    `np.frombuffer(base64.b64decode(s), "<i4")` (`"u1"` for the mask, `"<f4"` for the floats).
    """
    return {
        "turns": sample["turns"],
        "token_ids": _array(_INT32, sample["token_ids"]),
        "mask": _array("B", sample["mask"]),
        "logprobs": _array("f", sample["logprobs"]),
        "advantages": _array("f", sample["advantages"]),
        **(
            {"policy_versions": _array(_INT32, sample["policy_versions"])}
            if "policy_versions" in sample
            else {}
        ),
        # On-policy distillation: the teacher's logprob of each sampled token (0 elsewhere).
        **(
            {"teacher_logprobs": _array("f", sample["teacher_logprobs"])}
            if "teacher_logprobs" in sample
            else {}
        ),
    }
