"""JavaScript's whitespace and number-to-string rules, so Python ports of the TypeScript
environments give byte-identical messages for the same transcripts."""

from __future__ import annotations

import math
from decimal import Decimal

# What JS's \s and String.prototype.trim() treat as whitespace (Python's differ: \x1c-\x1f
# count in Python, U+FEFF counts in JS).
WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
WS_CLASS = "[" + "".join(f"\\u{ord(c):04x}" for c in WHITESPACE) + "]"


def trim(text: str) -> str:
    return text.strip(WHITESPACE)


def number_string(value: float | int) -> str:
    """String(n) for the common cases: 1.0 -> "1", 0.5 -> "0.5", NaN -> "NaN"."""
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        if value.is_integer() and abs(value) < 2**53:
            return str(int(value))
        if value.is_integer() and abs(value) < 1e21:
            return format(Decimal(repr(value)), "f")  # shortest digits, zero-padded, as JS
        text = repr(value)
        if "e" in text and 1e-6 <= abs(value) < 1e-4:
            return format(Decimal(text), "f")  # JS writes these out; Python's repr does not
        if "e" in text:
            mantissa, exponent = text.split("e")
            sign = "-" if exponent.startswith("-") else "+"
            text = f"{mantissa}e{sign}{exponent.lstrip('+-').lstrip('0') or '0'}"
        return text
    return str(value)
