"""The JSON store's file formats: the instance snapshot and the journal's commit records.

A snapshot ``instances/<id>.json`` is one JSON document::

    {"format": 1, "version": N, "updated_at": ..., "seq": S, "instance": {...},
     "repairs": [...]}     # only after `formctl store repair` accepted a loss

``seq`` is the number of the last journal record folded into it. A journal record's
commit (``"c"``) holds the :class:`~formctl.forms.instance.Commit` with its revisions in
the instance codec's compact form (:func:`~formctl.forms.instance.encode_entry`).

Nothing here touches a file: parsing takes bytes and the path they came from (for the
message), and a malformed document raises :class:`StoreError` naming that path.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from formctl.errors import StoreError
from formctl.forms.instance import (
    UNSET,
    Commit,
    DispatchState,
    EntryCommit,
    Instance,
    ProvKey,
    ProvRow,
    decode_entry,
    encode_entry,
    instance_from_json,
    instance_to_json,
    provenance_rows,
)

__all__ = [
    "FORMAT",
    "commit_from_json",
    "commit_to_json",
    "file_error",
    "parse_snapshot",
    "snapshot_bytes",
    "unsupported_format",
]

FORMAT = 1
"""The on-disk format the store writes and the only one it reads."""

_MERGED = ("entries", "occurrences", "dispatches")
_REPLACED = tuple(f.name for f in dataclasses.fields(Commit) if f.name not in _MERGED)


def commit_to_json(commit: Commit) -> dict[str, Any]:
    """A commit as plain JSON data, its revisions in the instance codec's compact form."""
    d: dict[str, Any] = {}
    if commit.entries:
        prov_index: dict[ProvKey, int] = {}
        prov_table: list[ProvRow] = []
        entries: dict[str, Any] = {}
        for field_id, change in commit.entries.items():
            e: dict[str, Any] = {"a": [encode_entry(x, prov_index, prov_table) for x in change.append]}
            if change.cursor is not None:
                e["c"] = change.cursor
            entries[field_id] = e
        d["entries"] = entries
        d["prov"] = prov_table
    if commit.occurrences:
        d["occurrences"] = dict(commit.occurrences)
    if commit.dispatches:
        d["dispatches"] = {k: v.to_dict() for k, v in commit.dispatches.items()}
    for name in _REPLACED:
        value = getattr(commit, name)
        if value is not UNSET:
            d[name] = value
    return d


def commit_from_json(d: dict[str, Any]) -> Commit:
    """The inverse of :func:`commit_to_json`."""
    commit = Commit()
    if "entries" in d:
        table = d["prov"]
        rows = provenance_rows(table)
        commit.entries = {
            field_id: EntryCommit(tuple(decode_entry(r, table, rows) for r in e["a"]), e.get("c"))
            for field_id, e in d["entries"].items()
        }
    if "occurrences" in d:
        commit.occurrences = dict(d["occurrences"])
    if "dispatches" in d:
        commit.dispatches = {k: DispatchState.from_dict(v) for k, v in d["dispatches"].items()}
    for name in _REPLACED:
        if name in d:
            setattr(commit, name, d[name])
    return commit


def dumps(value: Any) -> bytes:
    """Compact UTF-8 JSON, as every store file writes it."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def snapshot_bytes(instance: Instance, seq: int, repairs: tuple[dict[str, Any], ...] = ()) -> bytes:
    doc: dict[str, Any] = {
        "format": FORMAT,
        "version": instance.version,
        "updated_at": instance.updated_at,
        "seq": seq,
        "instance": instance_to_json(instance),
    }
    if repairs:
        doc["repairs"] = list(repairs)
    return dumps(doc)


def file_error(path: str, reason: str) -> StoreError:
    """A damaged file: the message names it; ``path`` and ``reason`` are kept for reports."""
    return StoreError(f"{path}: {reason}", path=path, reason=reason)


def unsupported_format(path: str, found: Any) -> StoreError:
    return file_error(
        path,
        f"written in store format {found!r}, but this formctl reads format {FORMAT} only; "
        "use the formctl version that wrote it (the file was left as it is).",
    )


def parse_snapshot(path: str, iid: str, data: bytes) -> tuple[Instance, int, tuple[dict[str, Any], ...]]:
    """``(instance, seq, repairs)`` from a snapshot's bytes, or :class:`StoreError` naming ``path``."""
    if not data.strip():
        raise file_error(path, "the file is empty (truncated?); it was left as it is.")
    try:
        doc = json.loads(data)
    except UnicodeDecodeError as exc:
        raise file_error(
            path, f"not UTF-8 text (byte {exc.start}); the file is corrupt and was left as it is."
        ) from None
    except json.JSONDecodeError as exc:
        raise file_error(
            # json's own messages may end in "at" ("Unterminated string starting at").
            path,
            f"not valid JSON ({exc.msg.removesuffix(' at')} at line {exc.lineno}, column {exc.colno}); "
            "the file is truncated or corrupt and was left as it is.",
        ) from None
    if not isinstance(doc, dict) or "format" not in doc:
        raise file_error(path, "not a formctl instance file (no format number); it was left as it is.")
    if doc["format"] != FORMAT:
        raise unsupported_format(path, doc["format"])
    try:
        instance = instance_from_json(doc["instance"])
        version, seq = doc["version"], int(doc.get("seq", 0))
        repairs = tuple(dict(r) for r in doc.get("repairs", ()))
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise file_error(
            path, f"the instance record is malformed ({type(exc).__name__}: {exc}); it was left as it is."
        ) from None
    if instance.id != iid:
        raise file_error(path, f"holds instance {instance.id!r}, not {iid!r}; it was left as it is.")
    if instance.version != version:
        raise file_error(path, f"version {version} disagrees with its instance's version {instance.version}.")
    return instance, seq, repairs
