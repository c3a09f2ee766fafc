"""JsonFileAdapter: the durable local store, safe across crashes and concurrent processes.

Layout of a store folder (folders ``0700``, files ``0600``)::

    <dir>/lock                      flock(2) target: writers exclusive, readers shared
    <dir>/index/<nn>.jsonl          rebuildable index, 64 shards by subject: id -> subject, form,
                                    status, updated_at, version
    <dir>/instances/<id>.json       snapshot: {"format": 1, "version": N, "updated_at": ...,
                                               "seq": S, "instance": {...}}
    <dir>/instances/<id>.journal    commits since the snapshot, one self-checking line each

The choice: a snapshot plus a version-stamped, append-only journal
--------------------------------------------------------------------
Rewriting ``<id>.json`` on every commit makes each commit cost O(size of the answer
log): with 10,000 revisions the file is about half a megabyte, re-encoded and fsynced to
record one answer. Instead a commit appends one line to ``<id>.journal``::

    <crc32> {"s": 7, "v": 12, "at": "...", "c": {<the Commit, entries in the instance codec>}}

(``s`` numbers the journal records after the snapshot's ``seq``; ``v`` is the version the
record produces; a ``"d"`` record is a ``record_dispatch``, which leaves ``v`` alone) and
fsyncs it. That costs the same whatever the log holds. Every ``compact_after`` records (or
when the journal grows past both 1 MiB and twice the snapshot) the instance is folded into a new
snapshot with the all-or-nothing recipe (temp file in the same folder, fsync,
``os.replace``, fsync the folder) and the journal is removed, so a cold read parses one
snapshot and at most a few hundred short lines. A read is the snapshot plus a replay of the
journal through :func:`~formctl.store.base.apply_commit`, the same function that produced
it, so the semantics of a commit live in one place.

Why it survives a crash at any instant
--------------------------------------
* A commit is acknowledged (``commit_instance`` returns) only after its line is fsynced
  (and, for a journal's first line, the folder too). Killed before that, the line is either
  absent, or complete in the page cache (the commit lands though unacknowledged: allowed),
  or, after a power cut, torn. A torn line fails its checksum or lacks its newline and is
  at the tail, so readers ignore it and the next writer cuts it off before appending.
  Damage with a valid line after it cannot come from a crash and is reported as
  corruption (:mod:`formctl.store._journal`).
* Compaction writes the new snapshot completely before it replaces the old one, and only
  then removes the journal. Killed between the two, the old journal's records all have
  ``s <= seq`` of the new snapshot and are skipped; a gap in ``s`` is corruption.
* Versions only grow: a record's ``v`` must be its predecessor's plus one (or equal, for a
  dispatch record), checked on every replay.
* Writers hold ``flock(LOCK_EX)`` on ``lock`` from reading the current version to the
  fsync, so compare-and-set holds across processes; readers hold ``LOCK_SH`` and so never
  see a compaction half done. ``flock`` is released by the kernel when a process dies.
* Nothing is overwritten in place: a snapshot is replaced by rename, a journal only grows
  (save for cutting off a torn tail that was never acknowledged, or taking back an append
  that failed). A file that fails to parse is reported (:class:`StoreError` naming the file
  and what is wrong) and left exactly as it is; other instances keep working.
* A failed write (a full disk, an I/O error, a read-only folder) raises :class:`StoreError`
  with one line naming the file, after taking back whatever part of the record reached
  the file, so the previous version stands. A failed compaction is not the commit's
  failure: the journal is still valid, and compaction is tried again after the next commit.

The index (``_index.py``) is a cache that finds instances without opening them and is
never the source of truth; ``check()`` compares it with the instance files and
``reindex()`` rebuilds it.

Reads are cheap when nothing changed: each adapter remembers the last state it read per
instance together with the identity, size and mtime of both files, checks them with two
``stat`` calls per read, and replays only the bytes another process appended since.
"""

from __future__ import annotations

import dataclasses
import errno
import fcntl
import json
import os
import threading
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, TypeVar

from formctl.forms.errors import ConflictError, StoreError
from formctl.forms.instance import (
    UNSET,
    Commit,
    DispatchState,
    EntryCommit,
    FieldLog,
    Instance,
    Provenance,
    _decode_entry,
    _encode_entry,
    instance_from_json,
    instance_to_json,
    now_iso,
)
from formctl.store import _durable
from formctl.store._index import Index, IndexLog, Row
from formctl.store._journal import JournalDamage, frame, scan
from formctl.store.base import (
    apply_commit,
    apply_dispatch,
    check_provenance,
    missing,
    new_instance,
    sort_recent_first,
)
from formctl.store.ids import is_instance_id, new_instance_id

