"""The store's index: who each instance belongs to and where it stands, without opening it.

``index/`` beside ``instances/`` maps an instance id to
``(subject, def_id, status, updated_at, version)``, which is all that finding "the open
form of a subject" or listing by subject, form or status needs. It is never the source of
truth: every row can be rebuilt from the instance files (``reindex``), and an instance is
always read from its own files before it is returned.

It is split into 64 shards by a hash of the subject (``index/00.jsonl`` .. ``3f.jsonl``),
so that a new process looking up one subject's open form reads and parses one small
shard (about 150 rows in a store of 10,000 instances, well under a millisecond), not all
of them (about 20 ms). Listings by form or status read every shard.

Each shard is an append-only log; a reader catches up by reading only the bytes added
since it last looked, so a lookup costs one ``stat`` when nothing changed:

* line 1, a header: ``{"formctl_index": 1, "shard": "07/64", "boot": "<kernel boot id>"}``;
* after a rewrite, line 2 holds all the shard's rows at once: ``{"rows": [[id, subject,
  def_id, status, updated_at, version], ...]}``;
* then one line per change: a row ``[id, subject, def_id, status, updated_at, version]``,
  a *pending* marker ``[id]``, or a tombstone ``[id, null]`` (no such instance).

Why it can be trusted without an fsync per commit. A writer, holding the store lock,
appends ``[id]`` *before* it touches an instance and the new row *after*; a reader holds
the lock shared, so it never sees a writer half way. A marker with no row after it
therefore means a writer died between the two (SIGKILL, a full disk): the reader reads
that one instance from its files instead, and the next writer to the shard appends the
repaired row. Appends that reached the page cache survive the death of the process that
made them; only a crash of the whole machine can lose them, and that changes the
kernel's boot id. So each header records the boot id of its writer, and an index written
under another boot is rebuilt from the instance files before it is used (once per
reboot). Where there is no boot id (not Linux) every append is fsynced instead.
"""

from __future__ import annotations

import json
import os
import zlib
from typing import Iterable

from formctl.store import _durable

Row = tuple[str, str, str, str, str, int]
"""``(id, subject, def_id, status, updated_at, version)``."""

FORMAT = 1
SHARDS = 64


def _read_boot_id() -> str | None:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            return f.read().strip() or None
    except OSError:
        return None


BOOT_ID = _read_boot_id()


