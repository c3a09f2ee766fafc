"""The stored state of one form run: the instance, its answer logs and its dispatch log.

An instance is the only thing formctl persists. Everything else (liveness, held values,
completion, the open step) is recomputed from it and the compiled definition.

Revisions and dispatch records are immutable once made, so copying an instance copies
its maps but shares the records: a copy costs O(fields), not O(revisions). That is what
keeps a read cheap when a field's log is long (the reference engine deep-copies the whole
instance twice per write, and its per-operation cost grows with the log).

The JSON form (``instance_to_json``) is compact on purpose: a revision is a short list
``[seq, at, provenance_index, value?, error?]`` and the provenance rows
(source, actor, note, and how the value arrived: kind, quote, turn...) are interned in one
table per instance. The reference writes each
timestamp twice and the provenance inline, about 160 bytes per revision; this is well
under half that.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from time import gmtime, strftime, time_ns
from types import MappingProxyType
from typing import Any, NamedTuple


class Status(StrEnum):
    """An instance's status. Members are strings, so they store and compare as the plain words.

    ``stale`` is never written by this version (it is read, see ``formctl.forms.reading``);
    it is kept because older stores may hold it. ``ready`` is a form declared with
    ``review=True`` whose answers are all in, waiting for the person to send it
    (docs/engine.md, "Review before sending").
    """

    ACTIVE = "active"
    READY = "ready"
    AWAITING = "awaiting"
    COMPLETE = "complete"
    ABANDONED = "abandoned"
    STALE = "stale"


class DispatchStatus(StrEnum):
    """Where one executor run under one idempotency key stands."""

    RUNNING = "running"
    OK = "ok"
    FAILED = "failed"


INSTANCE_STATUSES: tuple[str, ...] = tuple(s.value for s in Status)

# The members under plain module names, for the engine's own code: reading ``Status.ACTIVE``
# goes through the enum's member descriptor on every access (about 0.3 µs on CPython 3.11),
# which a view pays once per field and the engine benchmark showed as +40% on status().
ACTIVE, READY, AWAITING, COMPLETE, ABANDONED, STALE = (
    Status.ACTIVE,
    Status.READY,
    Status.AWAITING,
    Status.COMPLETE,
    Status.ABANDONED,
    Status.STALE,
)
DISPATCH_RUNNING, DISPATCH_OK, DISPATCH_FAILED = DispatchStatus.RUNNING, DispatchStatus.OK, DispatchStatus.FAILED


def now_iso() -> str:
    """The wall clock as an ISO-8601 UTC string with microseconds (``2026-11-29T16:16:33.123456Z``).

    Microseconds, not milliseconds: "the open form" is the most recently updated instance, and
    two writes a person makes in quick succession must not tie.
    """
    global _SECOND
    second, micro = divmod(time_ns() // 1000, 1_000_000)
    cached = _SECOND
    if cached[0] != second:  # formatting the date and time costs a microsecond; once a second will do
        cached = _SECOND = (second, strftime("%Y-%m-%dT%H:%M:%S", gmtime(second)))
    return f"{cached[1]}.{micro:06d}Z"


_SECOND: tuple[int, str] = (-1, "")
"""The last second :func:`now_iso` formatted, and how: replaced whole, so threads never mix two."""


PROVENANCE_KINDS: tuple[str, ...] = (
    "said",
    "reading",
    "assumed",
    "confirmed",
    "host",
    "executor",
    "seed",
    "migrated",
    "derived",
)
"""How a revision's value arrived (docs/engine.md, "Provenance")."""


