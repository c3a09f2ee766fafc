"""``formctl store check``, ``reindex`` and ``repair``: the JSON store examined against itself.

``check`` reads every instance file from disk (bypassing any cache) and compares the index
with what the files hold, changing nothing. ``reindex`` rebuilds the index from the files
and removes temporary files left by interrupted writes. Neither ever touches a damaged
file: it is listed as a problem, with what is wrong, for a person to decide.

An index row *ahead* of its instance's files (the index acknowledged version 8, the files
hold 5) is not a stale index: acknowledged commits are gone from the files. Rebuilding
the index from the files would make it forget them too, so ``reindex`` keeps such a row
as the evidence, and both report it as a problem. ``repair`` is the one way past it: a
person accepts the loss of one instance's missing versions (:mod:`formctl.store.damage`).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from formctl.errors import StoreError
from formctl.forms.instance import Instance, now_iso
from formctl.store import _durable
from formctl.store._index import Index, Row
from formctl.store.base import missing
from formctl.store.codec import snapshot_bytes
from formctl.store.damage import Damage
from formctl.store.files import InstanceFiles, Loaded, encoded
from formctl.store.ids import is_instance_id
from formctl.store.locking import StoreLock


class FileStore(Protocol):
    """What maintenance needs of a store of instance files (a ``JsonFileAdapter`` is one): its
    parts, and the three steps every write to it takes. Declared here, so that maintenance does
    not import the adapter that calls it."""

    directory: str
    files: InstanceFiles
    index: Index
    lock: StoreLock

    def ensure_layout(self) -> None: ...

    def before_write(self) -> None:
        """With the lock held exclusively: the index up to date, what a dead writer left settled."""
        ...

    def damage_of(self, iid: str, loaded: Loaded) -> Damage | None: ...

    def mark(self, iid: str, subject: str) -> None:
        """Mark the instance's index row pending before its files change."""
        ...


__all__ = ["Repair", "StoreProblem", "StoreReport", "check", "reindex", "repair", "row_of", "scan_instances"]

DAMAGED_COPY = ".damaged-"
"""``instances/<id>.damaged-<time>/``: the copy of a damaged instance's files that ``repair`` keeps."""


@dataclass(frozen=True, slots=True)
class StoreProblem:
    """A file that needs a person: what is wrong with it, in one line."""

    path: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "message": self.message}


@dataclass(frozen=True, slots=True)
class StoreReport:
    """What ``check()`` or ``reindex()`` found, ready for ``formctl store check|reindex`` to print.

    ``problems`` are files that need a person (corrupt, truncated, unknown format); they are
    never touched. ``notes`` are harmless and self-repairing (a temporary file left by an
    interrupted write, an index row that the next write repairs). ``index_ok`` says whether
    the index matched the instance files when the report was made.
    """

    directory: str
    files_checked: int
    instances: int
    problems: tuple[StoreProblem, ...] = ()
    notes: tuple[str, ...] = ()
    index_ok: bool = True
    index_rebuilt: bool = False

    @property
    def ok(self) -> bool:
        return not self.problems and self.index_ok

    def to_dict(self) -> dict[str, Any]:
        return {
            "directory": self.directory,
            "ok": self.ok,
            "files_checked": self.files_checked,
            "instances": self.instances,
            "problems": [p.to_dict() for p in self.problems],
            "notes": list(self.notes),
            "index_ok": self.index_ok,
            "index_rebuilt": self.index_rebuilt,
        }


@dataclass(frozen=True, slots=True)
class Repair:
    """What ``repair`` did: the loss it recorded, and where the damaged files were copied."""

    instance_id: str
    lost: tuple[int, int] | None  # the versions lost, first and last
    reason: str
    by: str
    at: str
    kept: str  # the folder holding the copy of the damaged files
    version: int  # the instance's version now; writes continue from it

    def to_dict(self) -> dict[str, Any]:
        return {
            "instance_id": self.instance_id,
            "lost_versions": {"from": self.lost[0], "to": self.lost[1]} if self.lost else None,
            "reason": self.reason,
            "repaired_by": self.by,
            "repaired_at": self.at,
            "kept": self.kept,
            "version": self.version,
        }


def row_of(instance: Instance) -> Row:
    return (instance.id, instance.subject, instance.def_id, instance.status, instance.updated_at, instance.version)


