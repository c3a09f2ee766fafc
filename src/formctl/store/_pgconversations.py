"""Conversations in the PostgreSQL store, so a colleague who resumes an instance on another
machine continues the chat so far (docs/store-postgres.md, "Conversations").

The model of :mod:`formctl.store._conversation`: per instance a head row
(``formctl_conversation_heads``: the exchange and turn counters, and ``seen``) and one row per
exchange (``formctl_conversation_turns``), written only by the chat that claimed its number, so
any number of chats on one instance, on any machines, keep every turn. A claim is one
statement, and so is a save. ``formctl_conversations`` holds the documents saved whole before
schema 3, read as each conversation's first part. The same interface as
:class:`formctl.store.conversations.ConversationStore`.

Isolation: a conversation store is opened for one subject (the chat's) and reaches only the
conversations of that subject's instances. A claim names the instance and creates its head
only beside the instance of that subject (``INSERT … SELECT`` from the instance row), a save
writes only under a head of that subject, and a load of another subject's conversation finds
nothing, the same answer as an instance without one, so it confirms nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from formctl.errors import StoreError
from formctl.forms.exchange import ExchangeSave
from formctl.store._conversation import (
    Conversation,
    Part,
    document,
    from_document,
    settled,
    stored_part,
)
from formctl.store.conversations import bounded
from formctl.store.ids import is_instance_id

FORMAT = 1

# A number given out for every chat alike: the head row, created beside the instance of the
# same subject (isolation), counts on from the highest of what it holds and what the chat knows.
_CLAIM = (
    "INSERT INTO formctl_conversation_heads AS h (instance_id, subject, exchanges, turns, saved_at) "
    "SELECT id, subject, %(ke)s + %(de)s, %(kt)s + %(dt)s, %(at)s FROM formctl_instances "
    "WHERE id = %(id)s AND subject = %(subject)s "
    "ON CONFLICT (instance_id) DO UPDATE SET exchanges = GREATEST(h.exchanges, %(ke)s) + %(de)s, "
    "turns = GREATEST(h.turns, %(kt)s) + %(dt)s WHERE h.subject = EXCLUDED.subject "
    "RETURNING exchanges, turns"
)
# One statement, so one round trip: the exchange's row written (only by the chat that claimed
# its number), and what the person was last shown kept on the head, of this subject only.
_SAVE = (
    "WITH head AS (UPDATE formctl_conversation_heads SET seen = COALESCE(%(seen)s, seen), saved_at = %(at)s "
    "WHERE instance_id = %(id)s AND subject = %(subject)s RETURNING instance_id) "
    "INSERT INTO formctl_conversation_turns AS t (instance_id, pos, chat, saved_at, messages, words, model) "
    "SELECT instance_id, %(pos)s, %(chat)s, %(at)s, %(messages)s, %(words)s, %(model)s FROM head "
    "ON CONFLICT (instance_id, pos) DO UPDATE SET saved_at = EXCLUDED.saved_at, messages = EXCLUDED.messages, "
    "words = EXCLUDED.words, model = EXCLUDED.model WHERE t.chat = EXCLUDED.chat"
)
_HEAD = "SELECT exchanges, turns, seen FROM formctl_conversation_heads WHERE instance_id = %s AND subject = %s"
# The document saved whole before schema 3 (pos 0), then every exchange, in order.
_PARTS = (
    "SELECT 0::bigint AS pos, '' AS chat, saved_at, document AS messages, NULL AS words FROM formctl_conversations "
    "WHERE instance_id = %(id)s AND subject = %(subject)s UNION ALL "
    "SELECT t.pos, t.chat, t.saved_at, t.messages, t.words FROM formctl_conversation_turns t "
    "JOIN formctl_instances i ON i.id = t.instance_id WHERE t.instance_id = %(id)s AND i.subject = %(subject)s "
    "ORDER BY pos"
)


class PostgresConversations:
    """The conversations of ``subject``'s instances in one PostgreSQL store: the interface of
    :class:`formctl.store.conversations.ConversationStore`.

    ``run(fn, write=...)`` runs ``fn(cursor)`` on the store's connection (the adapter's own
    ``_run``: reconnecting, refusing a store not at this formctl's schema)."""

    def __init__(self, run: Callable[..., Any], *, display: str, subject: str) -> None:
        self._run = run
        self.display = display
        self.subject = subject

    def where(self, instance_id: str) -> str:
        return f"{self.display} (the conversation of {instance_id})"

    def _rows(self, instance_id: str) -> tuple[Any, list[Any]]:
        if not is_instance_id(instance_id) or "\x00" in self.subject:
            return None, []

        def read(cur: Any) -> tuple[Any, list[Any]]:
            cur.execute(_HEAD, (instance_id, self.subject))
            head = cur.fetchone()
            cur.execute(_PARTS, {"id": instance_id, "subject": self.subject})
            return head, cur.fetchall()

        found: tuple[Any, list[Any]] = self._run(read, transaction=True)
        return found

    def conversation(self, instance_id: str) -> Conversation:
        """Every part of the conversation, in order (empty for none, or another subject's instance)."""
        head, rows = self._rows(instance_id)
        return self._conversation(instance_id, head, rows)

    def _conversation(self, instance_id: str, head: Any, rows: list[Any]) -> Conversation:
        where = self.where(instance_id)
        parts = [_part(row, where) for row in rows]
        seen = _json(head.seen) if head is not None and head.seen else None
        if seen is None and rows and rows[0].pos == 0:
            seen = _json(rows[0].messages).get("seen")
        exchanges, turns = (head.exchanges, head.turns) if head is not None else (0, 0)
        return settled(parts, seen if isinstance(seen, dict) else None, exchanges, turns)

    def load(self, instance_id: str) -> list[dict[str, Any]]:
        """The saved messages of every chat, in order, or ``[]`` when there are none."""
        return self.conversation(instance_id).messages

    def load_or_set_aside(self, instance_id: str) -> tuple[list[dict[str, Any]], str | None]:
        conversation, note = self.open(instance_id)
        return conversation.messages, note

    def open(self, instance_id: str) -> tuple[Conversation, str | None]:
        """The conversation and None; or, when a part of it is damaged (changed by hand), the rest
        and one sentence saying where that part was kept (``formctl_conversations_aside``): the
        conversation is only the model's context, and the answers are intact in the instance."""
        head, rows = self._rows(instance_id)
        damaged: list[tuple[Any, str]] = []
        for row in rows:
            try:
                _part(row, self.where(instance_id))
            except StoreError as exc:
                damaged.append((row, exc.message))
        if not damaged:
            return self._conversation(instance_id, head, rows), None

        def set_aside(cur: Any) -> None:
            for row, why in damaged:
                _set_aside(cur, instance_id, self.subject, row, why)

        self._run(set_aside, write=True)
        left = [row for row in rows if all(row is not d for d, _ in damaged)]
        conversation = self._conversation(instance_id, head, left)
        goes_on = "goes on from what is left" if conversation.parts else "starts afresh"
        whys = " ".join(why for _, why in damaged)
        return conversation, (
            f"{whys} It was kept in formctl_conversations_aside; the conversation {goes_on}, and every answer is kept."
        )

    def seen(self, instance_id: str) -> dict[str, Any] | None:
        """What the person was last shown of the instance, as saved with its conversation (or None)."""
        try:
            return self.conversation(instance_id).seen
        except StoreError:
            return None

    def claim(self, instance_id: str, *, exchange: bool, turn: bool, known: tuple[int, int]) -> tuple[int, int]:
        """The next exchange number (when ``exchange``) and turn number (when ``turn``), given out
        once for every chat on this instance, in one statement (0 for the one not asked for)."""
        params = {
            "id": instance_id,
            "subject": self.subject,
            "ke": known[0],
            "kt": known[1],
            "de": int(exchange),
            "dt": int(turn),
            "at": _now(),
        }

        def write(cur: Any) -> Any:
            cur.execute(_CLAIM, params)
            return cur.fetchone()

        row = self._run(write, write=True, transaction=False) if is_instance_id(instance_id) else None
        if row is None:
            raise StoreError(
                f"The conversation was not saved: {instance_id} is not an instance of {self.subject!r} in {self.display}."
            )
        return (row[0] if exchange else 0), (row[1] if turn else 0)

    def save_exchange(self, instance_id: str, save: ExchangeSave) -> str:
        """Write this save of one exchange in one statement; returns where it went. Refused (a
        :class:`StoreError`) for an instance that is not this subject's, or an exchange number
        another chat holds."""
        params = {
            "id": instance_id,
            "subject": self.subject,
            "pos": save.pos,
            "chat": save.chat,
            "at": _now(),
            "messages": _text(bounded(save.messages), instance_id),
            "words": _text([[n, w] for n, w in save.words], instance_id),
            "seen": _text(save.seen, instance_id) if save.seen is not None else None,
            "model": save.model,  # which model answered (formctl stats counts by it)
        }

        def write(cur: Any) -> int:
            cur.execute(_SAVE, params)
            return int(cur.rowcount)

        if not is_instance_id(instance_id) or self._run(write, write=True, transaction=False) != 1:
            raise StoreError(
                f"The conversation was not saved: {instance_id} is not an instance of {self.subject!r} in {self.display}."
            )
        return self.where(instance_id)

    def save(self, instance_id: str, messages: list[dict[str, Any]], *, seen: dict[str, Any] | None = None) -> str:
        """Add ``messages`` as one new exchange (a host's program saving a conversation of its own)."""
        if not is_instance_id(instance_id):
            raise StoreError(f"Not an instance id: {instance_id!r}.")
        pos, _ = self.claim(instance_id, exchange=True, turn=False, known=(0, 0))
        return self.save_exchange(instance_id, ExchangeSave(pos, "host", messages, [], seen))

    def delete(self, instance_id: str) -> None:
        if not is_instance_id(instance_id):
            return

        def write(cur: Any) -> None:
            for table in ("formctl_conversation_turns", "formctl_conversation_heads", "formctl_conversations"):
                cur.execute(
                    f"DELETE FROM {table} WHERE instance_id = %s AND instance_id IN "
                    "(SELECT id FROM formctl_instances WHERE subject = %s)",
                    (instance_id, self.subject),
                )

        self._run(write, write=True)