@dataclass(frozen=True, slots=True)
class Provenance:
    """Who wrote a revision, from where, when, why (the operation's note), and how its value arrived.

    ``kind`` is one of :data:`PROVENANCE_KINDS` (None on a revision written before formctl
    recorded it: :func:`provenance_kind` infers one). For ``said``, ``reading`` and
    ``confirmed``, ``quote`` is the person's words as they wrote them, ``turn`` the number of
    their message in the conversation and ``message`` that message (cut to
    :data:`MESSAGE_EXCERPT` characters around the quote); ``hook`` names an executor's hook.
    For a ``seed``, ``moment`` says when the host gave it: ``start`` (with the form's start) or
    ``continued`` (with a chat that continued the form); None on a seed written before formctl
    recorded it (docs/engine.md, "Provenance"). A ``derived`` revision's ``inputs`` names the
    answers it was computed from, each as ``field@seq`` (the revision in force), comma-separated.
    """

    source: str
    actor: str
    timestamp: str
    note: str | None = None
    kind: str | None = None
    quote: str | None = None
    turn: int | None = None
    message: str | None = None
    hook: str | None = None
    moment: str | None = None
    inputs: str | None = None

    def extras(self) -> dict[str, Any]:
        """The how-it-arrived part, only the keys that are set."""
        return {
            k: v
            for k, v in (
                ("kind", self.kind),
                ("quote", self.quote),
                ("turn", self.turn),
                ("message", self.message),
                ("hook", self.hook),
                ("moment", self.moment),
                ("inputs", self.inputs),
            )
            if v is not None
        }

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"source": self.source, "actor": self.actor, "timestamp": self.timestamp}
        if self.note is not None:
            d["note"] = self.note
        d.update(self.extras())
        return d


MESSAGE_EXCERPT = 240


def provenance_kind(p: Provenance) -> str:
    """The revision's kind; for one written before kinds were recorded, the best reading of it."""
    if p.kind is not None:
        return p.kind
    if p.note == "start":
        return "seed"
    if p.note is not None and p.note.startswith("migrat"):
        return "migrated"
    if p.source == "cli" or p.actor == "host":
        return "host"
    return "assumed"


class Entry:
    """One revision of a field: immutable once appended.

    ``value`` is the raw value as supplied (never the parsed one); ``error`` is the
    validation error computed when it was written. A retraction has no value.

    ``parse_cache`` is the one piece of derived state kept on a stored object: the
    evaluator's ``(validator, outcome)`` for this revision, so each revision is parsed once
    in its life however often it is evaluated (the engine benchmark's per-operation cost
    stays flat as logs grow because of it). It is not part of the entry's meaning: never
    serialised, never compared, and only ``formctl.forms.evaluate`` reads or writes it.
    """

    __slots__ = ("seq", "value", "provenance", "error", "retracted", "parse_cache")

    def __init__(
        self,
        seq: int,
        value: Any,
        provenance: Provenance,
        error: str | None = None,
        retracted: bool = False,
    ) -> None:
        self.seq = seq
        self.value = None if retracted else value
        self.provenance = provenance
        self.error = error
        self.retracted = retracted
        self.parse_cache: Any = None

    @property
    def at(self) -> str:
        return self.provenance.timestamp

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"seq": self.seq, "at": self.at, "provenance": self.provenance.to_dict()}
        if self.retracted:
            d["retracted"] = True
        else:
            d["value"] = self.value
        if self.error:
            d["error"] = self.error
        return d

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Entry):
            return NotImplemented
        return (
            self.seq == other.seq
            and self.retracted == other.retracted
            and self.value == other.value
            and self.error == other.error
            and self.provenance == other.provenance
        )

    def __repr__(self) -> str:
        if self.retracted:
            return f"Entry(seq={self.seq}, retracted)"
        return f"Entry(seq={self.seq}, value={self.value!r}{', error' if self.error else ''})"


@dataclass(frozen=True, slots=True)
class FieldLog:
    """A field's answer log: every revision ever given, oldest first, and the cursor in force.

    ``cursor`` is the index of the revision in force, or -1 for none.
    """

    revisions: tuple[Entry, ...] = ()
    cursor: int = -1

    @property
    def at_cursor(self) -> Entry | None:
        if 0 <= self.cursor < len(self.revisions):
            return self.revisions[self.cursor]
        return None

    @property
    def in_force(self) -> Entry | None:
        """The revision in force: the one at the cursor, unless that is a retraction."""
        entry = self.at_cursor
        if entry is None or entry.retracted:
            return None
        return entry


