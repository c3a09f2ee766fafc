"""A chat's part in a conversation other chats may be writing too (docs/chat.md, "Shared
conversations").

A conversation store keeps a conversation as exchanges, each written by the one chat that
holds its number (``formctl.store._conversation``). The chat loop hands this module what it
does, and this module asks the store:

* when the person sends a message, the store gives it the next **turn** number (one
  statement), so that "turn 7" in an answer's provenance names the same words whichever chat
  wrote them, and the next **exchange** number with it;
* after each round of tools and when a turn ends, the chat saves its exchange (one
  statement): the person's message and everything that answered it. A later save of the same
  exchange replaces its earlier one; nobody else's exchange is touched;
* a conversation that moves to an instance its own ``form_start`` created is saved there whole,
  as one exchange.

A store that offers neither (a host's own) gets the whole conversation through ``save``, as
before. With no store, or no instance yet, turns are numbered here, one after another.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from formctl.agent.models.base import content_blocks
from formctl.agent.person import Person
from formctl.errors import FormError
from formctl.forms.exchange import ExchangeSave
from formctl.forms.quotes import PersonMessage
from formctl.json_types import JsonObject

__all__ = ["SavedConversation", "SavedPart", "SavesConversations", "SharesExchanges", "Sharing"]


class SavesConversations(Protocol):
    """A conversation store as a chat sees it: the whole conversation saved under its instance.
    A host's own store needs only this; formctl's stores share (:class:`SharesExchanges`)."""

    def save(self, instance_id: str, messages: list[JsonObject], *, seen: JsonObject | None = None) -> object: ...


@runtime_checkable
class SharesExchanges(SavesConversations, Protocol):
    """A store every chat on an instance writes its own exchanges to (formctl.store's folder and
    PostgreSQL stores): it gives out the turn and exchange numbers, once for all of them."""

    def claim(self, instance_id: str, *, exchange: bool, turn: bool, known: tuple[int, int]) -> tuple[int, int]: ...

    def save_exchange(self, instance_id: str, save: ExchangeSave) -> object: ...


class SavedPart(Protocol):
    """One exchange of a loaded conversation: its messages and the person's numbered words
    (None for a conversation saved whole, before exchanges)."""

    @property
    def messages(self) -> list[JsonObject]: ...

    @property
    def words(self) -> list[tuple[int, str]] | None: ...


class SavedConversation(Protocol):
    """A conversation as a store loads it (``formctl.store._conversation.Conversation``)."""

    @property
    def parts(self) -> Sequence[SavedPart]: ...

    @property
    def exchanges(self) -> int: ...

    @property
    def messages(self) -> list[JsonObject]: ...


@dataclass(slots=True)
class _Exchange:
    instance_id: str | None  # the instance its numbers came from (None: none yet)
    start: int  # its first message's index in the chat's messages
    prefix: int  # blocks of that message that belong to the exchange before it (joined to it)
    first_word: int  # its first turn's index in the person's messages
    pos: int = 0  # its number (0: not claimed yet)


@dataclass
class Sharing:
    """One chat's bookkeeping for a shared conversation (the module's docstring)."""

    store: SavesConversations | None  # a ConversationStore, PostgresConversations, or a host's store
    person: Person
    chat: str = field(default_factory=lambda: uuid.uuid4().hex[:16])
    model: str | None = None  # which model answers in this chat, recorded with each exchange
    exchanges: int = 0  # the highest exchange number this chat knows of
    current: _Exchange | None = None

    def resume(self, conversation: SavedConversation, person_texts: Callable[[list[JsonObject]], list[str]]) -> None:
        """Seed the person's words from a loaded conversation: an exchange's recorded turns with
        their numbers, a conversation saved whole by counting its messages as it was counted."""
        for part in conversation.parts:
            if part.words is None:
                for text in person_texts(part.messages):
                    self.person.said(text, at=None)
                continue
            for turn, text in part.words:
                self.person.messages.append(PersonMessage(text, turn, None))
        self.exchanges = max(self.exchanges, int(conversation.exchanges))

    def begin(self, messages: list[JsonObject], instance_id: str | None) -> None:
        """The person is about to send a message: a new exchange starts with it."""
        joined = bool(messages) and messages[-1].get("role") == "user"
        start = len(messages) - 1 if joined else len(messages)
        prefix = len(content_blocks(messages[-1].get("content"))) if joined else 0
        self.current = _Exchange(instance_id, start, prefix, len(self.person.messages))

    def number(self, instance_id: str | None) -> int:
        """The next turn number: the store's, when this exchange has an instance to number it on."""
        known = self._turns()
        current, store = self.current, self.store
        if not isinstance(store, SharesExchanges) or instance_id is None or current is None:
            return known + 1
        if current.instance_id != instance_id:
            return known + 1
        try:
            pos, turn = store.claim(instance_id, exchange=current.pos == 0, turn=True, known=(self.exchanges, known))
        except FormError:
            return known + 1  # the store is away: the save after this turn says so
        if pos:
            current.pos = self.exchanges = pos
        return int(turn)

    def save(self, instance_id: str, messages: list[JsonObject], seen: JsonObject | None) -> None:
        """Save this chat's exchange (or the whole conversation, for a store that cannot share)."""
        store = self.store
        if not isinstance(store, SharesExchanges):
            if store is not None:
                store.save(instance_id, messages, seen=seen)
            return
        current = self.current
        if current is None:
            return  # nothing of this chat's yet
        if current.instance_id != instance_id:  # moved to an instance it started: all of it goes there
            current = self.current = _Exchange(instance_id, 0, 0, 0)
        if current.pos == 0:
            current.pos, _ = store.claim(instance_id, exchange=True, turn=False, known=(self.exchanges, self._turns()))
            self.exchanges = max(self.exchanges, current.pos)
        mine = messages[current.start :]
        if current.prefix and mine:
            mine = [{"role": "user", "content": content_blocks(mine[0].get("content"))[current.prefix :]}, *mine[1:]]
        words = [(m.turn, m.text) for m in self.person.messages[current.first_word :]]
        store.save_exchange(instance_id, ExchangeSave(current.pos, self.chat, mine, words, seen, self.model))

    def _turns(self) -> int:
        return max((m.turn for m in self.person.messages), default=0)
