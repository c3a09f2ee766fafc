"""The store's index: one file, ``<dir>/index.jsonl``, that finds instances without opening them.

It maps an instance id to ``(subject, def_id, status, updated_at, version)``. It is never
the source of truth, but it is the record of the last version the store *acknowledged*
per instance (a row is appended only after the commit's journal line is fsynced), so
files that hold less than their row are damage, not a stale index.

Lines: a header ``{"formctl_index": 2, "boot": ..., "rows": N}``; rows
``[id, subject, def_id, status, updated_at, version]``; pending markers ``[id, subject]``
(a write is about to happen); tombstones ``[id, subject, null]``. The last line naming an
id wins. Every line carries the subject, so one subject's rows are found by a byte search
without parsing the file. Why appends need no fsync (pending markers, the boot id):
docs/store.md, 'The index'.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any

from formctl.store import _durable

Row = tuple[str, str, str, str, str, int]
"""``(id, subject, def_id, status, updated_at, version)``."""

Item = list[Any]
"""A line as parsed: a row, a pending marker or a tombstone (the shapes above)."""

FORMAT = 2


def _read_boot_id() -> str | None:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            return f.read().strip() or None
    except OSError:
        return None


BOOT_ID = _read_boot_id()


def _line(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


class IndexDamaged(ValueError):
    """A line of the index does not parse: the index must be rebuilt (``problem`` says why)."""


def rows_recent_first(rows: Iterable[Row]) -> list[Row]:
    return sorted(rows, key=lambda r: (r[4], r[0]), reverse=True)


class _Parsed:
    """Every row of the file, applied in order (built only when a listing needs them all)."""

    __slots__ = ("rows", "by_subject", "pending")

    def __init__(self) -> None:
        self.rows: dict[str, Row] = {}
        self.by_subject: dict[str, set[str]] = {}
        self.pending: dict[str, str] = {}  # id -> subject

    def apply(self, items: Iterable[Item]) -> None:
        rows, by_subject, pending = self.rows, self.by_subject, self.pending
        for item in items:
            iid, subject = item[0], item[1]
            if not isinstance(iid, str) or not isinstance(subject, str):
                raise ValueError("a line without an id and a subject")
            n = len(item)
            if n == 2:
                pending[iid] = subject
                continue
            pending.pop(iid, None)
            if n == 6:
                if iid not in rows:
                    by_subject.setdefault(subject, set()).add(iid)
                rows[iid] = tuple(item)
            elif n == 3 and item[2] is None:
                if rows.pop(iid, None) is not None:
                    by_subject[subject].discard(iid)
            else:
                raise ValueError(f"a line of {n} items")


class Index:
    """The in-memory mirror of ``index.jsonl``; every method expects the store lock held."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.durable_appends = BOOT_ID is None
        self._fd: int | None = None  # kept open for appends while the file stays the same
        self._fd_pid = 0
        self._reset("the index has not been read")

    # ------------------------------------------------------------------ state

    def _reset(self, problem: str | None) -> None:
        self.problem = problem  # why the index cannot be used as it stands, or None
        self.evidence: dict[str, Row] = {}  # rows of an index that must be rebuilt (see rebuild)
        # The file's complete lines read so far, header included, in one buffer that later reads
        # and appends extend in place (a cold lookup copies the file once, and parses none of it).
        self._data = bytearray()
        self._body = 0  # where the first line after the header starts
        self._key: tuple[int, int, int] | None = None  # (inode, size read, mtime) last seen
        self._base_rows = 0  # rows written by the last rewrite
        self._lines: int | None = None  # lines after the header, counted when first needed
        self._parsed: _Parsed | None = None
        self._found: dict[str, tuple[int, tuple[Row | None, bool]]] = {}  # row(): id -> (bytes searched, answer)
        self._subjects: dict[str, tuple[_Parsed, int]] = {}  # rows_for_subject(): subject -> (rows, bytes searched)

    # ------------------------------------------------------------------ reading

    def refresh(self) -> bool:
        """Catch up with the file; False (and ``problem`` set) when the index must be rebuilt."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self._reset("the index file is missing")
            return False
        key = (st.st_ino, st.st_size, st.st_mtime_ns)
        if key == self._key:
            return self.problem is None
        if self._key is None or st.st_ino != self._key[0] or st.st_size < len(self._data) or self.problem is not None:
            self._load(0)
        else:
            self._load(len(self._data))
        return self.problem is None

    def _load(self, offset: int) -> None:
        try:
            with open(self.path, "rb") as f:
                st = os.fstat(f.fileno())
                if offset and (self._key is None or st.st_ino != self._key[0]):
                    offset = 0
                if offset == 0:
                    self._reset(None)
                f.seek(offset)
                grown = bytearray(max(0, st.st_size - offset))
                got = f.readinto(grown)
        except FileNotFoundError:
            self._reset("the index file is missing")
            return
        del grown[got:]
        del grown[grown.rfind(b"\n") + 1 :]  # an unterminated last line is not there yet
        if offset == 0:
            end = grown.find(b"\n")
            try:
                if end < 0:
                    raise ValueError("the file is empty")
                header = json.loads(grown[:end])
                if not isinstance(header, dict) or header.get("formctl_index") != FORMAT:
                    raise ValueError(f"its header is not a format-{FORMAT} formctl index header")
                self._base_rows = int(header.get("rows", 0))
            except (ValueError, TypeError) as exc:
                self._reset(f"{self.path} is damaged ({exc})")
                return
            if header.get("boot") != BOOT_ID:
                self._reset("the index was written before the machine last restarted")
                self.evidence = self._rows_of(bytes(grown[end + 1 :]))
                return
            self._data, self._body = grown, end + 1
        else:
            if self._parsed is not None and grown:
                try:
                    self._parsed.apply(json.loads(b"[" + bytes(grown).replace(b"\n", b",")[:-1] + b"]"))
                except (ValueError, TypeError, IndexError) as exc:
                    self._reset(f"{self.path} is damaged ({exc})")
                    return
            if self._lines is not None:
                self._lines += grown.count(b"\n")
            self._data += grown
        # Remember the size read up to the last whole line: an unterminated tail is looked at again.
        self._key = (st.st_ino, len(self._data), st.st_mtime_ns)

    @staticmethod
    def _rows_of(body: bytes) -> dict[str, Row]:
        parsed = _Parsed()
        try:
            parsed.apply(json.loads(b"[" + body.replace(b"\n", b",")[:-1] + b"]") if body else ())
        except (ValueError, TypeError, IndexError):
            return {}
        return parsed.rows

    def _all(self) -> _Parsed:
        """Every row (parsing the whole file once; later appends are applied as they are read)."""
        if self._parsed is None:
            parsed = _Parsed()
            try:
                body = bytes(self._data[self._body :])
                parsed.apply(json.loads(b"[" + body.replace(b"\n", b",")[:-1] + b"]") if body else ())
            except (ValueError, TypeError, IndexError) as exc:
                raise self._damaged(exc) from None
            self._parsed = parsed
        return self._parsed

    def _damaged(self, exc: Exception) -> IndexDamaged:
        self._reset(f"{self.path} is damaged ({exc})")
        return IndexDamaged(self.problem)

    def _item(self, start: int, end: int) -> Item:
        try:
            item = json.loads(self._data[start:end])
            if not isinstance(item, list) or len(item) not in (2, 3, 6):
                raise ValueError(f"a line of the wrong shape at byte {start}")
        except ValueError as exc:
            raise self._damaged(exc) from None
        return item

    def _lines_naming(self, needle: bytes, pos: int) -> list[Item]:
        """The items of the lines from offset ``pos`` on whose second element (the subject)
        encodes as ``needle``."""
        data = self._data
        found: list[Item] = []
        while True:
            pos = data.find(needle, pos)
            if pos < 0:
                return found
            start = data.rfind(b"\n", 0, pos) + 1
            end = data.find(b"\n", pos)
            ends = data.startswith((b",", b"]"), pos + len(needle))  # the whole subject, not a prefix
            if ends and data.find(b",", start) == pos - 1:  # ids hold no comma
                found.append(self._item(start, end))
            pos = end

    def rows_for_subject(self, subject: str) -> tuple[list[Row], set[str]]:
        """The subject's rows, and the ids among them whose last line is a pending marker."""
        if self._parsed is None and len(self._subjects) >= 16:
            self._all()  # a process that asks about many subjects parses the whole index, once
        if self._parsed is not None:
            p = self._parsed
            ids = p.by_subject.get(subject, ())
            return [p.rows[i] for i in ids], {i for i, s in p.pending.items() if s == subject}
        parsed, searched = self._subjects.get(subject) or (_Parsed(), self._body)
        try:
            parsed.apply(self._lines_naming(_line(subject)[:-1], searched))
        except IndexDamaged:
            raise
        except (ValueError, TypeError, IndexError) as exc:
            raise self._damaged(exc) from None
        if len(self._subjects) > 4096:
            self._subjects.clear()
        self._subjects[subject] = (parsed, len(self._data))  # next time, only what was appended since
        return list(parsed.rows.values()), set(parsed.pending)

    def row(self, iid: str) -> tuple[Row | None, bool]:
        """The last row recorded for ``iid`` (None: none), and whether a write to it is pending."""
        if self._parsed is not None:
            return self._parsed.rows.get(iid), iid in self._parsed.pending
        needle = b'["' + iid.encode("ascii") + b'",'
        data = self._data
        end = len(data)
        known = self._found.get(iid)
        if known is not None and data.find(needle, max(0, known[0] - len(needle))) < 0:
            return known[1]  # nothing about it appended since the last look
        answer = self._search(needle, end)
        if len(self._found) > 4096:
            self._found.clear()
        self._found[iid] = (end, answer)
        return answer

    def _search(self, needle: bytes, end: int) -> tuple[Row | None, bool]:
        data = self._data
        pending = False
        while True:
            pos = data.rfind(needle, 0, end)
            if pos < 0:
                return None, pending
            if pos == 0 or data[pos - 1 : pos] == b"\n":
                item = self._item(pos, data.find(b"\n", pos))
                if len(item) == 2:
                    pending = True  # a marker after the last row: the write after it is unsettled
                elif len(item) == 3:
                    return None, pending
                else:
                    return tuple(item), pending
            end = pos

    def rows(self) -> dict[str, Row]:
        return self._all().rows

    def pending(self) -> set[str]:
        return set(self._all().pending)

    def pending_subject(self, iid: str) -> str:
        return self._all().pending[iid]

    def last_marker(self) -> tuple[str, str] | None:
        """``(id, subject)`` when the last line is a pending marker: a writer died after it."""
        if len(self._data) <= self._body:
            return None
        start = self._data.rfind(b"\n", 0, len(self._data) - 1) + 1
        item = self._item(start, len(self._data))
        return (item[0], item[1]) if len(item) == 2 else None

    def ids_for(self, *, subject: str | None, def_id: str | None, status: str | None) -> list[Row]:
        """Rows matching every given filter, most recently updated first (ties: id descending)."""
        if subject is not None:
            candidates: Iterable[Row] = self.rows_for_subject(subject)[0]
        else:
            candidates = self._all().rows.values()
        return rows_recent_first(
            r for r in candidates if (def_id is None or r[2] == def_id) and (status is None or r[3] == status)
        )

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

    def _append(self, item: Item) -> None:
        data = _line(item)
        fd = self._append_fd()
        st = os.fstat(fd)
        offset = len(self._data)
        if self._key is None or st.st_ino != self._key[0] or st.st_size < offset:
            self.close()
            raise OSError(f"{self.path} changed under the store lock")
        if st.st_size > offset:
            # An unterminated line left by a writer that died mid-append: never read, cut it off.
            os.ftruncate(fd, offset)
        try:
            _durable.write_all(fd, data)
            if self.durable_appends:
                _durable.sync_data(fd)
        except OSError:
            # Take back a partial line so that the log stays line-aligned.
            try:
                os.ftruncate(fd, offset)
            except OSError:
                self._key = None
            raise
        st = os.fstat(fd)
        self._data += data
        self._key = (st.st_ino, st.st_size, st.st_mtime_ns)
        if self._lines is not None:
            self._lines += 1
        if self._parsed is not None:
            self._parsed.apply((item,))

    def mark_pending(self, iid: str, subject: str) -> None:
        """Announce a write to ``iid``; raises OSError if the index cannot be written."""
        self._append([iid, subject])

    def put(self, iid: str, subject: str, row: Row | None) -> None:
        """Record the instance's row (None: it does not exist). Never raises: a failed append
        leaves the pending marker in place, which makes readers consult the instance itself."""
        try:
            self._append(list(row) if row is not None else [iid, subject, None])
        except OSError:
            pass

    def needs_compaction(self) -> bool:
        if self._lines is None:
            self._lines = self._data.count(b"\n", self._body)
        return self._lines > 256 and self._lines > 2 * self._base_rows

    def rewrite(self, rows: Iterable[Row]) -> None:
        """Replace the file with one line per row, atomically and durably."""
        rows = list(rows)
        header = {"formctl_index": FORMAT, "boot": BOOT_ID, "rows": len(rows)}
        data = _line(header) + b"".join(_line(list(r)) for r in rows)
        _durable.replace_atomically(self.path, data)
        self.close()
        self.refresh()

    def adopt(self, rows: Iterable[Row]) -> None:
        """Use ``rows`` in memory only (the index cannot be written: a read-only store)."""
        evidence = self.evidence
        self._reset(None)
        self.evidence = evidence
        self._parsed = _Parsed()
        self._parsed.apply(list(r) for r in rows)
        self._key = (-1, -1, -1)  # never equal to a real file's: the next refresh reads the file