@dataclass(frozen=True, slots=True)
class DispatchState:
    """One executor run under one idempotency key.

    ``owner`` names the process that set ``running`` (``host:pid``), so a record left
    ``running`` by a process that died can be told from one whose executor is in flight.
    A host's resolution of a checkpoint is a record too: ``actor`` says who resolved it and
    ``reason`` why (see :mod:`formctl.forms.resolutions`).
    """

    hook_id: str
    status: str  # a DispatchStatus
    attempts: int
    at: str
    error: str | None = None
    owner: str | None = None
    actor: str | None = None
    reason: str | None = None
    covers: dict[str, Any] | None = None  # a resolution: the values the decision is bound to
    detail: str | None = None  # a fault's own text (exception, where), for the host; ``error`` is what people read
    override: str | None = None  # a host act done past a rule on the host's explicit word (docs/engine.md, "Host acts")

    # The questions asked of a record's status, answered here and nowhere else.
    @property
    def failed(self) -> bool:
        """The run ended in a failure (for a host's resolution: the checkpoint was rejected)."""
        return self.status == DISPATCH_FAILED

    @property
    def succeeded(self) -> bool:
        """The run ended well (for a host's resolution: the checkpoint was approved); never run again."""
        return self.status == DISPATCH_OK

    @property
    def ended(self) -> bool:
        """The run ended, well or not: ``ok`` or ``failed``, not still ``running``."""
        return self.status == DISPATCH_OK or self.status == DISPATCH_FAILED

    @property
    def running(self) -> bool:
        """Set when the run started and not yet ended: in flight, or left by a process that died
        (``owner`` tells them apart)."""
        return self.status == DISPATCH_RUNNING

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"hook_id": self.hook_id, "status": self.status, "attempts": self.attempts, "at": self.at}
        if self.error is not None:
            d["error"] = self.error
        if self.owner is not None:
            d["owner"] = self.owner
        if self.actor is not None:
            d["actor"] = self.actor
        if self.reason is not None:
            d["reason"] = self.reason
        if self.covers is not None:
            d["covers"] = dict(self.covers)
        if self.detail is not None:
            d["detail"] = self.detail
        if self.override is not None:
            d["override"] = self.override
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> DispatchState:
        return cls(
            d["hook_id"],
            d["status"],
            int(d["attempts"]),
            d["at"],
            d.get("error"),
            d.get("owner"),
            d.get("actor"),
            d.get("reason"),
            d.get("covers"),
            d.get("detail"),
            d.get("override"),
        )


class RunsIndex(NamedTuple):
    """What two scans over an instance's runs would find, kept so that a write need not make
    them (:meth:`Instance.runs`): the keys of the runs started and not ended, in the order
    written, and the hooks with at least one failed run on record."""

    running: tuple[str, ...]
    failed: frozenset[str]


def scan_runs(dispatches: Mapping[str, DispatchState]) -> RunsIndex:
    """The index by a walk over every record: each one's :attr:`DispatchState.running` and
    :attr:`DispatchState.failed`, asked of its status directly."""
    running: list[str] = []
    failed: set[str] = set()
    for key, record in dispatches.items():
        status = record.status
        if status == DISPATCH_RUNNING:
            running.append(key)
        elif status == DISPATCH_FAILED:
            failed.add(record.hook_id)
    return RunsIndex(tuple(running), frozenset(failed))


def failed_hook_ids(instance: Instance) -> frozenset[str]:
    """The hooks with at least one failed run on record (each record's :attr:`DispatchState.failed`)."""
    return instance.runs().failed


def running_runs(instance: Instance) -> list[tuple[str, DispatchState]]:
    """The runs (key, record) started and not ended (each record's :attr:`DispatchState.running`)."""
    dispatches = instance.dispatches
    return [(key, dispatches[key]) for key in instance.runs().running]


