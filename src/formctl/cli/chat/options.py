"""What ``formctl run``/``resume`` ask of a chat (:class:`ChatOptions`), and the words it opens with."""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as dc_field

from formctl.errors import InvalidArgumentError

__all__ = ["CHAT_SOURCE", "OPENER", "ChatOptions", "seed_lines"]

OPENER = "Hello."  # the person's side of a new conversation's first turn (docs/chat.md, "Who starts the form")
CHAT_SOURCE = "chat"  # the provenance source of every write a chat makes


@dataclass
class ChatOptions:
    form: str | None = None
    instance_id: str | None = None
    subject: str | None = None
    model: str | None = None
    offline: bool = False
    record: str | None = None
    seed: list[str] = dc_field(default_factory=list)
    store: str | None = None
    forms: str | None = None
    debug: bool = False
    as_host: bool = False  # the person may /resolve: a form author playing the host
    migrate: bool = False  # move a stale instance to the registered version without asking


def seed_lines(pairs: list[str]) -> list[str]:
    """``--seed k=v`` as the ``k: v`` lines of the opening message (docs/chat.md: who starts the form)."""
    lines = []
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InvalidArgumentError(f'--seed expects field=value, got "{pair}".')
        lines.append(f"{key.strip()}: {value.strip()}")
    return lines