def check(store: FileStore) -> StoreReport:
    """Compare the index with the instance files; changes nothing."""
    with store.lock.held(exclusive=False):
        files, truth, problems, notes = scan_instances(store, fresh=True)
        index = store.index
        index_ok = index.refresh()
        if not index_ok and not truth and not problems:
            index_ok = True  # no instance at all (a chat on another store left only its lock): nothing to index
        elif not index_ok:
            notes.append(f"{index.problem}; the index is rebuilt on next use, or by reindex.")
        else:
            damaged = {os.path.basename(p.path).partition(".")[0] for p in problems}
            awaiting = index.pending()
            if awaiting:
                notes.append(
                    f"{len(awaiting)} index row(s) await repair after an interrupted write; the next write repairs them."
                )
            indexed = index.rows()
            behind = {
                iid: p
                for iid, p in _behind_the_index(store, truth, indexed).items()
                if iid not in awaiting and iid not in damaged
            }
            problems.extend(behind.values())
            for iid in sorted(set(truth) | set(indexed)):
                if iid in awaiting or iid in damaged or iid in behind:
                    continue
                if indexed.get(iid) != truth.get(iid):
                    index_ok = False
                    notes.append(f"{index.path}: the row for {iid} does not match its instance file.")
        return StoreReport(
            directory=store.directory,
            files_checked=files,
            instances=len(truth),
            problems=tuple(problems),
            notes=tuple(notes),
            index_ok=index_ok,
        )


def reindex(store: FileStore) -> StoreReport:
    """Rebuild the index from the instance files; remove temporary files left by crashes.

    Corrupt instance files are listed in ``problems`` and left exactly as they are.
    """
    store.ensure_layout()
    with store.lock.held(exclusive=True, for_write=True):
        notes = _remove_leftovers(store)
        files, truth, problems, scan_notes = scan_instances(store, fresh=True)
        index = store.index
        if index.refresh():
            seen, awaiting = index.rows(), index.pending()  # an interrupted write's row: not evidence of loss
        else:
            seen, awaiting = index.evidence, set()
        rows = dict(truth)
        behind = {iid: p for iid, p in _behind_the_index(store, truth, seen).items() if iid not in awaiting}
        problems.extend(behind.values())
        for iid in behind:  # keep the row that remembers the later version: the evidence
            rows[iid] = seen[iid]
        try:
            index.rewrite(rows.values())
        except OSError as exc:
            raise _durable.os_error(exc, f"write the index {index.path}") from None
        return StoreReport(
            directory=store.directory,
            files_checked=files,
            instances=len(truth),
            problems=tuple(problems),
            notes=tuple(notes + scan_notes),
            index_ok=True,
            index_rebuilt=True,
        )


def _behind_the_index(store: FileStore, truth: dict[str, Row], indexed: dict[str, Row]) -> dict[str, StoreProblem]:
    """Instances whose files hold an older version than the index last recorded: commits the
    index saw are gone from the files (a deleted or truncated journal, an old snapshot
    restored over a newer one). "Run reindex" would be the wrong advice: it would make the
    index forget them too."""
    behind = {}
    for iid, row in truth.items():
        seen = indexed.get(iid)
        if seen is not None and seen[5] > row[5]:
            spath, _ = store.files.paths(iid)
            behind[iid] = StoreProblem(
                spath,
                (
                    f"the index last recorded version {seen[5]}, but the instance's files hold version {row[5]}: "
                    "later answers are missing (a deleted or truncated journal?); the files were left as they are. "
                    f"Writes to it are refused: `formctl store repair {iid}` accepts the loss."
                ),
            )
    return behind


def scan_instances(store: FileStore, *, fresh: bool) -> tuple[int, dict[str, Row], list[StoreProblem], list[str]]:
    """Read every instance in the folder: (files read, rows of the good ones, problems, notes)."""
    folder = store.files.folder
    try:
        names = sorted(os.listdir(folder))
    except FileNotFoundError:
        return 0, {}, [], []
    except OSError as exc:
        raise _durable.os_error(exc, f"list {folder}") from None
    present = set(names)
    files = 0
    truth: dict[str, Row] = {}
    problems: list[StoreProblem] = []
    notes: list[str] = []
    for name in names:
        path = os.path.join(folder, name)
        stem, _, ext = name.partition(".")
        if DAMAGED_COPY in name and os.path.isdir(path):
            continue  # a copy kept by repair
        if name.endswith(_durable.TEMP_SUFFIX):
            notes.append(f"{path}: temporary file left by an interrupted write (harmless; reindex removes it).")
        elif not is_instance_id(stem) or ext not in ("json", "journal"):
            notes.append(f"{path}: not a formctl instance file; ignored.")
        elif ext == "journal":
            if f"{stem}.json" not in present:
                problems.append(StoreProblem(path, "a journal without its snapshot file; left as it is."))
        else:
            files += 1 + (f"{stem}.journal" in present)
            try:
                loaded = store.files.read(stem, fresh=fresh)
            except StoreError as exc:
                problems.append(StoreProblem(exc.path or path, exc.reason or exc.message))
                continue
            if loaded is None:
                continue
            row = row_of(loaded.instance)
            if loaded.corrupt is not None:
                c = loaded.corrupt
                problems.append(
                    StoreProblem(
                        c.path,
                        (
                            f"{c.reason}; the journal is corrupt and was left as it is. Reads stop before it and writes "
                            f"are refused: `formctl store repair {stem}` accepts the loss."
                        ),
                    )
                )
                row = row[:5] + (max(row[5], c.last_version),)  # the version it is known to have reached
            truth[stem] = row
    return files, truth, problems, notes


