"""Conversations saved beside their instance, so ``formctl resume ID`` continues with its context.

A conversation is shared by every chat on its instance and only ever grows by exchanges
(:mod:`formctl.store._conversation`). In a folder store, per instance:

* ``<store>/conversations/<id>.jsonl``: one JSON line per save of an exchange
  (``{"pos", "chat", "at", "messages", "words", "seen"?}``; the last line of each ``pos`` is the
  one read) or per number given out (``{"claim": [exchanges, turns]}``). Lines are appended
  under the file's ``flock``, each written whole and fsynced before the save returns, so two
  chats in two processes never write over each other; a last line cut short (its writer was
  killed) is not read, a damaged line with lines after it is damage.
* ``<store>/conversations/<id>.json``: a conversation saved whole by an earlier formctl
  (``{"format": 1, "messages": [...], "seen": {...}}``), read as its first part, never written
  by a chat.

``messages`` are :attr:`ChatLoop.messages` of the exchange: the conversation without tier-0
text (that is re-rendered from stored state on every call, so a resumed conversation sees
the form as it is now, not as it was). Files are created ``0600``: a conversation holds what
the person said. ``seen`` is what the person was last shown of the instance (see
:mod:`formctl.agent.notices`), so a resumed chat can say what changed meanwhile. Ids are
checked before they become a path. A damaged file is moved aside with its path said, never
silently replaced.

Saving never fails on content: the file is written with every non-ASCII character escaped,
so any string the model or the person produced (a lone surrogate from a terminal that could
not decode a byte included) loads back as the same string. A value nested deeper than
:data:`MAX_DEPTH` levels (counted from the message list) is saved as the placeholder
:data:`TOO_DEEP` instead of its subtree; a value JSON has no type for is saved as its text.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from formctl.errors import InvalidArgumentError, StoreError
from formctl.files import replace_text
from formctl.forms.exchange import ExchangeSave
from formctl.store._conversation import (
    Conversation,
    Part,
    check_messages,
    document,
    from_document,
    settled,
    stored_part,
)
from formctl.store._durable import read_document

__all__ = ["ConversationStore"]

FORMAT = 1
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
# Instance ids are generated (store/ids.py); this is the looser shape any adapter's ids
# must have to be a file name here: no separators, no dots, nothing a path could escape with.
_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$")
# Real conversations nest a handful of levels (message, content block, tool input, value);
# the bound keeps a model's runaway value from reaching the interpreter's recursion limit.
MAX_DEPTH = 64
TOO_DEEP = f"[not saved: nested deeper than {MAX_DEPTH} levels]"


class ConversationStore:
    """The chats' conversations under ``<directory>/conversations`` (the module's docstring):
    ``open`` for a chat that opens (a damaged file is kept, renamed, and the chat goes on),
    ``claim`` and ``save_exchange`` for its turns."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.folder = self.directory / "conversations"

    def path(self, instance_id: str) -> Path:
        """The conversation saved whole by an earlier formctl (read, never written by a chat)."""
        if not isinstance(instance_id, str) or not _SAFE_ID.match(instance_id):
            raise InvalidArgumentError(f"Not an instance id: {instance_id!r}.")
        return self.folder / f"{instance_id}.json"

    def log(self, instance_id: str) -> Path:
        """The exchanges of every chat, one JSON line per save or number given out."""
        return self.path(instance_id).with_suffix(".jsonl")

    # ------------------------------------------------------------------ reading

    def conversation(self, instance_id: str) -> Conversation:
        """Every part of the conversation, in order (empty when none was saved)."""
        parts: list[Part] = []
        legacy = self.document(instance_id)
        seen = legacy.get("seen") if legacy is not None and isinstance(legacy.get("seen"), dict) else None
        if legacy is not None:
            parts.append(Part(0, "", legacy["messages"], None, str(legacy.get("saved_at", ""))))
        exchanges, turns, later, later_seen = self._read_log(instance_id)
        return settled([*parts, *later.values()], later_seen if later_seen is not None else seen, exchanges, turns)

    def load(self, instance_id: str) -> list[dict[str, Any]]:
        """The saved messages of every chat, in order, or ``[]`` when this instance has none."""
        return self.conversation(instance_id).messages

    def document(self, instance_id: str) -> dict[str, Any] | None:
        """The conversation saved whole by an earlier formctl (format 1), or None."""
        path = self.path(instance_id)
        data = read_document(path, "conversation", FORMAT)
        if data is None:
            return None
        if not isinstance(data.get("messages"), list):
            raise StoreError(f"The conversation file {path} holds no messages.")
        check_messages(data["messages"], str(path))
        return data

    def _read_log(self, instance_id: str) -> tuple[int, int, dict[int, Part], dict[str, Any] | None]:
        """(exchanges, turns given out, the last save of each exchange, the last ``seen``). A
        last line cut short (its writer was killed mid-write) is not there; a damaged line
        with lines after it is damage (a StoreError naming the file)."""
        path = self.log(instance_id)
        text = _read(path)
        exchanges = turns = 0
        parts: dict[int, Part] = {}
        seen: dict[str, Any] | None = None
        lines = (text or "").split("\n")
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                if not isinstance(record, dict):
                    raise ValueError("not an object")
                if isinstance(record.get("seen"), dict):
                    seen = record["seen"]
                if "claim" in record:
                    exchanges, turns = max(exchanges, int(record["claim"][0])), max(turns, int(record["claim"][1]))
                    continue
                where = f"{path}, line {number}"
                pos, chat, at = int(record["pos"]), str(record["chat"]), str(record.get("at", ""))
                part = stored_part(pos, chat, record["messages"], record["words"], at, where)
            except (ValueError, KeyError, TypeError, IndexError) as exc:
                if number == len(lines) and number > 1:
                    continue  # the last line, cut short (no newline after it): never acknowledged
                raise StoreError(f"The conversation file {path} is corrupt (line {number}: {exc}).") from None
            held = parts.get(part.pos)
            if held is not None and held.chat != part.chat:
                raise StoreError(f"The conversation file {path} is corrupt (exchange {part.pos} written by two chats).")
            parts[part.pos] = part
        return exchanges, turns, parts, seen

    def whole(self, instance_id: str) -> dict[str, Any] | None:
        """The conversation as ``formctl store copy`` hands it over, or None when there is none."""
        conversation = self.conversation(instance_id)
        return document(instance_id, conversation, _saved_at(conversation)) if conversation.parts else None

    def documents(self) -> tuple[dict[str, dict[str, Any]], list[str]]:
        """Every saved conversation, whole (:func:`formctl.store._conversation.document`), by
        instance id (``formctl store copy``), and one line for each that cannot be read (left
        where it is)."""
        try:
            names = sorted(os.listdir(self.folder))
        except FileNotFoundError:
            return {}, []
        except OSError as exc:
            raise StoreError(f"Cannot list the conversations in {self.folder}: {exc.strerror or exc}.") from None
        out: dict[str, dict[str, Any]] = {}
        unreadable: list[str] = []
        ids = sorted({n.rsplit(".", 1)[0] for n in names if n.endswith((".json", ".jsonl"))})
        for instance_id in ids:
            if not _SAFE_ID.match(instance_id):
                continue  # a temporary file
            try:
                conversation = self.conversation(instance_id)
            except StoreError as exc:
                unreadable.append(exc.message)
                continue
            except UnicodeDecodeError as exc:
                unreadable.append(
                    f"A conversation file of {instance_id} in {self.folder} is not UTF-8 (byte {exc.start})."
                )
                continue
            if conversation.parts:
                out[instance_id] = document(instance_id, conversation, _saved_at(conversation))
        return out, unreadable

    def put_document(self, instance_id: str, given: dict[str, Any]) -> None:
        """Write a conversation exactly as given (``formctl store copy``), each file atomically."""
        conversation = from_document(given, f"the copy of {instance_id}'s conversation")
        lines = [json.dumps({"claim": [conversation.exchanges, conversation.turns]})]
        for part in conversation.parts:
            if part.pos:
                lines.append(_record(part, None))
        if conversation.seen is not None:
            lines.append(json.dumps({"claim": [0, 0], "seen": conversation.seen}))
        earlier = [p for p in conversation.parts if not p.pos]
        try:
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            if earlier:
                legacy = {"format": FORMAT, "instance_id": instance_id, "saved_at": earlier[0].saved_at}
                replace_text(
                    self.path(instance_id),
                    json.dumps({**legacy, "messages": earlier[0].messages}, ensure_ascii=True, indent=1),
                    private=True,
                )
            replace_text(self.log(instance_id), "".join(line + "\n" for line in lines), private=True)
        except OSError as exc:
            raise StoreError(f"Cannot save the conversation of {instance_id}: {exc.strerror or exc}.") from exc

    def load_or_set_aside(self, instance_id: str) -> tuple[list[dict[str, Any]], str | None]:
        """:meth:`open`'s messages and its sentence."""
        conversation, note = self.open(instance_id)
        return conversation.messages, note

    def open(self, instance_id: str) -> tuple[Conversation, str | None]:
        """The conversation and None; or, when a file of it is damaged, what is left and one
        sentence saying where the damaged file was moved (``<name>.damaged``, ``.damaged-2``, ...).

        The conversation is only the model's context: the answers live in the instance. Failing
        here would lock the person out of a form whose answers are intact, and saving over the
        damaged file would lose it, so it is kept, renamed. A file that cannot be read at all
        (permissions, I/O) is not damaged: that still raises StoreError.
        """
        notes: list[str] = []
        readers = ((self.path(instance_id), self.document), (self.log(instance_id), self._read_log))
        for path, read in readers:
            try:
                read(instance_id)
                continue
            except StoreError as exc:
                if isinstance(exc.__cause__, OSError):
                    raise  # unreadable, not damaged: nothing to set aside
                why = exc.message
            except UnicodeDecodeError as exc:
                why = f"The conversation file {path} is corrupt (not UTF-8 text, byte {exc.start})."
            notes.append(f"{why} It was moved to {_set_aside(path, why)}.")
        conversation = self.conversation(instance_id)
        if not notes:
            return conversation, None
        goes_on = "goes on from what is left" if conversation.parts else "starts afresh"
        return conversation, " ".join(notes)[:-1] + f"; the conversation {goes_on}, and every answer is kept."

    def seen(self, instance_id: str) -> dict[str, Any] | None:
        """What the person was last shown of the instance, as saved with its conversation (or None)."""
        try:
            return self.conversation(instance_id).seen
        except (StoreError, ValueError):
            return None

    def model(self, instance_id: str) -> str | None:
        """The model that answered the instance's latest saved exchange (None: no conversation, or
        none saved since formctl recorded it). Read from the log's last few kilobytes, where each
        record names its model before its messages: ``formctl stats`` asks this of every instance."""
        if not _SAFE_ID.match(instance_id):
            return None
        try:
            with open(self.log(instance_id), "rb") as f:
                f.seek(max(0, os.fstat(f.fileno()).st_size - _TAIL))
                tail = f.read().decode("utf-8", "replace")
        except OSError:
            return None
        found = _MODEL_KEY.findall(tail)
        if not found:
            return None
        try:
            model = json.loads(found[-1])
        except ValueError:
            return None
        return model if isinstance(model, str) else None

    # ------------------------------------------------------------------ writing

    def claim(self, instance_id: str, *, exchange: bool, turn: bool, known: tuple[int, int]) -> tuple[int, int]:
        """The next exchange number (when ``exchange``) and the next turn number (when ``turn``),
        given out once for every chat on this instance (0 for the one not asked for): under the
        file's lock, the highest given out (or ``known`` to the chat, if higher) plus one."""
        with self._locked(instance_id) as fd:
            exchanges, turns, _, _ = self._read_log(instance_id)
            exchanges, turns = max(exchanges, known[0]) + exchange, max(turns, known[1]) + turn
            _append(fd, json.dumps({"claim": [exchanges, turns]}))
        return (exchanges if exchange else 0), (turns if turn else 0)

    def save_exchange(self, instance_id: str, save: ExchangeSave) -> Path:
        """Append this save of one exchange (the last save of each exchange is the one read);
        returns the file's path. No other chat's exchange is touched."""
        record = _record(Part(save.pos, save.chat, save.messages, save.words), save.seen, save.model)
        with self._locked(instance_id) as fd:
            _append(fd, record)
        return self.log(instance_id)

    def save(self, instance_id: str, messages: list[dict[str, Any]], *, seen: dict[str, Any] | None = None) -> Path:
        """Add ``messages`` as one new exchange (a host's program saving a conversation of its own)."""
        pos, _ = self.claim(instance_id, exchange=True, turn=False, known=(0, 0))
        return self.save_exchange(instance_id, ExchangeSave(pos, "host", messages, [], seen))

    def delete(self, instance_id: str) -> None:
        for path in (self.path(instance_id), self.log(instance_id)):
            try:
                path.unlink()
            except FileNotFoundError:
                pass

    @contextmanager
    def _locked(self, instance_id: str) -> Iterator[int]:
        """The log open for appending under its ``flock``, a last line cut short (its writer was
        killed mid-write, so it was never acknowledged) cut off first."""
        path = self.log(instance_id)
        try:
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            new = not path.exists()
            fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | _O_CLOEXEC, 0o600)
        except OSError as exc:
            raise StoreError(f"Cannot save the conversation {path}: {exc.strerror or exc}.") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if new:
                _sync_folder(self.folder)
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                whole = os.pread(fd, size, 0)
                os.ftruncate(fd, whole.rfind(b"\n") + 1)
            yield fd
        except OSError as exc:
            raise StoreError(f"Cannot save the conversation {path}: {exc.strerror or exc}.") from exc
        finally:
            os.close(fd)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StoreError(f"Cannot read the conversation {path}: {exc.strerror or exc}.") from exc


