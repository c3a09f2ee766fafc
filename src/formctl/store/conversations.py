"""Conversations saved beside their instance, so ``formctl resume ID`` continues with its context.

One file per instance, ``<store>/conversations/<instance id>.json``::

    {"format": 1, "instance_id": "...", "saved_at": "...", "messages": [...], "seen": {...}}

``messages`` is :attr:`ChatLoop.messages`: the conversation without tier-0 text (that is
re-rendered from stored state on every call, so a resumed conversation sees the form as
it is now, not as it was). Writes are atomic (a temp file in the same folder, fsync,
``os.replace``) and files are created ``0600``: a conversation holds what the person
said. ``seen`` (optional) is what the person was last shown of the instance (see
:mod:`formctl.agent.notices`), so a resumed chat can say what changed meanwhile. Ids are
checked before they become a path. A corrupt file is reported with its
path, never silently replaced.

Saving never fails on content: the file is written with every non-ASCII character escaped,
so any string the model or the person produced (a lone surrogate from a terminal that could
not decode a byte included) loads back as the same string. A value nested deeper than
:data:`MAX_DEPTH` levels (counted from the message list) is saved as the placeholder
:data:`TOO_DEEP` instead of its subtree; a value JSON has no type for is saved as its text.
"""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from formctl.errors import InvalidArgumentError, StoreError
from formctl.files import replace_text

__all__ = ["ConversationStore"]

FORMAT = 1
# Instance ids are generated (store/ids.py); this is the looser shape any adapter's ids
# must have to be a file name here: no separators, no dots, nothing a path could escape with.
_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$")
# Real conversations nest a handful of levels (message, content block, tool input, value);
# the bound keeps a model's runaway value from reaching the interpreter's recursion limit.
MAX_DEPTH = 64
TOO_DEEP = f"[not saved: nested deeper than {MAX_DEPTH} levels]"