def _remove_leftovers(store: FileStore) -> list[str]:
    """Delete ``*.tmp`` files: with the lock held exclusively no write is in flight, so every
    temporary file belongs to a writer that died."""
    notes = []
    old_index = os.path.join(store.directory, "index")  # the 64 shards of formctl 0.1's first stores
    if os.path.isdir(old_index) and all(n.endswith(".jsonl") for n in os.listdir(old_index)):
        shutil.rmtree(old_index, ignore_errors=True)
        notes.append(f"removed {old_index} (the old index folder; the index is now {store.index.path})")
    for folder in (store.files.folder, store.directory):
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            if name.endswith(_durable.TEMP_SUFFIX):
                _durable.remove_quietly(os.path.join(folder, name))
                notes.append(f"removed {os.path.join(folder, name)} (left by an interrupted write)")
    return notes


def repair(store: FileStore, iid: str, *, by: str) -> Repair | None:
    """Accept the loss of a damaged instance's missing versions; None if it is not damaged.

    In this order, so that a crash at any point loses nothing and ``repair`` can be run
    again: copy the files into ``instances/<id>.damaged-<time>/`` (synced); remove the
    journal; write a new snapshot of what reads showed, at the version after the last one
    lost, carrying the record of the loss (``repairs``); then the index row.
    """
    if not is_instance_id(iid):
        raise missing(iid)
    store.ensure_layout()
    with store.lock.held(exclusive=True, for_write=True):
        files = store.files
        loaded = files.read(iid, fresh=True)
        if loaded is None:
            raise missing(iid)
        store.before_write()
        damage = store.damage_of(iid, loaded)
        if damage is None:
            return None
        at = now_iso()
        spath, jpath = files.paths(iid)
        kept, journal_lines = _keep_copy(files.folder, iid, spath, jpath)
        instance = loaded.instance.copy()
        instance.version = max(damage.lost_to, damage.holds_version) + 1
        instance.updated_at = at
        record = {
            "at": at,
            "by": by,
            "lost": list(damage.lost) if damage.lost else None,
            "reason": damage.reason,
            "kept": os.path.relpath(kept, store.directory),
        }
        # Past every record number the old journal can hold, so none of it is ever replayed again.
        seq = loaded.seq + journal_lines + 1
        data = encoded(lambda: snapshot_bytes(instance, seq, loaded.repairs + (record,)))
        subject = instance.subject
        store.mark(iid, subject)
        try:
            if os.path.exists(jpath):
                os.unlink(jpath)
                _durable.sync_dir(files.folder)
            _durable.replace_atomically(spath, data)
        except OSError as exc:
            files.forget(iid)
            store.index.put(iid, subject, row_of(loaded.instance))
            raise _durable.os_error(exc, f"write {spath}") from None
        files.forget(iid)
        store.index.put(iid, subject, row_of(instance))
        return Repair(iid, damage.lost, damage.reason, by, at, kept, instance.version)


def _keep_copy(folder: str, iid: str, *paths: str) -> tuple[str, int]:
    """Copy the instance's files (those that exist) into a new private folder beside them, durably.
    Returns the folder and the number of lines the journal held."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    kept = os.path.join(folder, f"{iid}{DAMAGED_COPY}{stamp}")
    lines = 0
    try:
        _durable.make_dir(kept)
        for path in paths:
            try:
                with open(path, "rb") as f:
                    data = f.read()
            except FileNotFoundError:
                continue
            if path.endswith(".journal"):
                lines = data.count(b"\n") + 1
            fd = _durable.open_private(os.path.join(kept, os.path.basename(path)), os.O_WRONLY | os.O_CREAT | os.O_EXCL)
            try:
                _durable.write_all(fd, data)
                _durable.sync(fd)
            finally:
                os.close(fd)
        _durable.sync_dir(kept)
        _durable.sync_dir(folder)
    except OSError as exc:
        raise _durable.os_error(exc, f"keep a copy of the damaged files in {kept}") from None
    return kept, lines
