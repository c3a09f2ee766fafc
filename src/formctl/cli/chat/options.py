"""What ``formctl run``/``resume`` ask of a chat (:class:`ChatOptions`), and the words it opens with."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from dataclasses import field as dc_field

from formctl.errors import InvalidArgumentError

__all__ = ["CHAT_SOURCE", "OPENER", "POLL_SECONDS", "ChatOptions", "poll_seconds_from_env", "seed_lines"]

OPENER = "Hello."  # the person's side of a new conversation's first turn (docs/chat.md, "Who starts the form")
CHAT_SOURCE = "chat"  # the provenance source of every write a chat makes

POLL_SECONDS = 1.0
"""How often the terminal chat's status bar reads a store that does not announce its writes
(a folder store) by default: the longest a change made elsewhere waits to be seen there. A
store that announces them (PostgreSQL) wakes the status bar at once whatever the interval."""


@dataclass
class ChatOptions:
    form: str | None = None
    instance_id: str | None = None
    subject: str | None = None
    model: str | None = None
    model_timeout: float | None = None  # one model call's deadline (None: FORMCTL_MODEL_TIMEOUT, or two minutes)
    offline: bool = False
    record: str | None = None
    seed: list[str] = dc_field(default_factory=list)
    store: str | None = None
    forms: str | None = None
    debug: bool = False
    as_host: bool = False  # the person may /resolve: a form author playing the host
    migrate: bool = False  # move a stale instance to the registered version without asking
    poll_seconds: float = POLL_SECONDS  # the status bar's interval (docs/chat.md, "The status bar")

    def __post_init__(self) -> None:
        if not _interval(self.poll_seconds):
            raise InvalidArgumentError(f"poll_seconds must be a number of seconds above 0, got {self.poll_seconds!r}.")


def _interval(seconds: object) -> bool:
    """A number of seconds the status bar can wait: above 0 and finite (a bool is not one)."""
    return not isinstance(seconds, bool) and isinstance(seconds, (int, float)) and 0 < seconds < math.inf


def poll_seconds_from_env() -> float:
    """The status bar's interval for ``formctl run``/``resume``: ``FORMCTL_POLL_SECONDS``, or
    :data:`POLL_SECONDS`. A value that is not a number of seconds above 0 is refused in one line."""
    given = os.environ.get("FORMCTL_POLL_SECONDS", "").strip()
    if not given:
        return POLL_SECONDS
    try:
        seconds = float(given)
    except ValueError:
        seconds = math.nan
    if not _interval(seconds):
        raise InvalidArgumentError(f"FORMCTL_POLL_SECONDS must be a number of seconds above 0, got {given!r}.")
    return seconds


def seed_lines(pairs: list[str]) -> list[str]:
    """``--seed k=v`` as the ``k: v`` lines of the opening message (docs/chat.md: who starts the form)."""
    lines = []
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InvalidArgumentError(f'--seed expects field=value, got "{pair}".')
        lines.append(f"{key.strip()}: {value.strip()}")
    return lines