__all__ = ["FORMAT", "JsonFileAdapter", "StoreProblem", "StoreReport", "commit_from_json", "commit_to_json"]

FORMAT = 1
"""The on-disk format this module writes and the only one it reads."""

COMPACT_AFTER = 200
"""Journal records folded into a new snapshot at once. A cold read replays at most this many
short lines (a few ms); a commit pays 1/200th of a snapshot rewrite on average."""

_COMPACT_MIN_BYTES = 1 << 20
_CACHE_SIZE = 4096

T = TypeVar("T")


# --------------------------------------------------------------------------- commit codec

_MERGED = ("entries", "occurrences", "dispatches")
_REPLACED = tuple(f.name for f in dataclasses.fields(Commit) if f.name not in _MERGED)


def commit_to_json(commit: Commit) -> dict[str, Any]:
    """A commit as plain JSON data, its revisions in the instance codec's compact form."""
    d: dict[str, Any] = {}
    if commit.entries:
        prov_index: dict[tuple, int] = {}
        prov_table: list = []
        entries: dict[str, Any] = {}
        for field_id, change in commit.entries.items():
            e: dict[str, Any] = {"a": [_encode_entry(x, prov_index, prov_table) for x in change.append]}
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
        commit.entries = {
            field_id: EntryCommit(tuple(_decode_entry(r, table) for r in e["a"]), e.get("c"))
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


# --------------------------------------------------------------------------- reports


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


# --------------------------------------------------------------------------- helpers


@dataclass(slots=True)
class _Loaded:
    """One instance as last read, with the file identities it was read from."""

    instance: Instance
    snap_key: tuple[int, int, int, int]
    snap_size: int
    seq: int  # the last journal record applied (the snapshot's own seq if none)
    jour_ino: int | None = None
    jour_size: int = 0
    jour_mtime: int = 0
    jour_valid: int = 0  # bytes of whole, valid lines; anything after is a torn append
    jour_records: int = 0  # records applied on top of the snapshot
    jour_lines: int = 0


def _snap_key(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _row(instance: Instance) -> Row:
    return (instance.id, instance.subject, instance.def_id, instance.status, instance.updated_at, instance.version)


def _os_error(exc: OSError, what: str, *, writing: bool = True) -> StoreError:
    """One clear line for an operating-system failure while the store tried to ``what``."""
    reason = exc.strerror or str(exc)
    if not writing:
        return StoreError(f"Cannot {what}: {reason}.")
    tail = " Nothing was changed; the previous version is intact."
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return StoreError(f"The form store is read-only: cannot {what} ({reason}).{tail}")
    if exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
        return StoreError(f"The disk is full: cannot {what} ({reason}).{tail}")
    return StoreError(f"Cannot {what}: {reason}.{tail}")


def _file_error(path: str, reason: str) -> StoreError:
    """A damaged file: the message names it; ``path`` and ``reason`` are kept for reports."""
    error = StoreError(f"{path}: {reason}")
    error.path = path  # type: ignore[attr-defined]
    error.reason = reason  # type: ignore[attr-defined]
    return error


def _snapshot_bytes(instance: Instance, seq: int) -> bytes:
    doc = {
        "format": FORMAT,
        "version": instance.version,
        "updated_at": instance.updated_at,
        "seq": seq,
        "instance": instance_to_json(instance),
    }
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _unsupported_format(path: str, found: Any) -> StoreError:
    return _file_error(
        path,
        f"written in store format {found!r}, but this formctl reads format {FORMAT} only; "
        "use the formctl version that wrote it (the file was left as it is).",
    )


def _parse_snapshot(path: str, iid: str, data: bytes) -> tuple[Instance, int]:
    if not data.strip():
        raise _file_error(path, "the file is empty (truncated?); it was left as it is.")
    try:
        doc = json.loads(data)
    except UnicodeDecodeError as exc:
        raise _file_error(path, f"not UTF-8 text (byte {exc.start}); the file is corrupt and was left as it is.") from None
    except json.JSONDecodeError as exc:
        raise _file_error(
            # json's own messages may end in "at" ("Unterminated string starting at").
            path, f"not valid JSON ({exc.msg.removesuffix(' at')} at line {exc.lineno}, column {exc.colno}); "
            "the file is truncated or corrupt and was left as it is."
        ) from None
    if not isinstance(doc, dict) or "format" not in doc:
        raise _file_error(path, "not a formctl instance file (no format number); it was left as it is.")
    if doc["format"] != FORMAT:
        raise _unsupported_format(path, doc["format"])
    try:
        instance = instance_from_json(doc["instance"])
        version, seq = doc["version"], int(doc.get("seq", 0))
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise _file_error(
            path, f"the instance record is malformed ({type(exc).__name__}: {exc}); it was left as it is."
        ) from None
    if instance.id != iid:
        raise _file_error(path, f"holds instance {instance.id!r}, not {iid!r}; it was left as it is.")
    if instance.version != version:
        raise _file_error(path, f"version {version} disagrees with its instance's version {instance.version}.")
    return instance, seq


# --------------------------------------------------------------------------- the adapter


class JsonFileAdapter:
    """One JSON snapshot (plus a journal of later commits) per instance, in ``directory``.

    Implements the :class:`~formctl.store.base.FormAdapter` protocol, plus ``check()`` and
    ``reindex()`` for ``formctl store check|reindex``. ``conflicts`` counts the commits this
    adapter refused because the stored version had moved (compare-and-set failures).
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        identifier: str | None = None,
        compact_after: int = COMPACT_AFTER,
    ) -> None:
        self.directory = os.path.abspath(os.fspath(directory))
        self.identifier = identifier or f"json-file-forms:{self.directory}"
        self.conflicts = 0
        self.compact_after = max(1, compact_after)
        self._instances_dir = os.path.join(self.directory, "instances")
        self._lock_path = os.path.join(self.directory, "lock")
        self._index = Index(os.path.join(self.directory, "index"))
        self._cache: OrderedDict[str, _Loaded] = OrderedDict()
        self._mutex = threading.RLock()
        self._lock_fd: int | None = None
        self._lock_pid = 0
        self._held: str | None = None

    def __repr__(self) -> str:
        return f"JsonFileAdapter({self.directory!r})"

    def close(self) -> None:
        """Release the file descriptors this adapter keeps open (it reopens them if used again)."""
        with self._mutex:
            if self._lock_fd is not None and self._lock_pid == os.getpid():
                os.close(self._lock_fd)
            self._lock_fd = None
            self._index.close()

    # ------------------------------------------------------------------ protocol: writes

    def create_instance(
        self,
        def_id: str,
        def_version: int,
        subject: str,
        provenance: Provenance,
        *,
        entries: dict[str, FieldLog] | None = None,
        status: str = "active",
    ) -> Instance:
        check_provenance(provenance)
        instance = new_instance(def_id, def_version, subject, entries=entries, status=status, now=now_iso())
        with self._writing():
            path = self._paths(instance.id)[0]
            while os.path.lexists(path):  # two ids in one ms with equal random tails: try another
                instance.id = new_instance_id()
                path = self._paths(instance.id)[0]
            data = self._encode(lambda: _snapshot_bytes(instance, 0))
            shard = self._ready_shard(subject)
            self._mark_pending(shard, instance.id)
            try:
                _durable.replace_atomically(path, data)
                st = os.stat(path)
            except OSError as exc:
                _durable.remove_quietly(path)  # if only the folder's fsync failed: not created after all
                shard.put(None, instance.id)
                raise _os_error(exc, f"write {path}") from None
            self._remember(instance.id, _Loaded(instance, _snap_key(st), st.st_size, 0))
            shard.put(_row(instance), instance.id)
        return instance.copy()

    def commit_instance(
        self, instance_id: str, commit: Commit, *, if_version: int, provenance: Provenance
    ) -> Instance:
        check_provenance(provenance)

        def change(stored: Instance) -> tuple[Instance, dict[str, Any]]:
            try:
                new = apply_commit(stored, commit, if_version=if_version, now=now_iso())
            except ConflictError:
                self.conflicts += 1
                raise
            return new, {"c": commit_to_json(commit)}

        return self._journal_write(instance_id, change).copy()

    def record_dispatch(
        self, instance_id: str, key: str, state: DispatchState, provenance: Provenance
    ) -> None:
        check_provenance(provenance)
        self._journal_write(
            instance_id,
            lambda stored: (apply_dispatch(stored, key, state, now=now_iso()), {"d": [key, state.to_dict()]}),
        )

    def _journal_write(
        self, instance_id: str, change: Callable[[Instance], tuple[Instance, dict[str, Any]]]
    ) -> Instance:
        """Under the writers' lock: read the instance, apply ``change``, append its journal record.

        ``change`` returns the new instance and the record's body (``c`` for a commit, ``d`` for a
        dispatch); the record's sequence number, version and time are added here.
        """
        if not is_instance_id(instance_id):
            raise missing(instance_id)
        with self._writing():
            loaded = self._read(instance_id)
            if loaded is None:
                raise missing(instance_id)
            new, body = change(loaded.instance)
            record = {"s": loaded.seq + 1, "v": new.version, "at": new.updated_at, **body}
            self._append(instance_id, loaded, record, new)
        return new

    # ------------------------------------------------------------------ protocol: reads

    def get_instance(self, instance_id: str) -> Instance | None:
        if not is_instance_id(instance_id):
            return None
        with self._locked(exclusive=False):
            loaded = self._read(instance_id)
            return loaded.instance.copy() if loaded is not None else None

    def find_instances(
        self,
        *,
        subject: str | None = None,
        def_id: str | None = None,
        status: str | None = None,
        limit: int | None = None,
        strict: bool = False,
        damaged: list[StoreError] | None = None,
    ) -> list[Instance]:
        """Instances matching every filter, most recent first. An instance whose file is
        corrupt is left out of a listing (``get_instance`` and ``check()`` report it), and
        its error appended to ``damaged`` when given (``formctl instances`` warns with it).

        ``strict``: a corrupt file that the index last saw open (active or awaiting) raises
        :class:`StoreError` instead. ``formctl run`` asks this way: left out, the person's
        half-filled form would look absent and a new one would quietly start in its place.
        """

        def run() -> list[Instance]:
            out: list[Instance] = []
            for row in self._index.ids_for(subject=subject, def_id=def_id, status=status):
                try:
                    loaded = self._read(row[0])
                except StoreError as exc:
                    if strict and row[3] in ("active", "awaiting"):
                        raise
                    if damaged is not None:
                        damaged.append(exc)
                    continue
                if loaded is None:
                    continue
                i = loaded.instance
                if (subject is None or i.subject == subject) and (def_id is None or i.def_id == def_id) and (
                    status is None or i.status == status
                ):
                    out.append(i.copy())
                    if limit and len(out) >= limit:
                        break
            return sort_recent_first(out)

        return self._query(run, subject=subject)

    def find_open_instance(self, subject: str) -> Instance | None:
        """The subject's most recently updated instance that is not abandoned.

        Raises :class:`StoreError` if that instance's file is corrupt, rather than quietly
        answering with an older instance (or none, which would start a new form).
        """

        def run() -> Instance | None:
            for row in self._index.ids_for(subject=subject, def_id=None, status=None):
                if row[3] == "abandoned":
                    continue
                loaded = self._read(row[0])
                if loaded is None:
                    continue
                i = loaded.instance
                if i.subject != subject or i.status == "abandoned" or i.updated_at != row[4]:
                    return self._open_by_reading(subject)  # the index disagrees: trust the files
                return i.copy()
            return None

        return self._query(run, subject=subject)

    def _open_by_reading(self, subject: str) -> Instance | None:
        rows = []
        for row in self._index.ids_for(subject=subject, def_id=None, status=None):
            loaded = self._read(row[0])
            if loaded is not None and loaded.instance.subject == subject and loaded.instance.status != "abandoned":
                rows.append(loaded.instance)
        return sort_recent_first(rows)[0].copy() if rows else None

    def ensure_writable(self) -> None:
        """Raise :class:`StoreError` unless an instance could be written here (creating the
        folders if missing). Changes nothing else.

        ``formctl run`` asks before the chat opens: a read-only mount or a store path that
        cannot exist is then one line at the start, not a failure after every message the
        person types."""
        self._ensure_layout()
        probe = os.path.join(self._instances_dir, f".write-check.{os.getpid()}.tmp")  # *.tmp: reindex sweeps a stray one
        try:
            fd = _durable.open_private(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        except OSError as exc:
            raise _os_error(exc, f"write in {self._instances_dir}") from None
        os.close(fd)
        try:
            os.unlink(probe)
        except OSError:
            pass

    # ------------------------------------------------------------------ check / reindex

    def check(self) -> StoreReport:
        """Read every instance file from disk (bypassing the cache) and compare the index with them.

        Changes nothing. Corrupt files are listed in ``problems`` with what is wrong.
        """
        with self._locked(exclusive=False):
            files, truth, problems, notes = self._scan(fresh=True)
            index_ok = all([log.refresh() for log in self._index.shards])
            if not index_ok:
                notes.append(f"{self._index.problem()}; the index is rebuilt on next use, or by reindex.")
            else:
                damaged = {os.path.basename(p.path).partition(".")[0] for p in problems}
                awaiting = set(self._index.pending)
                if awaiting:
                    notes.append(
                        f"{len(awaiting)} index row(s) await repair after an interrupted write; the next write repairs them."
                    )
                indexed = self._index.rows
                behind = {iid: p for iid, p in self._behind_the_index(truth, indexed).items() if iid not in awaiting}
                problems.extend(behind.values())
                for iid in sorted(set(truth) | set(indexed)):
                    if iid in awaiting or iid in damaged or iid in behind:
                        continue
                    if indexed.get(iid) != truth.get(iid):
                        index_ok = False
                        notes.append(f"{self._index.folder}: the row for {iid} does not match its instance file.")
            return StoreReport(
                directory=self.directory,
                files_checked=files,
                instances=len(truth),
                problems=tuple(problems),
                notes=tuple(notes),
                index_ok=index_ok,
            )

    def reindex(self) -> StoreReport:
        """Rebuild the index from the instance files; remove temporary files left by crashes.

        Corrupt instance files are listed in ``problems`` and left exactly as they are.
        """
        self._ensure_layout()
        with self._locked(exclusive=True, for_write=True):
            notes = self._remove_leftovers()
            files, truth, problems, scan_notes = self._scan(fresh=True)
            rows = dict(truth)
            if all([log.refresh() for log in self._index.shards]):
                awaiting = set(self._index.pending)  # an interrupted write's row: not evidence of loss
                behind = {iid: p for iid, p in self._behind_the_index(truth, self._index.rows).items()
                          if iid not in awaiting}
                problems.extend(behind.values())
                for iid in behind:  # keep the row that remembers the later version: the evidence
                    rows[iid] = self._index.rows[iid]
            try:
                self._index.rewrite(rows.values())
            except OSError as exc:
                raise _os_error(exc, f"write the index in {self._index.folder}") from None
            return StoreReport(
                directory=self.directory,
                files_checked=files,
                instances=len(truth),
                problems=tuple(problems),
                notes=tuple(notes + scan_notes),
                index_ok=True,
                index_rebuilt=True,
            )

    def _behind_the_index(self, truth: dict[str, Row], indexed: dict[str, Row]) -> dict[str, StoreProblem]:
        """Instances whose file holds an older version than the index last recorded: commits
        the index saw are gone from the file (a deleted or truncated journal, an old snapshot
        restored over a newer one). "Run reindex" would be the wrong advice: it would make the
        index forget them too."""
        behind = {}
        for iid, row in truth.items():
            seen = indexed.get(iid)
            if seen is not None and seen[5] > row[5]:
                spath, _ = self._paths(iid)
                behind[iid] = StoreProblem(spath, (
                    f"the index last recorded version {seen[5]}, but the instance's files hold version {row[5]}: "
                    "later answers are missing (a deleted or truncated journal?); the files were left as they are."))
        return behind

    def _scan(self, *, fresh: bool) -> tuple[int, dict[str, Row], list[StoreProblem], list[str]]:
        """Read every instance in the folder: (files read, rows of the good ones, problems, notes)."""
        try:
            names = sorted(os.listdir(self._instances_dir))
        except FileNotFoundError:
            return 0, {}, [], []
        except OSError as exc:
            raise _os_error(exc, f"list {self._instances_dir}") from None
        present = set(names)
        files = 0
        truth: dict[str, Row] = {}
        problems: list[StoreProblem] = []
        notes: list[str] = []
        for name in names:
            path = os.path.join(self._instances_dir, name)
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
                    loaded = self._read(stem, fresh=fresh)
                except StoreError as exc:
                    where = getattr(exc, "path", path)
                    problems.append(StoreProblem(where, getattr(exc, "reason", exc.message)))
                    continue
                if loaded is not None:
                    truth[stem] = _row(loaded.instance)
        return files, truth, problems, notes

    def _remove_leftovers(self) -> list[str]:
        """Delete ``*.tmp`` files: with the lock held exclusively no write is in flight, so
        every temporary file belongs to a writer that died."""
        notes = []
        for folder in (self._instances_dir, self._index.folder, self.directory):
            try:
                names = os.listdir(folder)
            except OSError:
                continue
            for name in names:
                if name.endswith(_durable.TEMP_SUFFIX):
                    _durable.remove_quietly(os.path.join(folder, name))
                    notes.append(f"removed {os.path.join(folder, name)} (left by an interrupted write)")
        return notes

    # ------------------------------------------------------------------ locking

    @contextmanager
    def _locked(self, *, exclusive: bool, for_write: bool = False) -> Iterator[None]:
        """Hold the store lock (and this adapter's mutex, for threads sharing the adapter)."""
        with self._mutex:
            if self._held is not None:
                if exclusive and self._held != "ex":
                    raise RuntimeError("JsonFileAdapter: cannot upgrade a shared lock")
                yield
                return
            fd = self._lock_file(required=for_write)
            if fd is not None:
                fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            self._held = "ex" if exclusive else "sh"
            try:
                yield
            finally:
                self._held = None
                if fd is not None:
                    fcntl.flock(fd, fcntl.LOCK_UN)

    def _lock_file(self, *, required: bool) -> int | None:
        """The lock file's descriptor. None (only when not ``required``) for a store that no one
        can have written: its lock file does not exist and cannot be created."""
        if self._lock_fd is not None:
            if self._lock_pid == os.getpid():
                return self._lock_fd
            # A forked child shares the parent's open file description, and with it the
            # parent's flock: drop our reference and open a description of our own.
            try:
                os.close(self._lock_fd)
            except OSError:
                pass
            self._lock_fd = None
        fd: int | None = None
        try:
            fd = _durable.open_private(self._lock_path, os.O_RDWR | os.O_CREAT)
        except FileNotFoundError:
            if required:
                raise StoreError(f"The form store {self.directory} does not exist.") from None
        except OSError as exc:
            try:
                fd = _durable.open_private(self._lock_path, os.O_RDONLY)  # flock works read-only too
            except FileNotFoundError:
                if required:
                    raise _os_error(exc, f"create {self._lock_path}") from None
            except OSError:
                raise _os_error(exc, f"open {self._lock_path}", writing=required) from None
        if fd is not None:
            self._lock_fd, self._lock_pid = fd, os.getpid()
        return fd

    def _ensure_layout(self) -> None:
        if os.path.isdir(self._instances_dir):
            return
        try:
            parent = os.path.dirname(self.directory)
            if parent:
                os.makedirs(parent, exist_ok=True)
            _durable.make_dir(self.directory)
            if _durable.make_dir(self._instances_dir):
                _durable.sync_dir(self.directory)
        except OSError as exc:
            raise _os_error(exc, f"create the store folder {self._instances_dir}") from None

    @contextmanager
    def _writing(self) -> Iterator[None]:
        self._ensure_layout()
        with self._locked(exclusive=True, for_write=True):
            yield

    def _query(self, run: Callable[[], T], *, subject: str | None) -> T:
        """Run a lookup with the index shards it needs up to date (just the subject's, if given)."""
        with self._locked(exclusive=False):
            if self._ready_index(exclusive=False, subject=subject):
                return run()
        # The index must be rebuilt first, which needs the lock to ourselves.
        with self._locked(exclusive=True):
            self._ready_index(exclusive=True, subject=subject)
            return run()

    # ------------------------------------------------------------------ the index

    def _ready_index(self, *, exclusive: bool, subject: str | None = None) -> bool:
        """Bring the index shards for ``subject`` (or all) up to date, settling what writers
        that died left pending. False when a rebuild is needed and the lock is only shared."""
        logs = self._index.logs(subject)
        if not all([log.refresh() for log in logs]):
            if not exclusive and os.path.isdir(self._instances_dir):
                return False
            _, truth, _, _ = self._scan(fresh=False)
            try:
                if not os.path.isdir(self._instances_dir):
                    raise FileNotFoundError(self._instances_dir)
                self._index.rewrite(truth.values())
            except OSError:
                self._index.adopt(truth.values())  # a read-only (or absent) store: keep it in memory
        for log in logs:
            for iid in sorted(log.pending):
                # A marker with no row after it: its writer died between the two (we hold the
                # lock, so none is in flight). Settle it from the instance's own files.
                try:
                    loaded = self._read(iid)
                    row = _row(loaded.instance) if loaded is not None else None
                except StoreError:
                    row = log.rows.get(iid)
                if exclusive:
                    log.put(row, iid)
                else:
                    log.resolve(iid, row)
            if exclusive:
                for iid in sorted(log.unrepaired):
                    log.put(log.rows.get(iid), iid)
        return True

    def _ready_shard(self, subject: str) -> IndexLog:
        """The subject's shard, up to date and compacted if its log has grown (exclusive lock held)."""
        self._ready_index(exclusive=True, subject=subject)
        log = self._index.log_for(subject)
        if log.needs_compaction():
            try:
                log.rewrite(list(log.rows.values()))
            except OSError:
                pass  # a longer log is still a correct log
        return log

    @staticmethod
    def _mark_pending(log: IndexLog, iid: str) -> None:
        try:
            log.mark_pending(iid)
        except OSError as exc:
            raise _os_error(exc, f"write {log.path}") from None

    # ------------------------------------------------------------------ reading instances

    def _paths(self, iid: str) -> tuple[str, str]:
        base = os.path.join(self._instances_dir, iid)
        return base + ".json", base + ".journal"

    def _remember(self, iid: str, loaded: _Loaded) -> _Loaded:
        self._cache[iid] = loaded
        self._cache.move_to_end(iid)
        if len(self._cache) > _CACHE_SIZE:
            self._cache.popitem(last=False)
        return loaded

    def _read(self, iid: str, *, fresh: bool = False) -> _Loaded | None:
        """The instance as stored now (lock held). Reuses the last read when both files are
        unchanged, and replays only the appended bytes when only the journal grew."""
        spath, jpath = self._paths(iid)
        try:
            sst = os.stat(spath)
        except FileNotFoundError:
            self._cache.pop(iid, None)
            return None
        except OSError as exc:
            raise _os_error(exc, f"read {spath}", writing=False) from None
        try:
            jst: os.stat_result | None = os.stat(jpath)
        except FileNotFoundError:
            jst = None
        except OSError as exc:
            raise _os_error(exc, f"read {jpath}", writing=False) from None
        cached = None if fresh else self._cache.get(iid)
        if cached is not None and cached.snap_key == _snap_key(sst):
            if jst is None and cached.jour_ino is None:
                return cached
            if jst is not None and cached.jour_ino == jst.st_ino and jst.st_size >= cached.jour_valid:
                if (
                    jst.st_size == cached.jour_size == cached.jour_valid
                    and jst.st_mtime_ns == cached.jour_mtime
                ):
                    return cached
                return self._remember(iid, self._catch_up(iid, jpath, cached))
        try:
            return self._remember(iid, self._load(iid, spath, jpath))
        except StoreError:
            self._cache.pop(iid, None)
            raise

    def _load(self, iid: str, spath: str, jpath: str) -> _Loaded:
        try:
            with open(spath, "rb") as f:
                st = os.fstat(f.fileno())
                data = f.read()
        except OSError as exc:
            raise _os_error(exc, f"read {spath}", writing=False) from None
        instance, seq = _parse_snapshot(spath, iid, data)
        loaded = _Loaded(instance, _snap_key(st), st.st_size, seq)
        try:
            with open(jpath, "rb") as f:
                jst = os.fstat(f.fileno())
                jdata = f.read()
        except FileNotFoundError:
            return loaded
        except OSError as exc:
            raise _os_error(exc, f"read {jpath}", writing=False) from None
        loaded.jour_ino = jst.st_ino
        return self._replay(iid, jpath, loaded, jdata, start=0, size=jst.st_size, mtime=jst.st_mtime_ns)

    def _catch_up(self, iid: str, jpath: str, cached: _Loaded) -> _Loaded:
        try:
            with open(jpath, "rb") as f:
                jst = os.fstat(f.fileno())
                f.seek(cached.jour_valid)
                data = f.read()
        except OSError as exc:
            raise _os_error(exc, f"read {jpath}", writing=False) from None
        if jst.st_ino != cached.jour_ino:  # replaced between stat and open: read it all again
            return self._load(iid, *self._paths(iid))
        loaded = dataclasses.replace(cached)
        return self._replay(iid, jpath, loaded, data, start=cached.jour_valid, size=jst.st_size, mtime=jst.st_mtime_ns)

    def _replay(self, iid: str, jpath: str, loaded: _Loaded, data: bytes, *, start: int, size: int, mtime: int) -> _Loaded:
        """Apply journal bytes (starting at offset ``start``) to ``loaded``; returns it updated."""
        try:
            found = scan(data, start=start, first_line_number=loaded.jour_lines + 1)
        except JournalDamage as exc:
            raise _file_error(jpath, f"{exc}; the journal is corrupt and was left as it is.") from None
        records = found.records
        if start == 0 and records:
            header = records[0]
            if "format" not in header or "s" in header:
                raise _file_error(jpath, "line 1 is not a journal header; the journal was left as it is.")
            if header["format"] != FORMAT:
                raise _unsupported_format(jpath, header["format"])
            if header.get("journal") != iid:
                raise _file_error(jpath, f"belongs to {header.get('journal')!r}, not {iid!r}.")
            records = records[1:]
        snap_seq = loaded.seq - loaded.jour_records
        instance = loaded.instance
        line = loaded.jour_lines + (1 if start == 0 and found.records else 0)
        for record in records:
            line += 1
            try:
                s = record["s"]
                if s <= snap_seq:
                    continue  # already in the snapshot (the journal outlived a compaction)
                if s != loaded.seq + 1:
                    raise _file_error(
                        jpath, f"line {line} holds record {s} where {loaded.seq + 1} was due; "
                        "a record is missing, so the journal is corrupt and was left as it is."
                    )
                if "c" in record:
                    instance = apply_commit(
                        instance, commit_from_json(record["c"]), if_version=instance.version, now=record["at"]
                    )
                elif "d" in record:
                    key, state = record["d"]
                    instance = instance.copy()
                    instance.dispatches[key] = DispatchState.from_dict(state)
                    instance.updated_at = record["at"]
                else:
                    raise ValueError("neither a commit nor a dispatch")
                if record["v"] != instance.version:
                    raise _file_error(
                        jpath, f"line {line} is stamped version {record['v']} but produces {instance.version}; "
                        "the journal is corrupt and was left as it is."
                    )
            except StoreError:
                raise
            except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
                raise _file_error(
                    jpath, f"line {line} is a malformed record ({type(exc).__name__}: {exc}); "
                    "the journal was left as it is."
                ) from None
            loaded.seq = s
            loaded.jour_records += 1
        loaded.instance = instance
        loaded.jour_lines += data[: found.valid_end - start].count(b"\n")
        loaded.jour_valid = found.valid_end
        loaded.jour_size = size
        loaded.jour_mtime = mtime
        return loaded

    # ------------------------------------------------------------------ writing instances

    @staticmethod
    def _encode(make: Callable[[], T]) -> T:
        try:
            return make()
        except (TypeError, ValueError) as exc:
            raise StoreError(f"The instance holds a value that cannot be stored as JSON ({exc}).") from None

    def _append(self, iid: str, loaded: _Loaded, record: dict[str, Any], new: Instance) -> None:
        """Append one record durably; on any failure the stored instance is left as it was."""
        _, jpath = self._paths(iid)
        data = self._encode(lambda: frame(record))
        create = loaded.jour_ino is None
        if loaded.jour_valid == 0:  # a new journal, or one whose only line (its header) was torn
            data = frame({"format": FORMAT, "journal": iid}) + data
        shard = self._ready_shard(loaded.instance.subject)
        self._mark_pending(shard, iid)
        try:
            if create:
                fd = _durable.open_private(jpath, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL)
            else:
                fd = _durable.open_private(jpath, os.O_WRONLY | os.O_APPEND)
            try:
                if not create and os.fstat(fd).st_size != loaded.jour_valid:
                    os.ftruncate(fd, loaded.jour_valid)  # cut off a torn, never-acknowledged append
                _durable.write_all(fd, data)
                _durable.sync_data(fd)
                if create:
                    _durable.sync_dir(self._instances_dir)
                st = os.fstat(fd)
            except BaseException:
                self._take_back(fd, jpath, create, loaded.jour_valid)
                raise
            finally:
                os.close(fd)
        except OSError as exc:
            self._cache.pop(iid, None)
            shard.put(_row(loaded.instance), iid)
            raise _os_error(exc, f"write {jpath}") from None
        done = _Loaded(
            instance=new,
            snap_key=loaded.snap_key,
            snap_size=loaded.snap_size,
            seq=record["s"],
            jour_ino=st.st_ino,
            jour_size=st.st_size,
            jour_mtime=st.st_mtime_ns,
            jour_valid=st.st_size,
            jour_records=loaded.jour_records + 1,
            jour_lines=loaded.jour_lines + data.count(b"\n"),
        )
        self._remember(iid, done)
        shard.put(_row(new), iid)
        if done.jour_records >= self.compact_after or done.jour_valid > max(_COMPACT_MIN_BYTES, 2 * done.snap_size):
            self._compact(iid, done)

    @staticmethod
    def _take_back(fd: int, jpath: str, created: bool, size: int) -> None:
        """Undo a failed append (best effort): what is left over is a torn tail, ignored anyway."""
        try:
            if created:
                os.unlink(jpath)
            else:
                os.ftruncate(fd, size)
                _durable.sync_data(fd)
        except OSError:
            pass

    def _compact(self, iid: str, loaded: _Loaded) -> None:
        """Fold the journal into a new snapshot. A failure here loses nothing (the journal
        stays valid) and is not the commit's failure: it is retried after the next commit."""
        spath, jpath = self._paths(iid)
        try:
            data = _snapshot_bytes(loaded.instance, loaded.seq)
            _durable.replace_atomically(spath, data)
            st = os.stat(spath)
        except (OSError, TypeError, ValueError):
            return
        jst: os.stat_result | None = None
        try:
            os.unlink(jpath)
        except FileNotFoundError:
            pass
        except OSError:
            try:
                jst = os.stat(jpath)
            except OSError:
                self._cache.pop(iid, None)  # unsure what is on disk: read it afresh next time
                return
        compacted = _Loaded(loaded.instance, _snap_key(st), st.st_size, loaded.seq)
        if jst is not None:  # the old journal stayed: its records are all in the snapshot now
            compacted.jour_ino, compacted.jour_size, compacted.jour_mtime = jst.st_ino, jst.st_size, jst.st_mtime_ns
            compacted.jour_valid, compacted.jour_lines = loaded.jour_valid, loaded.jour_lines
        self._remember(iid, compacted)
