"""One instance's files: the snapshot ``<id>.json`` and the journal ``<id>.journal`` beside it.

A read is the snapshot plus a replay of the journal's records through
:func:`~formctl.forms.commit.apply_commit` (and :func:`~formctl.forms.commit.apply_dispatch`),
the same functions that produced them, so the semantics of a commit live in one place.
A commit appends one fsynced line to the journal (:mod:`formctl.store._journal` frames
it); every ``compact_after`` records, or when the journal outgrows its snapshot, the
instance is folded into a new snapshot and the journal removed.

Reads are cheap when nothing changed: the last state read per instance is kept with the
identity, size and mtime of both files, checked with two ``stat`` calls per read, and
only the bytes another process appended since are replayed.

Every method here expects the store lock held (shared to read, exclusive to write).
"""

from __future__ import annotations

import dataclasses
import os
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from formctl.errors import StoreError
from formctl.forms.commit import apply_commit, apply_dispatch
from formctl.forms.instance import DispatchState, Instance
from formctl.store import _durable
from formctl.store._journal import frame, scan
from formctl.store.codec import FORMAT, commit_from_json, file_error, parse_snapshot, snapshot_bytes, unsupported_format

__all__ = ["COMPACT_AFTER", "Corruption", "InstanceFiles", "Loaded", "encoded"]

COMPACT_AFTER = 200
"""Journal records folded into a new snapshot at once. A cold read replays at most this many
short lines (a few ms); a commit pays 1/200th of a snapshot rewrite on average."""

_COMPACT_MIN_BYTES = 1 << 20
_CACHE_SIZE = 4096

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Corruption:
    """A journal record that cannot be applied although records were written after it.

    The instance reads as of the record before it; ``last_version`` is the highest version
    stamped on the valid records after it (0 if none says): those versions were reached
    and are not in what reads show."""

    path: str
    reason: str
    last_version: int = 0


def _last_version(records: list[dict[str, Any]]) -> int:
    return max((r["v"] for r in records if isinstance(r.get("v"), int)), default=0)


@dataclass(slots=True)
class Loaded:
    """One instance as last read, with the file identities it was read from."""

    instance: Instance
    snap_key: tuple[int, int, int, int]
    snap_size: int
    seq: int  # the last journal record applied (the snapshot's own seq if none)
    repairs: tuple[dict[str, Any], ...] = ()
    jour_ino: int | None = None
    jour_size: int = 0
    jour_mtime: int = 0
    jour_valid: int = 0  # bytes of whole, valid lines; anything after is a torn append
    jour_records: int = 0  # records applied on top of the snapshot
    jour_lines: int = 0
    corrupt: Corruption | None = None  # the journal is damaged after what was applied


class _Unusable(Exception):
    """A record that passes its checksum but cannot follow the one before it."""


