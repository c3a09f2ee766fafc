"""One save of one exchange of a chat: the shape a chat hands every conversation store.

A conversation grows by exchanges (the person's message and everything that answered it),
each written by the one chat that holds its number (docs/chat.md, "Shared conversations").
The chat (:mod:`formctl.agent.sharing`) says what it saves in one :class:`ExchangeSave`; the
folder store and the PostgreSQL one each take it whole (``save_exchange``). It lives here,
under both, because the agent never imports the store.
"""

from __future__ import annotations

from dataclasses import dataclass

from formctl.json_types import JsonObject

__all__ = ["ExchangeSave"]


@dataclass(frozen=True, slots=True)
class ExchangeSave:
    """Exchange ``pos`` (from 1) of chat ``chat``: its ``messages`` (the model's messages, no
    tier-0 text), the person's turns in it with their words (``words``: ``(turn, text)``), what
    the person was last shown of the instance (``seen``, when known) and the model that
    answered (``model``: ``formctl stats`` counts by it). A later save of the same exchange
    replaces the earlier one."""

    pos: int
    chat: str
    messages: list[JsonObject]
    words: list[tuple[int, str]]
    seen: JsonObject | None = None
    model: str | None = None
