"""Conversations in the PostgreSQL store, so a colleague who resumes an instance on another
machine continues the chat so far (docs/store-postgres.md, "Conversations").

The same document the local store keeps in ``conversations/<id>.json`` (format 1: the
messages without tier 0, and ``seen``), one row per instance in ``formctl_conversations``,
written whole on every save. The same interface as
:class:`formctl.store.conversations.ConversationStore`: ``load``, ``load_or_set_aside``,
``seen``, ``save``, ``delete``.

Isolation: a conversation store is opened for one subject (the chat's) and reaches only the
conversations of that subject's instances. A save names the instance and is written only if
the instance exists and is the subject's (one statement: ``INSERT … SELECT`` from the
instance row), and a load of another subject's conversation finds nothing, the same answer
as an instance without one, so it confirms nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from formctl.errors import StoreError
from formctl.store import _pgschema
from formctl.store.conversations import bounded
from formctl.store.ids import is_instance_id

FORMAT = 1

_SAVE = (
    "INSERT INTO formctl_conversations (instance_id, subject, saved_at, document) "
    "SELECT id, subject, %s, %s FROM formctl_instances WHERE id = %s AND subject = %s "
    "ON CONFLICT (instance_id) DO UPDATE SET saved_at = EXCLUDED.saved_at, document = EXCLUDED.document "
    "WHERE formctl_conversations.subject = EXCLUDED.subject"
)
_LOAD = "SELECT document FROM formctl_conversations WHERE instance_id = %s AND subject = %s"


class PostgresConversations:
    """The conversations of ``subject``'s instances in one PostgreSQL store.

    ``run(fn, write=...)`` runs ``fn(cursor)`` on the store's connection (the adapter's own
    ``_run``: reconnecting, creating or upgrading the tables on a write)."""

    def __init__(self, run: Callable[..., Any], *, display: str, subject: str) -> None:
        self._run = run
        self.display = display
        self.subject = subject
        self._created = False  # the conversation tables are known to exist

    def where(self, instance_id: str) -> str:
        return f"{self.display} (the conversation of {instance_id})"

    def _document(self, instance_id: str) -> str | None:
        if not is_instance_id(instance_id) or "\x00" in self.subject:
            return None

        def read(cur: Any) -> str | None:
            cur.execute("SELECT to_regclass('formctl_conversations') IS NOT NULL")
            if not cur.fetchone()[0]:
                return None  # no chat has saved a conversation here yet
            cur.execute(_LOAD, (instance_id, self.subject))
            row = cur.fetchone()
            return row[0] if row else None

        document: str | None = self._run(read)
        return document

    def _write(self, fn: Callable[[Any], Any]) -> Any:
        def write(cur: Any) -> Any:
            if not self._created:
                _pgschema.ensure_conversations(cur)
            return fn(cur)

        result = self._run(write, write=True)
        self._created = True
        return result

    def load(self, instance_id: str) -> list[dict[str, Any]]:
        """The saved messages, or ``[]`` when this instance (of this subject) has none."""
        document = self._document(instance_id)
        if document is None:
            return []
        return _messages(document, self.where(instance_id))

    def load_or_set_aside(self, instance_id: str) -> tuple[list[dict[str, Any]], str | None]:
        """The saved messages and None; or, when the saved document is damaged, ``[]`` and one
        sentence saying where it was kept (``formctl_conversations_aside``): the conversation is
        only the model's context, and the answers are intact in the instance."""
        document = self._document(instance_id)
        if document is None:
            return [], None
        try:
            return _messages(document, self.where(instance_id)), None
        except StoreError as exc:
            why = exc.message

        def set_aside(cur: Any) -> None:
            cur.execute(
                "INSERT INTO formctl_conversations_aside (instance_id, subject, document, why) VALUES (%s, %s, %s, %s)",
                (instance_id, self.subject, document, why),
            )
            cur.execute("DELETE FROM formctl_conversations WHERE instance_id = %s", (instance_id,))

        self._write(set_aside)
        return [], (
            f"{why} It was kept in formctl_conversations_aside; the conversation starts afresh, and every answer is kept."
        )

    def seen(self, instance_id: str) -> dict[str, Any] | None:
        """What the person was last shown of the instance, as saved with its conversation (or None)."""
        document = self._document(instance_id)
        try:
            data = json.loads(document) if document is not None else None
        except ValueError:
            return None
        seen = data.get("seen") if isinstance(data, dict) else None
        return seen if isinstance(seen, dict) else None

    def save(
        self,
        instance_id: str,
        messages: list[dict[str, Any]],
        *,
        seen: dict[str, Any] | None = None,
        model: str | None = None,
    ) -> str:
        """Write the whole conversation in one statement; returns where it went. Refused (a
        :class:`StoreError`) for an instance that is not this subject's."""
        if not is_instance_id(instance_id):
            raise StoreError(f"Not an instance id: {instance_id!r}.")
        payload: dict[str, Any] = {
            "format": FORMAT,
            "instance_id": instance_id,
            "saved_at": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            **({"model": model} if model else {}),  # which model spoke (formctl stats counts by it)
            "messages": bounded(messages),
        }
        if seen is not None:
            payload["seen"] = seen
        try:  # ASCII: a lone surrogate or a NUL becomes an escape PostgreSQL text can hold
            document = json.dumps(payload, ensure_ascii=True, separators=(",", ":"))
        except (TypeError, ValueError) as exc:
            raise StoreError(f"The conversation for {instance_id} cannot be saved as JSON: {exc}.") from exc

        def write(cur: Any) -> int:
            cur.execute(_SAVE, (payload["saved_at"], document, instance_id, self.subject))
            return int(cur.rowcount)

        if self._write(write) != 1:
            raise StoreError(
                f"The conversation was not saved: {instance_id} is not an instance of {self.subject!r} in {self.display}."
            )
        return self.where(instance_id)

    def delete(self, instance_id: str) -> None:
        if not is_instance_id(instance_id):
            return
        self._write(
            lambda cur: cur.execute(
                "DELETE FROM formctl_conversations WHERE instance_id = %s AND subject = %s", (instance_id, self.subject)
            )
        )