def _snap_key(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def encoded(make: Callable[[], T]) -> T:
    """``make()``, with a value JSON cannot hold reported as the store's one-line error."""
    try:
        return make()
    except (TypeError, ValueError) as exc:
        raise StoreError(f"The instance holds a value that cannot be stored as JSON ({exc}).") from None


class InstanceFiles:
    """The ``instances/`` folder: reading, appending to and compacting instance files."""

    def __init__(self, folder: str, *, compact_after: int = COMPACT_AFTER) -> None:
        self.folder = folder
        self.compact_after = max(1, compact_after)
        self._cache: OrderedDict[str, Loaded] = OrderedDict()

    def paths(self, iid: str) -> tuple[str, str]:
        base = os.path.join(self.folder, iid)
        return base + ".json", base + ".journal"

    def forget(self, iid: str) -> None:
        self._cache.pop(iid, None)

    def _remember(self, iid: str, loaded: Loaded) -> Loaded:
        self._cache[iid] = loaded
        self._cache.move_to_end(iid)
        if len(self._cache) > _CACHE_SIZE:
            self._cache.popitem(last=False)
        return loaded

    # ------------------------------------------------------------------ reading

    def read(self, iid: str, *, fresh: bool = False) -> Loaded | None:
        """The instance as stored now. Reuses the last read when both files are unchanged,
        and replays only the appended bytes when only the journal grew."""
        spath, jpath = self.paths(iid)
        try:
            sst = os.stat(spath)
        except FileNotFoundError:
            self._cache.pop(iid, None)
            return None
        except OSError as exc:
            raise _durable.os_error(exc, f"read {spath}", writing=False) from None
        try:
            jst: os.stat_result | None = os.stat(jpath)
        except FileNotFoundError:
            jst = None
        except OSError as exc:
            raise _durable.os_error(exc, f"read {jpath}", writing=False) from None
        cached = None if fresh else self._cache.get(iid)
        if cached is not None and cached.snap_key == _snap_key(sst):
            if jst is None and cached.jour_ino is None:
                return cached
            if jst is not None and cached.jour_ino == jst.st_ino and jst.st_size >= cached.jour_valid:
                if (
                    jst.st_size == cached.jour_size
                    and (cached.jour_size == cached.jour_valid or cached.corrupt is not None)
                    and jst.st_mtime_ns == cached.jour_mtime
                ):
                    return cached
                if cached.corrupt is None:
                    return self._remember(iid, self._catch_up(iid, jpath, cached))
        try:
            return self._remember(iid, self._load(iid, spath, jpath))
        except StoreError:
            self._cache.pop(iid, None)
            raise

    def _load(self, iid: str, spath: str, jpath: str) -> Loaded:
        try:
            with open(spath, "rb") as f:
                st = os.fstat(f.fileno())
                data = f.read()
        except OSError as exc:
            raise _durable.os_error(exc, f"read {spath}", writing=False) from None
        instance, seq, repairs = parse_snapshot(spath, iid, data)
        loaded = Loaded(instance, _snap_key(st), st.st_size, seq, repairs)
        try:
            with open(jpath, "rb") as f:
                jst = os.fstat(f.fileno())
                jdata = f.read()
        except FileNotFoundError:
            return loaded
        except OSError as exc:
            raise _durable.os_error(exc, f"read {jpath}", writing=False) from None
        loaded.jour_ino = jst.st_ino
        return self._replay(iid, jpath, loaded, jdata, start=0, seen=jst)

    def _catch_up(self, iid: str, jpath: str, cached: Loaded) -> Loaded:
        try:
            with open(jpath, "rb") as f:
                jst = os.fstat(f.fileno())
                f.seek(cached.jour_valid)
                data = f.read()
        except OSError as exc:
            raise _durable.os_error(exc, f"read {jpath}", writing=False) from None
        if jst.st_ino != cached.jour_ino:  # replaced between stat and open: read it all again
            return self._load(iid, *self.paths(iid))
        loaded = dataclasses.replace(cached)
        return self._replay(iid, jpath, loaded, data, start=cached.jour_valid, seen=jst)

    def _replay(self, iid: str, jpath: str, loaded: Loaded, data: bytes, *, start: int, seen: os.stat_result) -> Loaded:
        """Apply journal bytes (starting at offset ``start``) to ``loaded``; returns it updated,
        with the journal's size and time as ``seen`` when it was read.

        A damaged record with records after it stops the replay there: ``loaded.corrupt`` says
        what is wrong, and the instance reads as of the record before it."""
        found = scan(data, start=start, first_line_number=loaded.jour_lines + 1)
        if found.damage is not None:
            loaded.corrupt = Corruption(jpath, f"{found.damage}", _last_version(found.after))
        records = found.records
        if start == 0 and records:
            _check_header(records[0], jpath, iid)
            records = records[1:]
        snap_seq = loaded.seq - loaded.jour_records
        instance = loaded.instance
        line = loaded.jour_lines + (1 if start == 0 and found.records else 0)
        for n, record in enumerate(records):
            line += 1
            try:
                s = record["s"]
                if s <= snap_seq:
                    continue  # already in the snapshot (the journal outlived a compaction)
                if s != loaded.seq + 1:
                    raise _Unusable(
                        f"line {line} holds record {s} where {loaded.seq + 1} was due (a record is missing)"
                    )
                instance = _apply_record(instance, record, line)
            except (_Unusable, KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
                reason = (
                    str(exc)
                    if isinstance(exc, _Unusable)
                    else (f"line {line} is a malformed record ({type(exc).__name__}: {exc})")
                )
                rest = records[n:] + found.after
                loaded.corrupt = Corruption(jpath, reason, _last_version(rest))
                break
            loaded.seq = s
            loaded.jour_records += 1
        loaded.instance = instance
        loaded.jour_lines += data[: found.valid_end - start].count(b"\n")
        loaded.jour_valid = found.valid_end
        loaded.jour_size = seen.st_size
        loaded.jour_mtime = seen.st_mtime_ns
        return loaded

    # ------------------------------------------------------------------ writing

    def create(self, instance: Instance, data: bytes) -> None:
        """Write a new instance's snapshot (``data``) durably; its id is free: the caller checked."""
        path = self.paths(instance.id)[0]
        try:
            _durable.replace_atomically(path, data)
            st = os.stat(path)
        except OSError as exc:
            _durable.remove_quietly(path)  # if only the folder's fsync failed: not created after all
            raise _durable.os_error(exc, f"write {path}") from None
        self._remember(instance.id, Loaded(instance, _snap_key(st), st.st_size, 0))

    def append(self, iid: str, loaded: Loaded, data: bytes, record: dict[str, Any], new: Instance) -> Loaded:
        """Append one framed record durably; on any failure the stored instance is left as it was
        (and :class:`StoreError` raised). Returns the instance as now stored."""
        _, jpath = self.paths(iid)
        create = loaded.jour_ino is None
        if loaded.jour_valid == 0:  # a new journal, or one whose only line (its header) was torn
            data = frame({"format": FORMAT, "journal": iid}) + data
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
                    _durable.sync_dir(self.folder)
                st = os.fstat(fd)
            except BaseException:
                self._take_back(fd, jpath, create, loaded.jour_valid)
                raise
            finally:
                os.close(fd)
        except OSError as exc:
            self._cache.pop(iid, None)
            raise _durable.os_error(exc, f"write {jpath}") from None
        done = Loaded(
            instance=new,
            snap_key=loaded.snap_key,
            snap_size=loaded.snap_size,
            seq=record["s"],
            repairs=loaded.repairs,
            jour_ino=st.st_ino,
            jour_size=st.st_size,
            jour_mtime=st.st_mtime_ns,
            jour_valid=st.st_size,
            jour_records=loaded.jour_records + 1,
            jour_lines=loaded.jour_lines + data.count(b"\n"),
        )
        self._remember(iid, done)
        if done.jour_records >= self.compact_after or done.jour_valid > max(_COMPACT_MIN_BYTES, 2 * done.snap_size):
            self._compact(iid, done)
        return done

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

    def _compact(self, iid: str, loaded: Loaded) -> None:
        """Fold the journal into a new snapshot. A failure here loses nothing (the journal
        stays valid) and is not the commit's failure: it is retried after the next commit."""
        spath, jpath = self.paths(iid)
        try:
            data = snapshot_bytes(loaded.instance, loaded.seq, loaded.repairs)
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
        compacted = Loaded(loaded.instance, _snap_key(st), st.st_size, loaded.seq, loaded.repairs)
        if jst is not None:  # the old journal stayed: its records are all in the snapshot now
            compacted.jour_ino, compacted.jour_size, compacted.jour_mtime = jst.st_ino, jst.st_size, jst.st_mtime_ns
            compacted.jour_valid, compacted.jour_lines = loaded.jour_valid, loaded.jour_lines
        self._remember(iid, compacted)


def _check_header(header: dict[str, Any], jpath: str, iid: str) -> None:
    """Refuse a journal whose first line is not the header of this instance's journal, in a format read here."""
    if "format" not in header or "s" in header:
        raise file_error(jpath, "line 1 is not a journal header; the journal was left as it is.")
    if header["format"] != FORMAT:
        raise unsupported_format(jpath, header["format"])
    if header.get("journal") != iid:
        raise file_error(jpath, f"belongs to {header.get('journal')!r}, not {iid!r}.")


def _apply_record(instance: Instance, record: dict[str, Any], line: int) -> Instance:
    """The instance after one journal record (a commit or a dispatch), checked against the version
    it is stamped with. Raises _Unusable, or the KeyError, TypeError or ValueError of a malformed record."""
    if "c" in record:
        instance = apply_commit(instance, commit_from_json(record["c"]), if_version=instance.version, now=record["at"])
    elif "d" in record:
        key, state = record["d"]
        instance = apply_dispatch(instance, key, DispatchState.from_dict(state), now=record["at"])
    else:
        raise ValueError("neither a commit nor a dispatch")
    if record["v"] != instance.version:
        raise _Unusable(f"line {line} is stamped version {record['v']} but produces {instance.version}")
    return instance
