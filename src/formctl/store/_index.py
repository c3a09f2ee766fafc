"""The store's index: who each instance belongs to and where it stands, without opening it.

``index.jsonl`` beside ``instances/`` maps an instance id to
``(subject, def_id, status, updated_at, version)``, which is all that finding "the open
form of a subject" or listing by subject, form or status needs. It is never the source
of truth: every row can be rebuilt from the instance files (``reindex``), and an
instance is always read from its own files before it is returned.

On disk it is an append-only log (readers catch up by reading only the bytes added since
they last looked, so a lookup costs one ``stat`` when nothing changed):

* line 1, a header: ``{"formctl_index": 1, "boot": "<kernel boot id>"}``;
* after a rewrite, line 2 holds every row at once: ``{"rows": [[id, subject, def_id,
  status, updated_at, version], ...]}`` (one ``json.loads`` for 10,000 rows);
* then one line per change: a row ``[id, subject, def_id, status, updated_at, version]``,
  a *pending* marker ``[id]``, or a tombstone ``[id, null]`` (no such instance).

Why it can be trusted without an fsync per commit. A writer, holding the store lock,
appends ``[id]`` *before* it touches an instance and the new row *after*; a reader holds
the lock shared, so it never sees a writer half way. A marker with no row after it
therefore means a writer died between the two (SIGKILL, a full disk): the reader reads
that one instance from its files instead, and the next writer appends the repaired row.
Appends that reached the page cache survive the death of the process that made them;
only a crash of the whole machine can lose them, and that changes the kernel's boot id.
So the header records the boot id of the index's writer, and an index written under
another boot is rebuilt from the instance files before it is used (once per reboot).
On a system without a boot id (not Linux) every append is fsynced instead.
"""

from __future__ import annotations

import json
import os
from typing import Iterable

from formctl.store import _durable

Row = tuple[str, str, str, str, str, int]
"""``(id, subject, def_id, status, updated_at, version)``."""

FORMAT = 1


def _read_boot_id() -> str | None:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            return f.read().strip() or None
    except OSError:
        return None


BOOT_ID = _read_boot_id()


def header_line() -> bytes:
    return json.dumps({"formctl_index": FORMAT, "boot": BOOT_ID}, separators=(",", ":")).encode() + b"\n"


