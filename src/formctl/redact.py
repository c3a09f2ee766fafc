"""Secrets never written down: the one place that knows which strings are secret, and takes them
out of text and data before formctl prints or saves it.

What is secret: every configured key (``ANTHROPIC_API_KEY``, ``OPENAI_API_KEY``, and any other
variable named like a credential: ``*_API_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*_PASSWORD``,
``PGPASSWORD``), read from the environment when first asked, and whatever a part of formctl
registers as it learns one (the CLI registers a PostgreSQL store's password when it opens the
store: the DSN is parsed in the store layer, which this module does not import).

Where it is applied (docs/chat.md, "Secrets"): where outside text enters a conversation, in the
chat loop: the person's message, the model's streamed text and whole reply (its text and tool
arguments), each tool result and each error line. Everything formctl prints or saves about a
conversation is made from those (the chat's output, the saved conversation, a ``--record``
transcript, eval's records, the store's values), so one point covers them all. ``--debug``'s
traceback is scrubbed by the CLI with the same function.

A secret is written ``[secret]``. A credential under 8 characters in the environment is not
treated as one (no provider issues a key that short, and a variable such as ``X_TOKEN=1`` would
garble every "1"), nor a registered one under 6. This
module imports only the standard library, so every layer may use it.
"""

from __future__ import annotations

import os
import re
import threading
from typing import Any

__all__ = ["MASK", "StreamRedactor", "redact", "redact_data", "register", "secrets"]

MASK = "[secret]"
SHORTEST = 8  # a credential read from the environment
SHORTEST_REGISTERED = 6  # a secret formctl was told of (a store's password), which users choose
_CREDENTIAL = re.compile(r"(API_KEY|_TOKEN|_SECRET|_PASSWORD|^PGPASSWORD)$", re.IGNORECASE)

_registered: set[str] = set()
_lock = threading.Lock()
_cache: tuple[tuple[str, ...], re.Pattern[str] | None] | None = None


def register(*values: str | None) -> None:
    """Treat each of ``values`` as a secret from now on, in this process."""
    global _cache
    fresh = {v.strip() for v in values if isinstance(v, str) and len(v.strip()) >= SHORTEST_REGISTERED}
    with _lock:
        if not fresh <= _registered:
            _registered.update(fresh)
            _cache = None


def secrets() -> tuple[str, ...]:
    """Every secret known now, longest first: the environment's credentials and what was registered."""
    return _pattern()[0]


def _pattern() -> tuple[tuple[str, ...], re.Pattern[str] | None]:
    global _cache
    found = {v.strip() for name, v in os.environ.items() if _CREDENTIAL.search(name) and len(v.strip()) >= SHORTEST}
    with _lock:
        found |= _registered
        values = tuple(sorted(found, key=lambda v: (-len(v), v)))
        if _cache is None or _cache[0] != values:
            _cache = (values, re.compile("|".join(map(re.escape, values))) if values else None)
        return _cache


def redact(text: str) -> str:
    """``text`` with every secret written :data:`MASK`."""
    pattern = _pattern()[1]
    if pattern is None or not isinstance(text, str):
        return text
    return pattern.sub(MASK, text)


def redact_data(value: Any, _depth: int = 0) -> Any:
    """JSON data (dicts, lists, strings) with every secret in a string, key or value, written
    :data:`MASK`; the same object when nothing in it is secret."""
    pattern = _pattern()[1]
    if pattern is None:
        return value
    return _redact_data(value, pattern, _depth)


def _redact_data(value: Any, pattern: re.Pattern[str], depth: int) -> Any:
    if isinstance(value, str):
        return pattern.sub(MASK, value) if pattern.search(value) else value
    if depth > 200:  # deeper than any conversation nests; the bound keeps off the recursion limit
        return value
    if isinstance(value, dict):
        items = [(_redact_data(k, pattern, depth + 1), _redact_data(v, pattern, depth + 1)) for k, v in value.items()]
        changed = any(k is not k0 or v is not v0 for (k, v), (k0, v0) in zip(items, value.items()))
        return dict(items) if changed else value
    if isinstance(value, list):
        out = [_redact_data(v, pattern, depth + 1) for v in value]
        return out if any(a is not b for a, b in zip(out, value)) else value
    return value


class StreamRedactor:
    """Text that arrives in pieces (a streamed reply), redacted across the pieces: a secret split
    between two pieces is caught. What is handed on is all of the text so far except its longest
    end that could begin a secret, held until the next piece (or :meth:`flush`) says more; for
    ordinary text nothing is held."""

    def __init__(self) -> None:
        self._held = ""

    def feed(self, piece: str) -> str:
        text = redact(self._held + piece)
        keep = _open_prefix(text, secrets())
        self._held = text[len(text) - keep :] if keep else ""
        return text[: len(text) - keep]

    def flush(self) -> str:
        """The text held back, redacted (the end of the stream)."""
        text, self._held = redact(self._held), ""
        return text


def _open_prefix(text: str, values: tuple[str, ...]) -> int:
    """The length of the longest end of ``text`` that is the beginning of one of ``values``."""
    best = 0
    for value in values:
        for size in range(min(len(value) - 1, len(text)), best, -1):
            if text.endswith(value[:size]):
                best = size
                break
    return best