class Instance:
    """One stored run of a form for a subject. Plain data with snake_case attributes.

    ``dispatches`` (a record per executor run, resolution and act) is a read-only mapping:
    it changes only through :meth:`put_dispatches`, which puts a new map in its place, so
    copies share it instead of copying it, and what :meth:`runs` keeps stays true.
    """

    __slots__ = (
        "id",
        "def_id",
        "def_version",
        "subject",
        "status",
        "entries",
        "revision_seq",
        "occurrences",
        "dispatches",
        "blocked_on",
        "open_step_override",
        "closed_reason",
        "forced_complete",
        "version",
        "created_at",
        "updated_at",
        "completed_at",
        "_runs",
    )

    def __init__(
        self,
        *,
        id: str,
        def_id: str,
        def_version: int,
        subject: str,
        status: str = Status.ACTIVE,
        entries: dict[str, FieldLog] | None = None,
        revision_seq: int = 0,
        occurrences: dict[str, int] | None = None,
        dispatches: dict[str, DispatchState] | None = None,
        blocked_on: str | None = None,
        open_step_override: str | None = None,
        closed_reason: str | None = None,
        forced_complete: bool = False,
        version: int = 1,
        created_at: str = "",
        updated_at: str = "",
        completed_at: str | None = None,
    ) -> None:
        self.id = id
        self.def_id = def_id
        self.def_version = def_version
        self.subject = subject
        self.status: Status = Status(status)  # stores hand back the plain word
        self.entries = entries if entries is not None else {}
        self.revision_seq = revision_seq
        self.occurrences = occurrences if occurrences is not None else {}
        # Read-only, and shared by every copy (see put_dispatches): a record per run and per act
        # ever made, so copying it on every copy cost more than anything else a copy does.
        self.dispatches: MappingProxyType[str, DispatchState] = MappingProxyType(dict(dispatches or {}))
        self.blocked_on = blocked_on
        self.open_step_override = open_step_override
        self.closed_reason = closed_reason
        self.forced_complete = forced_complete
        self.version = version
        self.created_at = created_at
        self.updated_at = updated_at
        self.completed_at = completed_at
        self._runs: RunsIndex | None = None  # see runs(): found on the first ask, then kept

    def runs(self) -> RunsIndex:
        """Which runs are running and which hooks have failed, as a walk over ``dispatches`` would
        find them. Every write asks, and the map holds a record per run and per act ever made, so
        the answer is kept (and carried by :meth:`copy`) and :meth:`put_dispatches` keeps it
        current. A test holds the kept answer to a fresh walk after every operation
        (tests/engine/test_engine_invariants.py)."""
        runs = self._runs
        if runs is None:
            runs = self._runs = scan_runs(self.dispatches)
        return runs

    def put_dispatches(self, records: Mapping[str, DispatchState]) -> None:
        """Add or replace dispatch records (in a new map: copies keep the old one), keeping
        :meth:`runs` current: a run that starts under a new key joins the running ones, a
        running one that ends leaves them, a failure adds its hook. What the kept answer cannot
        follow (a failed record replaced, which may clear its hook; an ended run started again,
        which keeps its place in the map) is found again by a walk on the next ask."""
        dispatches = self.dispatches
        runs = self._runs
        if runs is not None:
            for key, record in records.items():
                previous = dispatches.get(key)
                was = previous.status if previous is not None else None
                now = record.status
                if was == DISPATCH_FAILED or (was == DISPATCH_OK and now != DISPATCH_OK):
                    runs = None
                    break
                if was == DISPATCH_RUNNING and now != DISPATCH_RUNNING:
                    runs = RunsIndex(tuple(k for k in runs.running if k != key), runs.failed)
                elif was is None and now == DISPATCH_RUNNING:
                    runs = RunsIndex((*runs.running, key), runs.failed)
                if now == DISPATCH_FAILED:
                    runs = RunsIndex(runs.running, runs.failed | {record.hook_id})
            self._runs = runs
        # A new map, so copies keep the old one. Copied with the proxy's copy() (the dict's own, a
        # block copy): unpacking a proxy with ** asks it key by key, ten times slower at 300 records.
        merged = dispatches.copy()
        merged.update(records)
        self.dispatches = MappingProxyType(merged)

    def copy(self) -> Instance:
        """A snapshot: new maps of entries and occurrences, the read-only dispatch map and the
        immutable records shared. Changing it never touches the original."""
        # One assignment per slot, written out: a loop of getattr/setattr over __slots__ costs four
        # times as much, and every write makes several copies (benchmarks/engine.py). A test checks
        # that every slot is copied (tests/engine/test_instance_copy.py).
        clone = Instance.__new__(Instance)
        clone.id = self.id
        clone.def_id = self.def_id
        clone.def_version = self.def_version
        clone.subject = self.subject
        clone.status = self.status
        clone.entries = dict(self.entries)
        clone.revision_seq = self.revision_seq
        clone.occurrences = dict(self.occurrences)
        clone.dispatches = self.dispatches  # read-only: shared, not copied
        clone.blocked_on = self.blocked_on
        clone.open_step_override = self.open_step_override
        clone.closed_reason = self.closed_reason
        clone.forced_complete = self.forced_complete
        clone.version = self.version
        clone.created_at = self.created_at
        clone.updated_at = self.updated_at
        clone.completed_at = self.completed_at
        clone._runs = self._runs  # the same records, so the same answers
        return clone

    def in_force_values(self) -> dict[str, Any]:
        """The raw value in force of every key in ``entries`` (retracted and empty ones left out)."""
        out: dict[str, Any] = {}
        for field_id, log in self.entries.items():
            entry = log.in_force
            if entry is not None:
                out[field_id] = entry.value
        return out

    def __repr__(self) -> str:
        return f"Instance(id={self.id!r}, def_id={self.def_id!r}, status={self.status!r}, version={self.version})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Instance):
            return NotImplemented
        return instance_to_json(self) == instance_to_json(other)