def _set_aside(cur: Any, instance_id: str, subject: str, row: Any, why: str) -> None:
    """Move one part that cannot be read into ``formctl_conversations_aside``, with why."""
    kept = row.messages if row.pos == 0 else json.dumps({"pos": row.pos, "messages": row.messages})
    cur.execute(
        "INSERT INTO formctl_conversations_aside (instance_id, subject, document, why) VALUES (%s, %s, %s, %s)",
        (instance_id, subject, kept, why),
    )
    if row.pos == 0:
        cur.execute("DELETE FROM formctl_conversations WHERE instance_id = %s", (instance_id,))
    else:
        cur.execute(
            "DELETE FROM formctl_conversation_turns WHERE instance_id = %s AND pos = %s", (instance_id, row.pos)
        )


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _text(value: Any, instance_id: str) -> str:
    try:  # ASCII: a lone surrogate or a NUL becomes an escape PostgreSQL text can hold
        return json.dumps(value, ensure_ascii=True, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise StoreError(f"The conversation for {instance_id} cannot be saved as JSON: {exc}.") from exc


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return {}


def _part(row: Any, where: str) -> Part:
    """One row as a part: the document saved whole before schema 3, or one exchange."""
    try:
        data = json.loads(row.messages)
    except ValueError as exc:
        raise StoreError(f"The conversation in {where} is corrupt (not JSON: {exc}).") from None
    if row.pos == 0:
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise StoreError(f"The conversation in {where} is not a formctl conversation (format {FORMAT}).")
        return stored_part(0, "", data.get("messages"), None, row.saved_at, where)
    try:
        words = json.loads(row.words)
    except ValueError as exc:
        raise StoreError(f"The conversation in {where} is corrupt (not JSON: {exc}).") from None
    return stored_part(row.pos, row.chat, data, words, row.saved_at, where)


# --------------------------------------------------------------------------- formctl store copy


def all_documents(cur: Any, display: str) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Every conversation in the store, whole (:func:`formctl.store._conversation.document`), by
    instance id, and one line for each that cannot be read as one. Reads only."""
    cur.execute(
        "SELECT c.instance_id, c.subject FROM formctl_conversations c UNION "
        "SELECT h.instance_id, h.subject FROM formctl_conversation_heads h ORDER BY 1"
    )
    out: dict[str, dict[str, Any]] = {}
    unreadable: list[str] = []
    for instance_id, subject in cur.fetchall():
        reader = PostgresConversations(lambda fn, **_: fn(cur), display=display, subject=subject)
        try:
            conversation = reader.conversation(instance_id)
        except StoreError as exc:
            unreadable.append(exc.message)
            continue
        if conversation.parts:
            saved_at = max((p.saved_at for p in conversation.parts), default="") or _now()
            out[instance_id] = document(instance_id, conversation, saved_at)
    return out, unreadable


def import_documents(
    cur: Any,
    items: list[tuple[str, str, dict[str, Any]]],
    decide: Callable[[dict[str, Any] | None, dict[str, Any]], tuple[str, str]],
    display: str,
) -> list[tuple[str, str]]:
    """Store each (instance id, subject, document) exactly as given, in the caller's transaction;
    per item (outcome, why) as ``decide(held, given)`` says. The isolation of a chat's save
    holds here too: a conversation is written only beside its instance, of the same subject."""
    ids = [instance_id for instance_id, _, _ in items]
    cur.execute("SELECT id, subject FROM formctl_instances WHERE id = ANY(%s) FOR UPDATE", (ids,))
    subjects = {row[0]: row[1] for row in cur.fetchall()}
    outcomes: list[tuple[str, str]] = []
    for instance_id, subject, given in items:
        if instance_id not in subjects:
            outcomes.append(("refused", "its instance is not in the target"))
            continue
        if subjects[instance_id] != subject:
            outcomes.append(("refused", "its instance in the target is another subject's"))
            continue
        reader = PostgresConversations(lambda fn, **_: fn(cur), display=display, subject=subject)
        try:
            held = reader.conversation(instance_id)
        except StoreError as exc:
            outcomes.append(("refused", f"damaged in the target: {exc.message}"))
            continue
        saved_at = max((p.saved_at for p in held.parts), default="")
        done, why = decide(document(instance_id, held, saved_at) if held.parts else None, given)
        if done in ("copied", "updated"):
            _put(cur, instance_id, subject, from_document(given, f"the copy of {instance_id}'s conversation"))
        outcomes.append((done, why))
    return outcomes


def _put(cur: Any, instance_id: str, subject: str, conversation: Conversation) -> None:
    """Replace the target's conversation of ``instance_id`` with ``conversation``, whole."""
    for table in ("formctl_conversation_turns", "formctl_conversation_heads", "formctl_conversations"):
        cur.execute(f"DELETE FROM {table} WHERE instance_id = %s", (instance_id,))
    seen = _text(conversation.seen, instance_id) if conversation.seen is not None else None
    saved_at = max((p.saved_at for p in conversation.parts), default="") or _now()
    cur.execute(
        "INSERT INTO formctl_conversation_heads (instance_id, subject, exchanges, turns, seen, saved_at) "
        "VALUES (%s, %s, %s, %s, %s, %s)",
        (instance_id, subject, conversation.exchanges, conversation.turns, seen, saved_at),
    )
    for part in conversation.parts:
        if part.pos == 0:
            legacy = {
                "format": FORMAT,
                "instance_id": instance_id,
                "saved_at": part.saved_at,
                "messages": part.messages,
            }
            cur.execute(
                "INSERT INTO formctl_conversations (instance_id, subject, saved_at, document) VALUES (%s, %s, %s, %s)",
                (instance_id, subject, part.saved_at or saved_at, _text(legacy, instance_id)),
            )
            continue
        cur.execute(
            "INSERT INTO formctl_conversation_turns (instance_id, pos, chat, saved_at, messages, words) "
            "VALUES (%s, %s, %s, %s, %s, %s)",
            (
                instance_id,
                part.pos,
                part.chat,
                part.saved_at or saved_at,
                _text(part.messages, instance_id),
                _text([[n, w] for n, w in part.words or []], instance_id),
            ),
        )