def _dumps(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


class IndexLog:
    """The in-memory mirror of ``index.jsonl``; every method expects the store lock held."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.durable_appends = BOOT_ID is None
        self._reset()

    # ------------------------------------------------------------------ state

    def _reset(self, problem: str | None = "the index has not been read") -> None:
        self.rows: dict[str, Row] = {}
        self.by_subject: dict[str, set[str]] = {}
        self.by_def: dict[str, set[str]] = {}
        self.pending: set[str] = set()
        self.unrepaired: set[str] = set()  # settled in memory only; the next writer appends their rows
        self.problem = problem  # why the index cannot be used as it stands, or None
        self.tail_lines = 0
        self._ino: int | None = None
        self._offset = 0

    def _apply(self, item: list) -> None:
        iid = item[0]
        if not isinstance(iid, str):
            raise ValueError("row without an id")
        if len(item) == 1:
            self.pending.add(iid)
            return
        self.pending.discard(iid)
        self.unrepaired.discard(iid)
        if len(item) == 2 and item[1] is None:
            self._drop(iid)
            return
        iid, subject, def_id, status, updated_at, version = item
        self._drop(iid)
        self.rows[iid] = (iid, subject, def_id, status, updated_at, int(version))
        self.by_subject.setdefault(subject, set()).add(iid)
        self.by_def.setdefault(def_id, set()).add(iid)

    def _drop(self, iid: str) -> None:
        old = self.rows.pop(iid, None)
        if old is not None:
            self.by_subject.get(old[1], set()).discard(iid)
            self.by_def.get(old[2], set()).discard(iid)

    # ------------------------------------------------------------------ reading

    def refresh(self) -> bool:
        """Catch up with the file; False (and ``problem`` set) when it must be rebuilt."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self._reset("the index file is missing")
            return False
        if st.st_ino == self._ino and st.st_size == self._offset:
            return self.problem is None
        if st.st_ino != self._ino or st.st_size < self._offset or self.problem is not None:
            self._load(0)
        else:
            self._load(self._offset)
        return self.problem is None

    def _load(self, offset: int) -> None:
        try:
            with open(self.path, "rb") as f:
                ino = os.fstat(f.fileno()).st_ino
                if offset and ino != self._ino:
                    offset = 0
                f.seek(offset)
                data = f.read()
        except FileNotFoundError:
            self._reset("the index file is missing")
            return
        if offset == 0:
            self._reset(None)
        self._ino = ino
        complete = data[: data.rfind(b"\n") + 1]  # an unterminated last line is not there yet
        lines = complete.splitlines()
        try:
            if offset == 0:
                if not lines:
                    raise ValueError("the index file is empty")
                header = json.loads(lines[0])
                if not isinstance(header, dict) or header.get("formctl_index") != FORMAT:
                    raise ValueError("the index header is not a format-1 formctl index header")
                if header.get("boot") != BOOT_ID:
                    self._reset("the index was written before the machine last restarted")
                    return
                lines = lines[1:]
                if lines and lines[0].startswith(b"{"):
                    for item in json.loads(lines[0])["rows"]:
                        self._apply(item)
                    lines = lines[1:]
            if lines:
                for item in json.loads(b"[" + b",".join(lines) + b"]"):
                    self._apply(item)
                self.tail_lines += len(lines)
        except (ValueError, KeyError, TypeError) as exc:
            self._reset(f"the index file is damaged ({exc})")
            return
        self._offset = offset + len(complete)

    def ids_for(self, *, subject: str | None, def_id: str | None, status: str | None) -> list[Row]:
        """Rows matching every given filter, most recently updated first (ties: id descending)."""
        if subject is not None:
            ids: Iterable[str] = self.by_subject.get(subject, ())
        elif def_id is not None:
            ids = self.by_def.get(def_id, ())
        else:
            ids = self.rows.keys()
        rows = [
            self.rows[i]
            for i in ids
            if (def_id is None or self.rows[i][2] == def_id) and (status is None or self.rows[i][3] == status)
        ]
        rows.sort(key=lambda r: (r[4], r[0]), reverse=True)
        return rows

    # ------------------------------------------------------------------ writing (store lock held exclusively)

    def _append(self, data: bytes) -> None:
        fd = _durable.open_private(self.path, os.O_WRONLY | os.O_APPEND)
        try:
            st = os.fstat(fd)
            if st.st_ino != self._ino or st.st_size < self._offset:
                raise OSError(f"{self.path} changed under the store lock")
            if st.st_size > self._offset:
                # An unterminated line left by a writer that died mid-append: never read, cut it off.
                os.ftruncate(fd, self._offset)
            try:
                _durable.write_all(fd, data)
                if self.durable_appends:
                    _durable.sync_data(fd)
            except OSError:
                # Take back a partial line so that the log stays line-aligned.
                try:
                    os.ftruncate(fd, self._offset)
                except OSError:
                    self.problem = "an append to the index failed half way"
                raise
        finally:
            os.close(fd)
        self._offset += len(data)
        self.tail_lines += data.count(b"\n")

    def mark_pending(self, iid: str) -> None:
        """Announce a write to ``iid``; raises OSError if the index cannot be written."""
        self._append(_dumps([iid]))
        self.pending.add(iid)

    def put(self, row: Row | None, iid: str) -> None:
        """Record the instance's row (None: it does not exist). Never raises: a failed append
        leaves the pending marker in place, which makes readers consult the instance itself."""
        item: list = list(row) if row is not None else [iid, None]
        try:
            self._append(_dumps(item))
        except OSError:
            self.resolve(iid, row)  # this process knows the truth; others read the marker
            return
        self._apply(item)

    def resolve(self, iid: str, row: Row | None) -> None:
        """Settle a pending id in memory only, from the instance's own files."""
        self._apply(list(row) if row is not None else [iid, None])
        self.unrepaired.add(iid)

    def needs_compaction(self) -> bool:
        return self.tail_lines > max(512, len(self.rows) // 2)

    def rewrite(self, rows: Iterable[Row]) -> None:
        """Replace the whole index (under this boot's id) with ``rows``, atomically."""
        rows = list(rows)
        data = header_line() + _dumps({"rows": [list(r) for r in rows]})
        _durable.replace_atomically(self.path, data)
        self._reset(None)
        for row in rows:
            self._apply(list(row))
        self._ino = os.stat(self.path).st_ino
        self._offset = len(data)

    def adopt(self, rows: Iterable[Row]) -> None:
        """Use ``rows`` in memory only (the index file cannot be written: a read-only store)."""
        self._reset(None)
        for row in rows:
            self._apply(list(row))
        self._ino = None