class _Unset:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET: Any = _Unset()
"""Marks a commit property as absent (leave it alone); ``None`` clears it where clearing is allowed."""


@dataclass(slots=True)
class EntryCommit:
    """What one commit does to one field's log: append revisions, then (optionally) set the cursor."""

    append: tuple[Entry, ...] = ()
    cursor: int | None = None


@dataclass(slots=True)
class Commit:
    """One atomic write to an instance. Every property is optional; ``UNSET`` leaves it alone.

    ``occurrences`` and ``dispatches`` merge key by key. For ``blocked_on``,
    ``open_step_override``, ``closed_reason`` and ``completed_at``, ``None`` clears.
    """

    entries: dict[str, EntryCommit] | None = None
    revision_seq: Any = UNSET
    occurrences: dict[str, int] | None = None
    dispatches: dict[str, DispatchState] | None = None
    status: Any = UNSET
    def_version: Any = UNSET
    closed_reason: Any = UNSET
    completed_at: Any = UNSET
    blocked_on: Any = UNSET
    open_step_override: Any = UNSET
    forced_complete: Any = UNSET

    def is_empty(self) -> bool:
        return (
            not self.entries
            and not self.occurrences
            and not self.dispatches
            and all(getattr(self, name) is UNSET for name in replaced_fields())
        )


_MERGED = frozenset({"entries", "occurrences", "dispatches"})


@functools.cache
def replaced_fields() -> tuple[str, ...]:
    """The :class:`Commit` properties a commit replaces outright (every one but the merged maps)."""
    return tuple(f.name for f in dataclasses.fields(Commit) if f.name not in _MERGED)


# --------------------------------------------------------------------------- JSON codec

ProvKey = tuple[Any, ...]
"""A provenance's interning key: (source, actor, note, and how the value arrived, as sorted pairs)."""
ProvRow = list[Any]
"""A row of the provenance table: ``[source, actor]``, ``[source, actor, note]`` or
``[source, actor, note, {kind, quote, turn, message, hook, moment}]``."""
EncodedEntry = list[Any]
"""A revision on disk: ``[seq, at, provenance_index, value?, error?]``."""


def encode_entry(entry: Entry, prov_index: dict[ProvKey, int], prov_table: list[ProvRow]) -> EncodedEntry:
    """One revision as ``[seq, at, provenance_index, value?, error?]``, interning its provenance."""
    p = entry.provenance
    key = (p.source, p.actor, p.note, p.kind, p.quote, p.turn, p.message, p.hook, p.moment, p.inputs)
    idx = prov_index.get(key)
    if idx is None:
        idx = prov_index[key] = len(prov_table)
        extras = p.extras()
        if extras:
            prov_table.append([p.source, p.actor, p.note, extras])
        else:
            prov_table.append([p.source, p.actor, p.note] if p.note is not None else [p.source, p.actor])
    if entry.retracted:
        return [entry.seq, p.timestamp, idx]
    if entry.error:
        return [entry.seq, p.timestamp, idx, entry.value, entry.error]
    return [entry.seq, p.timestamp, idx, entry.value]