class ConversationStore:
    """``load(instance_id)`` / ``save(instance_id, messages)`` under ``<directory>/conversations``;
    ``load_or_set_aside`` for a chat that opens (a damaged file is kept, renamed, and the chat goes on)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.folder = self.directory / "conversations"

    def path(self, instance_id: str) -> Path:
        if not isinstance(instance_id, str) or not _SAFE_ID.match(instance_id):
            raise InvalidArgumentError(f"Not an instance id: {instance_id!r}.")
        return self.folder / f"{instance_id}.json"

    def load(self, instance_id: str) -> list[dict[str, Any]]:
        """The saved messages, or ``[]`` when this instance has no saved conversation."""
        document = self.document(instance_id)
        return document["messages"] if document is not None else []

    def document(self, instance_id: str) -> dict[str, Any] | None:
        """The saved conversation whole (format, saved_at, messages, seen), or None."""
        path = self.path(instance_id)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StoreError(f"Cannot read the conversation {path}: {exc.strerror or exc}.") from exc
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise StoreError(
                f"The conversation file {path} is corrupt (not JSON: {exc.msg}, line {exc.lineno})."
            ) from exc
        if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("messages"), list):
            raise StoreError(f"The conversation file {path} is not a formctl conversation (format {FORMAT}).")
        messages: list[dict[str, Any]] = data["messages"]
        if not all(isinstance(m, dict) and m.get("role") in ("user", "assistant") for m in messages):
            raise StoreError(f"The conversation file {path} is corrupt (a message without a user/assistant role).")
        return data

    def documents(self) -> tuple[dict[str, dict[str, Any]], list[str]]:
        """Every saved conversation, whole, by instance id (``formctl store copy``), and one line
        for each file that cannot be read as one (left where it is)."""
        try:
            names = sorted(os.listdir(self.folder))
        except FileNotFoundError:
            return {}, []
        except OSError as exc:
            raise StoreError(f"Cannot list the conversations in {self.folder}: {exc.strerror or exc}.") from None
        out: dict[str, dict[str, Any]] = {}
        unreadable: list[str] = []
        for name in names:
            instance_id = name[: -len(".json")]
            if not name.endswith(".json") or not _SAFE_ID.match(instance_id):
                continue  # a damaged one set aside (.json.damaged), a temporary file
            try:
                document = self.document(instance_id)
            except StoreError as exc:
                unreadable.append(exc.message)
                continue
            except UnicodeDecodeError as exc:
                unreadable.append(
                    f"The conversation file {self.path(instance_id)} is corrupt (not UTF-8, byte {exc.start})."
                )
                continue
            if document is not None:
                out[instance_id] = document
        return out, unreadable

    def put_document(self, instance_id: str, document: dict[str, Any]) -> None:
        """Write a conversation exactly as given, its ``saved_at`` kept (a copy's), atomically."""
        path = self.path(instance_id)
        try:
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            replace_text(path, json.dumps(document, ensure_ascii=True, indent=1), private=True)
        except OSError as exc:
            raise StoreError(f"Cannot save the conversation {path}: {exc.strerror or exc}.") from exc

    def load_or_set_aside(self, instance_id: str) -> tuple[list[dict[str, Any]], str | None]:
        """The saved messages and None; or, when the file is damaged, ``[]`` and one sentence
        saying where the damaged file was moved (``<id>.json.damaged``, ``.damaged-2``, ...).

        The conversation is only the model's context: the answers live in the instance. Failing
        here would lock the person out of a form whose answers are intact, and saving a new
        conversation over the damaged file would lose it, so it is kept, renamed. A file that
        cannot be read at all (permissions, I/O) is not damaged: that still raises StoreError.
        """
        path = self.path(instance_id)
        try:
            return self.load(instance_id), None
        except StoreError as exc:
            if isinstance(exc.__cause__, OSError):
                raise  # unreadable, not damaged: nothing to set aside
            why = exc.message
        except UnicodeDecodeError as exc:
            why = f"The conversation file {path} is corrupt (not UTF-8 text, byte {exc.start})."
        aside = path.with_name(path.name + ".damaged")
        n = 1
        while aside.exists():
            n += 1
            aside = path.with_name(f"{path.name}.damaged-{n}")
        try:
            os.rename(path, aside)
        except OSError as exc:
            raise StoreError(f"{why} It could not be moved aside ({exc.strerror or exc}).") from None
        return [], f"{why} It was moved to {aside}; the conversation starts afresh, and every answer is kept."

    def seen(self, instance_id: str) -> dict[str, Any] | None:
        """What the person was last shown of the instance, as saved with its conversation (or None)."""
        try:
            data = json.loads(self.path(instance_id).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        seen = data.get("seen") if isinstance(data, dict) else None
        return seen if isinstance(seen, dict) else None

    def model(self, instance_id: str) -> str | None:
        """The model the instance's conversation was last saved with (None: no conversation, or
        one saved before formctl recorded it). Read from the file's head, where the document's
        own keys come before its messages: ``formctl stats`` asks this of every instance."""
        if not _SAFE_ID.match(instance_id):
            return None
        try:
            with open(self.folder / f"{instance_id}.json", "rb") as f:
                head = f.read(1024).decode("utf-8", "replace")
        except OSError:
            return None
        found = _MODEL_KEY.search(head)
        if found is None:
            return None
        try:
            model = json.loads(found.group(1))
        except ValueError:
            return None
        return model if isinstance(model, str) else None

    def save(
        self,
        instance_id: str,
        messages: list[dict[str, Any]],
        *,
        seen: dict[str, Any] | None = None,
        model: str | None = None,
    ) -> Path:
        """Write the whole conversation atomically; returns the file's path."""
        path = self.path(instance_id)
        payload: dict[str, Any] = {
            "format": FORMAT,
            "instance_id": instance_id,
            "saved_at": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            **({"model": model} if model else {}),  # which model spoke (formctl stats counts by it)
            "messages": bounded(messages, 0),
        }
        if seen is not None:
            payload["seen"] = seen
        # ensure_ascii: a lone surrogate becomes a \udXXX escape instead of failing to encode.
        try:
            text = json.dumps(payload, ensure_ascii=True, indent=1)
        except (TypeError, ValueError) as exc:  # only an integer too long for Python to print
            raise StoreError(f"The conversation for {instance_id} cannot be saved as JSON: {exc}.") from exc
        try:
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            replace_text(path, text, private=True)
        except OSError as exc:
            raise StoreError(f"Cannot save the conversation {path}: {exc.strerror or exc}.") from exc
        return path

    def delete(self, instance_id: str) -> None:
        try:
            self.path(instance_id).unlink()
        except FileNotFoundError:
            pass


_MODEL_KEY = re.compile(r'\n "model": ("(?:[^"\\]|\\.)*")')
"""The document's own ``model`` key, as ``save`` writes it (``indent=1``: one space before a top-level key)."""


def bounded(value: Any, depth: int = 0) -> Any:
    """``value`` as plain JSON data, every subtree deeper than :data:`MAX_DEPTH` replaced by
    :data:`TOO_DEEP` (both stores of conversations save by this rule, docs/chat.md)."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (dict, list, tuple)) and depth >= MAX_DEPTH:
        return TOO_DEEP
    if isinstance(value, dict):
        return {key if isinstance(key, str) else str(key): bounded(item, depth + 1) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [bounded(item, depth + 1) for item in value]
    return str(value)