_TAIL = 64 * 1024
_MODEL_KEY = re.compile(r'^\{"pos":\d+,"chat":"[^"]*","model":("(?:[^"\\]|\\.)*")', re.M)
"""A record's own ``model`` key, as :func:`_record` writes it (right after ``pos`` and ``chat``)."""


def _record(part: Part, seen: dict[str, Any] | None, model: str | None = None) -> str:
    record: dict[str, Any] = {
        "pos": part.pos,
        "chat": part.chat,
        **({"model": model} if model else {}),
        "at": part.saved_at or _now(),
        "messages": bounded(part.messages, 0),
        "words": [[n, text] for n, text in part.words or []],
    }
    if seen is not None:
        record["seen"] = seen
    # ensure_ascii: a lone surrogate becomes a \udXXX escape instead of failing to encode.
    try:
        return json.dumps(record, ensure_ascii=True, separators=(",", ":"))
    except (TypeError, ValueError) as exc:  # only an integer too long for Python to print
        raise StoreError(f"The conversation cannot be saved as JSON: {exc}.") from exc


def _append(fd: int, line: str) -> None:
    """One whole line, flushed to the disk before the save is acknowledged."""
    data = (line + "\n").encode("utf-8")
    while data:
        data = data[os.write(fd, data) :]
    os.fsync(fd)


def _set_aside(path: Path, why: str) -> Path:
    aside = path.with_name(path.name + ".damaged")
    n = 1
    while aside.exists():
        n += 1
        aside = path.with_name(f"{path.name}.damaged-{n}")
    try:
        os.rename(path, aside)
    except OSError as exc:
        raise StoreError(f"{why} It could not be moved aside ({exc.strerror or exc}).") from None
    return aside


def _sync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _saved_at(conversation: Conversation) -> str:
    return max((p.saved_at for p in conversation.parts), default="") or _now()


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
