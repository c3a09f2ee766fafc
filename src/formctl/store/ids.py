"""Instance ids: generated here, never taken from user text into a path unchecked."""

from __future__ import annotations

import re
import time

_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"
_ID_PATTERN = re.compile(r"^form_[0-9a-z]{1,16}_[0-9a-z]{6}$")


def _base36(n: int) -> str:
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = _ALPHABET[r] + out
        if n == 0:
            return out


def new_instance_id() -> str:
    """``form_<ms since epoch, base 36>_<6 random base-36 chars>``: sortable by creation, unique across processes."""
    import secrets  # here, not at the top: the commands that only read never make an id

    stamp = _base36(time.time_ns() // 1_000_000)
    tail = "".join(secrets.choice(_ALPHABET) for _ in range(6))
    return f"form_{stamp}_{tail}"


def is_instance_id(text: str) -> bool:
    """True iff ``text`` has the exact shape of a generated id (safe to use in a file name)."""
    return isinstance(text, str) and bool(_ID_PATTERN.match(text))