def provenance_rows(prov_table: list[ProvRow]) -> list[tuple[Any, ...]]:
    """Each row of a provenance table as Provenance's arguments after the timestamp (read once per table)."""
    out = []
    for p in prov_table:
        extras: dict[str, Any] = p[3] if len(p) > 3 else {}  # older files: [source, actor, note?], no kind
        out.append(
            (
                p[2] if len(p) > 2 else None,
                extras.get("kind"),
                extras.get("quote"),
                extras.get("turn"),
                extras.get("message"),
                extras.get("hook"),
                p[0],
                p[1],
                extras.get("moment"),
                extras.get("inputs"),
            )
        )
    return out


def decode_entry(raw: EncodedEntry, prov_table: list[ProvRow], rows: list[tuple[Any, ...]] | None = None) -> Entry:
    """The inverse of :func:`encode_entry` (``rows``: :func:`provenance_rows` of the table, to read it once)."""
    seq, at, idx = raw[0], raw[1], raw[2]
    r = (rows or provenance_rows([prov_table[idx]]))[idx if rows else 0]
    prov = Provenance(r[6], r[7], at, r[0], r[1], r[2], r[3], r[4], r[5], r[8], r[9])
    if len(raw) == 3:
        return Entry(seq, None, prov, retracted=True)
    return Entry(seq, raw[3], prov, error=raw[4] if len(raw) > 4 else None)


def encode_entries(entries: dict[str, FieldLog]) -> tuple[dict[str, Any], list[ProvRow]]:
    """Encode answer logs compactly: ``({field: {"c": cursor, "r": [...]}}, provenance_table)``."""
    prov_index: dict[ProvKey, int] = {}
    prov_table: list[ProvRow] = []
    out = {
        field_id: {"c": log.cursor, "r": [encode_entry(e, prov_index, prov_table) for e in log.revisions]}
        for field_id, log in entries.items()
    }
    return out, prov_table


def decode_entries(raw: dict[str, Any], prov_table: list[ProvRow]) -> dict[str, FieldLog]:
    rows = provenance_rows(prov_table)
    return {
        field_id: FieldLog(tuple(decode_entry(r, prov_table, rows) for r in log["r"]), int(log["c"]))
        for field_id, log in raw.items()
    }


def instance_to_json(instance: Instance) -> dict[str, Any]:
    """The instance as plain JSON data; ``instance_from_json`` reverses it exactly."""
    entries, prov_table = encode_entries(instance.entries)
    d: dict[str, Any] = {
        "id": instance.id,
        "def_id": instance.def_id,
        "def_version": instance.def_version,
        "subject": instance.subject,
        "status": instance.status,
        "version": instance.version,
        "created_at": instance.created_at,
        "updated_at": instance.updated_at,
        "revision_seq": instance.revision_seq,
        "prov": prov_table,
        "entries": entries,
        "occurrences": instance.occurrences,
        "dispatches": {k: v.to_dict() for k, v in instance.dispatches.items()},
    }
    for name in ("blocked_on", "open_step_override", "closed_reason", "completed_at"):
        value = getattr(instance, name)
        if value is not None:
            d[name] = value
    if instance.forced_complete:
        d["forced_complete"] = True
    return d


def instance_from_json(d: dict[str, Any]) -> Instance:
    return instance_from_fields(d, decode_entries(d.get("entries", {}), d.get("prov", [])))


def instance_from_fields(d: Mapping[str, Any], entries: dict[str, FieldLog]) -> Instance:
    """An instance from its stored fields by name (a JSON document, or a database row as a
    mapping) and its answers, which each store decodes its own way. Fields an older store did
    not write take their defaults."""
    return Instance(
        id=d["id"],
        def_id=d["def_id"],
        def_version=d["def_version"],
        subject=d["subject"],
        status=d["status"],
        entries=entries,
        revision_seq=d.get("revision_seq", 0),
        occurrences=dict(d.get("occurrences", {})),
        dispatches={k: DispatchState.from_dict(v) for k, v in d.get("dispatches", {}).items()},
        blocked_on=d.get("blocked_on"),
        open_step_override=d.get("open_step_override"),
        closed_reason=d.get("closed_reason"),
        forced_complete=bool(d.get("forced_complete", False)),
        version=d["version"],
        created_at=d.get("created_at", ""),
        updated_at=d.get("updated_at", ""),
        completed_at=d.get("completed_at"),
    )


def highest_seq(entries: Iterable[FieldLog]) -> int:
    return max((e.seq for log in entries for e in log.revisions), default=0)