def _dumps(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def shard_of(subject: str) -> int:
    return zlib.crc32(subject.encode("utf-8", "surrogatepass")) % SHARDS


def _sort_recent_first(rows: list[Row]) -> list[Row]:
    rows.sort(key=lambda r: (r[4], r[0]), reverse=True)
    return rows


class IndexLog:
    """The in-memory mirror of one shard file; every method expects the store lock held."""

    def __init__(self, path: str, shard: int) -> None:
        self.path = path
        self.label = f"{shard:02x}/{SHARDS}"
        self.durable_appends = BOOT_ID is None
        self._fd: int | None = None  # kept open for appends while the file stays the same
        self._fd_pid = 0
        self._reset()

    # ------------------------------------------------------------------ state

    def _reset(self, problem: str | None = "the index has not been read") -> None:
        self.rows: dict[str, Row] = {}
        self.by_subject: dict[str, set[str]] = {}
        self.pending: set[str] = set()
        self.unrepaired: set[str] = set()  # settled in memory only; the next writer appends their rows
        self.problem = problem  # why the shard cannot be used as it stands, or None
        self.tail_lines = 0
        self._key: tuple[int, int, int] | None = None  # (inode, size, mtime) last seen
        self._offset = 0

    def _apply_all(self, items: Iterable[list] | Iterable[Row]) -> None:
        """Apply log items in order, in one tight loop (a cold start may apply thousands)."""
        rows, by_subject = self.rows, self.by_subject
        pending, unrepaired = self.pending, self.unrepaired
        for item in items:
            iid = item[0]
            if not isinstance(iid, str):
                raise ValueError("a row without an id")
            n = len(item)
            if n == 6:
                row = tuple(item)
                old = rows.get(iid)
                if old is None or old[1] != row[1]:
                    if old is not None:
                        self._drop(iid)
                    ids = by_subject.get(row[1])
                    if ids is None:
                        ids = by_subject[row[1]] = set()
                    ids.add(iid)
                rows[iid] = row  # type: ignore[assignment]
            elif n == 1:
                pending.add(iid)
                continue
            elif n == 2 and item[1] is None:
                self._drop(iid)
            else:
                raise ValueError(f"a row of {n} items")
            if pending:
                pending.discard(iid)
            if unrepaired:
                unrepaired.discard(iid)

    def _drop(self, iid: str) -> None:
        old = self.rows.pop(iid, None)
        if old is not None:
            self.by_subject.get(old[1], set()).discard(iid)

    # ------------------------------------------------------------------ reading

    def refresh(self) -> bool:
        """Catch up with the file; False (and ``problem`` set) when the index must be rebuilt."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self._reset("an index file is missing")
            return False
        key = (st.st_ino, st.st_size, st.st_mtime_ns)
        if key == self._key:
            return self.problem is None
        if self._key is None or st.st_ino != self._key[0] or st.st_size < self._offset or self.problem is not None:
            self._load(0)
        else:
            self._load(self._offset)
        return self.problem is None

    def _load(self, offset: int) -> None:
        try:
            with open(self.path, "rb") as f:
                st = os.fstat(f.fileno())
                if offset and (self._key is None or st.st_ino != self._key[0]):
                    offset = 0
                f.seek(offset)
                data = f.read()
        except FileNotFoundError:
            self._reset("an index file is missing")
            return
        if offset == 0:
            self._reset(None)
        complete = data[: data.rfind(b"\n") + 1]  # an unterminated last line is not there yet
        lines = complete.splitlines()
        try:
            if offset == 0:
                if not lines:
                    raise ValueError("the file is empty")
                header = json.loads(lines[0])
                if not isinstance(header, dict) or header.get("formctl_index") != FORMAT:
                    raise ValueError("its header is not a format-1 formctl index header")
                if header.get("shard") != self.label:
                    raise ValueError(f"it is shard {header.get('shard')}, not {self.label}")
                if header.get("boot") != BOOT_ID:
                    self._reset("the index was written before the machine last restarted")
                    return
                lines = lines[1:]
                if lines and lines[0].startswith(b"{"):
                    self._apply_all(json.loads(lines[0])["rows"])
                    lines = lines[1:]
            if lines:
                self._apply_all(json.loads(b"[" + b",".join(lines) + b"]"))
                self.tail_lines += len(lines)
        except (ValueError, KeyError, TypeError) as exc:
            self._reset(f"{self.path} is damaged ({exc})")
            return
        self._offset = offset + len(complete)
        # Remember the size read up to the last whole line: an unterminated tail is looked at again.
        self._key = (st.st_ino, self._offset, st.st_mtime_ns)

    # ------------------------------------------------------------------ writing (store lock held exclusively)

    def _append_fd(self) -> int:
        """A descriptor for appending to the file last read (kept open between appends)."""
        if self._fd is not None:
            if self._fd_pid == os.getpid() and self._key is not None and os.fstat(self._fd).st_ino == self._key[0]:
                return self._fd
            self.close()
        fd = _durable.open_private(self.path, os.O_WRONLY | os.O_APPEND)
        self._fd, self._fd_pid = fd, os.getpid()
        return fd

    def close(self) -> None:
        if self._fd is not None:
            if self._fd_pid == os.getpid():
                try:
                    os.close(self._fd)
                except OSError:
                    pass
            self._fd = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass

    def _append(self, data: bytes) -> None:
        fd = self._append_fd()
        st = os.fstat(fd)
        if self._key is None or st.st_ino != self._key[0] or st.st_size < self._offset:
            self.close()
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
                self._key = None
            raise
        st = os.fstat(fd)
        self._offset += len(data)
        self._key = (st.st_ino, st.st_size, st.st_mtime_ns)
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
        self._apply_all((item,))

    def resolve(self, iid: str, row: Row | None) -> None:
        """Settle a pending id in memory only, from the instance's own files."""
        self._apply_all((row if row is not None else [iid, None],))
        self.unrepaired.add(iid)

    def needs_compaction(self) -> bool:
        return self.tail_lines > max(256, len(self.rows))

    def contents(self, rows: Iterable[Row]) -> bytes:
        header = {"formctl_index": FORMAT, "shard": self.label, "boot": BOOT_ID}
        return _dumps(header) + _dumps({"rows": [list(r) for r in rows]})

    def rewrite(self, rows: list[Row]) -> None:
        """Replace the shard (under this boot's id) with ``rows``, atomically. Not fsynced, like
        the appends: after a machine crash the boot id differs and the index is rebuilt."""
        _durable.replace_atomically(self.path, self.contents(rows), durable=self.durable_appends)
        self.close()
        self.adopt(rows, written=True)

    def adopt(self, rows: list[Row], *, written: bool = False) -> None:
        """Take ``rows`` as the shard's state; ``written``: they are what the file now holds."""
        self._reset(None)
        self._apply_all(rows)
        if written:
            st = os.stat(self.path)
            self._key, self._offset = (st.st_ino, st.st_size, st.st_mtime_ns), st.st_size


class Index:
    """All the shards; the adapter's one view of the index."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.shards = [IndexLog(os.path.join(folder, f"{n:02x}.jsonl"), n) for n in range(SHARDS)]

    def logs(self, subject: str | None = None) -> list[IndexLog]:
        """The shard holding ``subject``'s rows, or every shard."""
        return [self.shards[shard_of(subject)]] if subject is not None else self.shards

    def log_for(self, subject: str) -> IndexLog:
        return self.shards[shard_of(subject)]

    @property
    def rows(self) -> dict[str, Row]:
        merged: dict[str, Row] = {}
        for log in self.shards:
            merged.update(log.rows)
        return merged

    @property
    def pending(self) -> set[str]:
        return set().union(*(log.pending for log in self.shards))

    def problem(self) -> str | None:
        return next((log.problem for log in self.shards if log.problem is not None), None)

    def ids_for(self, *, subject: str | None, def_id: str | None, status: str | None) -> list[Row]:
        """Rows matching every given filter, most recently updated first (ties: id descending)."""
        if subject is not None:
            log = self.log_for(subject)
            candidates: Iterable[Row] = [log.rows[i] for i in log.by_subject.get(subject, ())]
        else:
            candidates = (row for log in self.shards for row in log.rows.values())
        return _sort_recent_first(
            [r for r in candidates if (def_id is None or r[2] == def_id) and (status is None or r[3] == status)]
        )

    def rewrite(self, rows: Iterable[Row]) -> None:
        """Replace every shard with ``rows``: all shard files are written, even empty ones, so
        that a missing file always means a lost index."""
        _durable.make_dir(self.folder)
        grouped: list[list[Row]] = [[] for _ in range(SHARDS)]
        for row in rows:
            grouped[shard_of(row[1])].append(row)
        for log, shard_rows in zip(self.shards, grouped):
            log.rewrite(shard_rows)

    def close(self) -> None:
        for log in self.shards:
            log.close()

    def adopt(self, rows: Iterable[Row]) -> None:
        """Use ``rows`` in memory only (the index cannot be written: a read-only store)."""
        grouped: list[list[Row]] = [[] for _ in range(SHARDS)]
        for row in rows:
            grouped[shard_of(row[1])].append(row)
        for log, shard_rows in zip(self.shards, grouped):
            log.adopt(shard_rows)