def _messages(document: str, where: str) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = _parsed(document, where)["messages"]
    return messages


def _parsed(document: str, where: str) -> dict[str, Any]:
    try:
        data = json.loads(document)
    except ValueError as exc:
        raise StoreError(f"The conversation in {where} is corrupt (not JSON: {exc}).") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("messages"), list):
        raise StoreError(f"The conversation in {where} is not a formctl conversation (format {FORMAT}).")
    if not all(isinstance(m, dict) and m.get("role") in ("user", "assistant") for m in data["messages"]):
        raise StoreError(f"The conversation in {where} is corrupt (a message without a user/assistant role).")
    return data


# --------------------------------------------------------------------------- formctl store copy


def all_documents(cur: Any, display: str) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Every conversation in the store, whole, by instance id, and one line for each that cannot
    be read as one. Reads only: a store where no chat saved one has no table, and that is none."""
    cur.execute("SELECT to_regclass('formctl_conversations') IS NOT NULL")
    if not cur.fetchone()[0]:
        return {}, []
    cur.execute("SELECT instance_id, document FROM formctl_conversations ORDER BY instance_id")
    out: dict[str, dict[str, Any]] = {}
    unreadable: list[str] = []
    for instance_id, document in cur.fetchall():
        try:
            out[instance_id] = _parsed(document, f"{display} (the conversation of {instance_id})")
        except StoreError as exc:
            unreadable.append(exc.message)
    return out, unreadable


def import_documents(
    cur: Any,
    items: list[tuple[str, str, dict[str, Any]]],
    decide: Callable[[dict[str, Any] | None, dict[str, Any]], tuple[str, str]],
    display: str,
) -> list[tuple[str, str]]:
    """Store each (instance id, subject, document) exactly as given, in the caller's transaction;
    per item (outcome, why) as ``decide(held, given)`` says. The isolation of a chat's save
    holds here too: a conversation is written only beside its instance, of the same subject
    (the same ``INSERT … SELECT`` from the instance row)."""
    _pgschema.ensure_conversations(cur)
    ids = [instance_id for instance_id, _, _ in items]
    cur.execute("SELECT id, subject FROM formctl_instances WHERE id = ANY(%s)", (ids,))
    subjects = {row[0]: row[1] for row in cur.fetchall()}
    cur.execute(
        "SELECT instance_id, document FROM formctl_conversations WHERE instance_id = ANY(%s) FOR UPDATE", (ids,)
    )
    held_documents = {row[0]: row[1] for row in cur.fetchall()}
    outcomes: list[tuple[str, str]] = []
    for instance_id, subject, given in items:
        if instance_id not in subjects:
            outcomes.append(("refused", "its instance is not in the target"))
            continue
        if subjects[instance_id] != subject:
            outcomes.append(("refused", "its instance in the target is another subject's"))
            continue
        held: dict[str, Any] | None = None
        if instance_id in held_documents:
            try:
                held = _parsed(held_documents[instance_id], f"{display} (the conversation of {instance_id})")
            except StoreError as exc:
                outcomes.append(("refused", f"damaged in the target: {exc.message}"))
                continue
        done, why = decide(held, given)
        if done in ("copied", "updated"):
            text = json.dumps(given, ensure_ascii=True, separators=(",", ":"))
            saved_at = str(given.get("saved_at") or datetime.now(UTC).isoformat())
            cur.execute(_SAVE, (saved_at, text, instance_id, subject))
            if cur.rowcount != 1:
                done, why = "refused", "its instance in the target is another subject's"
        outcomes.append((done, why))
    return outcomes
