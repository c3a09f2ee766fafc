"""``formctl store check`` and ``formctl store reindex``: the JSON store examined against itself.

``check`` reads every instance file from disk (bypassing any cache) and compares the index
with what the files hold, changing nothing. ``reindex`` rebuilds the index from the files
and removes temporary files left by interrupted writes. Neither ever touches a damaged
file: it is listed as a problem, with what is wrong, for a person to decide.

An index row *ahead* of its instance's files (the index acknowledged version 8, the files
hold 5) is not a stale index: acknowledged commits are gone from the files. Rebuilding
the index from the files would make it forget them too, so ``reindex`` keeps such a row
as the evidence, and both report it as a problem.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from formctl.forms.errors import StoreError
from formctl.forms.instance import Instance
from formctl.store import _durable
from formctl.store._index import Row
from formctl.store.ids import is_instance_id

if TYPE_CHECKING:
    from formctl.store.jsonfile import JsonFileAdapter

__all__ = ["StoreProblem", "StoreReport", "check", "reindex", "row_of", "scan_instances"]


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


def row_of(instance: Instance) -> Row:
    return (instance.id, instance.subject, instance.def_id, instance.status, instance.updated_at, instance.version)


def check(adapter: JsonFileAdapter) -> StoreReport:
    """Compare the index with the instance files; changes nothing."""
    with adapter.lock.held(exclusive=False):
        files, truth, problems, notes = scan_instances(adapter, fresh=True)
        index = adapter.index
        index_ok = index.refresh()
        if not index_ok:
            notes.append(f"{index.problem}; the index is rebuilt on next use, or by reindex.")
        else:
            damaged = {os.path.basename(p.path).partition(".")[0] for p in problems}
            awaiting = index.pending()
            if awaiting:
                notes.append(
                    f"{len(awaiting)} index row(s) await repair after an interrupted write; the next write repairs them."
                )
            indexed = index.rows()
            behind = {iid: p for iid, p in _behind_the_index(adapter, truth, indexed).items() if iid not in awaiting}
            problems.extend(behind.values())
            for iid in sorted(set(truth) | set(indexed)):
                if iid in awaiting or iid in damaged or iid in behind:
                    continue
                if indexed.get(iid) != truth.get(iid):
                    index_ok = False
                    notes.append(f"{index.path}: the row for {iid} does not match its instance file.")
        return StoreReport(
            directory=adapter.directory,
            files_checked=files,
            instances=len(truth),
            problems=tuple(problems),
            notes=tuple(notes),
            index_ok=index_ok,
        )


def reindex(adapter: JsonFileAdapter) -> StoreReport:
    """Rebuild the index from the instance files; remove temporary files left by crashes.

    Corrupt instance files are listed in ``problems`` and left exactly as they are.
    """
    adapter.ensure_layout()
    with adapter.lock.held(exclusive=True, for_write=True):
        notes = _remove_leftovers(adapter)
        files, truth, problems, scan_notes = scan_instances(adapter, fresh=True)
        index = adapter.index
        if index.refresh():
            seen, awaiting = index.rows(), index.pending()  # an interrupted write's row: not evidence of loss
        else:
            seen, awaiting = index.evidence, set()
        rows = dict(truth)
        behind = {iid: p for iid, p in _behind_the_index(adapter, truth, seen).items() if iid not in awaiting}
        problems.extend(behind.values())
        for iid in behind:  # keep the row that remembers the later version: the evidence
            rows[iid] = seen[iid]
        try:
            index.rewrite(rows.values())
        except OSError as exc:
            raise _durable.os_error(exc, f"write the index {index.path}") from None
        return StoreReport(
            directory=adapter.directory,
            files_checked=files,
            instances=len(truth),
            problems=tuple(problems),
            notes=tuple(notes + scan_notes),
            index_ok=True,
            index_rebuilt=True,
        )


def _behind_the_index(adapter: JsonFileAdapter, truth: dict[str, Row], indexed: dict[str, Row]) -> dict[str, StoreProblem]:
    """Instances whose files hold an older version than the index last recorded: commits the
    index saw are gone from the files (a deleted or truncated journal, an old snapshot
    restored over a newer one). "Run reindex" would be the wrong advice: it would make the
    index forget them too."""
    behind = {}
    for iid, row in truth.items():
        seen = indexed.get(iid)
        if seen is not None and seen[5] > row[5]:
            spath, _ = adapter.files.paths(iid)
            behind[iid] = StoreProblem(spath, (
                f"the index last recorded version {seen[5]}, but the instance's files hold version {row[5]}: "
                "later answers are missing (a deleted or truncated journal?); the files were left as they are."))
    return behind


def scan_instances(adapter: JsonFileAdapter, *, fresh: bool) -> tuple[int, dict[str, Row], list[StoreProblem], list[str]]:
    """Read every instance in the folder: (files read, rows of the good ones, problems, notes)."""
    folder = adapter.files.folder
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
                loaded = adapter.files.read(stem, fresh=fresh)
            except StoreError as exc:
                where = getattr(exc, "path", path)
                problems.append(StoreProblem(where, getattr(exc, "reason", exc.message)))
                continue
            if loaded is not None:
                truth[stem] = row_of(loaded.instance)
    return files, truth, problems, notes


def _remove_leftovers(adapter: JsonFileAdapter) -> list[str]:
    """Delete ``*.tmp`` files: with the lock held exclusively no write is in flight, so every
    temporary file belongs to a writer that died."""
    notes = []
    for folder in (adapter.files.folder, adapter.directory):
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            if name.endswith(_durable.TEMP_SUFFIX):
                _durable.remove_quietly(os.path.join(folder, name))
                notes.append(f"removed {os.path.join(folder, name)} (left by an interrupted write)")
    return notes
