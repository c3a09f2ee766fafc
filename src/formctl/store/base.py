"""The storage contract every form adapter keeps.

The engine holds every semantic (liveness, edges, completion) and recomputes it from
whatever the adapter hands back, so an adapter that persists an :class:`Instance`
faithfully is a correct adapter. Four invariants are the whole contract:

1. Entries append and never replace: no answer log is overwritten or truncated
   (use :func:`apply_entry_commit`, which is exactly those semantics).
2. ``version`` is compare-and-set and bumps by one on every landed commit; a stale
   ``if_version`` raises :class:`ConflictError`.
3. A commit is all-or-nothing: entries, occurrences, dispatches and status land together.
4. Reads return snapshots: callers can never mutate storage through a returned object.

Optionally an adapter offers ``exclusive(instance_id)``, a context manager inside which no
other writer can commit: the runner then runs each read, stage and commit inside it and
never meets a conflict from those writers (:mod:`formctl.forms.contention`).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from formctl.forms.errors import ConflictError, NotFoundError, ProvenanceError
from formctl.forms.instance import (
    Commit,
    DispatchState,
    EntryCommit,
    FieldLog,
    Instance,
    Provenance,
    UNSET,
    highest_seq,
)

__all__ = [
    "ConflictError",
    "FormAdapter",
    "apply_commit",
    "apply_dispatch",
    "apply_entry_commit",
    "check_provenance",
    "new_instance",
    "sort_recent_first",
]


@runtime_checkable
class FormAdapter(Protocol):
    """Storage and retrieval of form instances. Nothing more."""

    identifier: str

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
        """Assign an id; version 1; created_at = updated_at = now; revision_seq = highest seq given."""
        ...

    def get_instance(self, instance_id: str) -> Instance | None:
        """A snapshot of the instance, or None when there is no such instance (never raises for that)."""
        ...

    def find_instances(
        self,
        *,
        subject: str | None = None,
        def_id: str | None = None,
        status: str | None = None,
        limit: int | None = None,
    ) -> list[Instance]:
        """Instances matching every given filter, most recently updated first, ``limit`` applied last."""
        ...

    def find_open_instance(self, subject: str) -> Instance | None:
        """The subject's most recently updated instance that is not abandoned, or None."""
        ...

    def commit_instance(
        self, instance_id: str, commit: Commit, *, if_version: int, provenance: Provenance
    ) -> Instance:
        """The only state write: atomic, compare-and-set on ``if_version``; returns the new snapshot."""
        ...

    def record_dispatch(
        self, instance_id: str, key: str, state: DispatchState, provenance: Provenance
    ) -> None:
        """Upsert one dispatch record, outside compare-and-set. Must never make a commit fail."""
        ...


def check_provenance(provenance: Any) -> Provenance:
    """Refuse a write that does not say who made it, from where, and when."""
    if not isinstance(provenance, Provenance):
        raise ProvenanceError()
    for value in (provenance.source, provenance.actor, provenance.timestamp):
        if not isinstance(value, str):
            raise ProvenanceError()
    return provenance


def apply_entry_commit(log: FieldLog | None, change: EntryCommit) -> FieldLog:
    """Append the change's revisions to the log, then set the cursor.

    With no cursor given, the cursor moves to the last revision if anything was
    appended and stays otherwise; either way it is clamped to ``[-1, len-1]``.
    """
    revisions = log.revisions if log is not None else ()
    cursor = log.cursor if log is not None else -1
    if change.append:
        revisions = revisions + tuple(change.append)
        cursor = len(revisions) - 1
    if change.cursor is not None:
        cursor = change.cursor
    cursor = max(-1, min(cursor, len(revisions) - 1))
    return FieldLog(revisions, cursor)


_REPLACED = (
    "revision_seq",
    "status",
    "def_version",
    "closed_reason",
    "completed_at",
    "blocked_on",
    "open_step_override",
    "forced_complete",
)


def apply_commit(stored: Instance, commit: Commit, *, if_version: int, now: str) -> Instance:
    """The new instance a commit produces over ``stored``; ``stored`` itself is left untouched.

    Raises :class:`ConflictError` when ``if_version`` is not the stored version.
    Shared by every adapter so that the commit semantics live in one place.
    """
    if stored.version != if_version:
        raise ConflictError(if_version, stored.version)
    new = stored.copy()
    if commit.entries:
        for field_id, change in commit.entries.items():
            new.entries[field_id] = apply_entry_commit(new.entries.get(field_id), change)
    if commit.occurrences:
        new.occurrences.update(commit.occurrences)
    if commit.dispatches:
        new.dispatches.update(commit.dispatches)
    for name in _REPLACED:
        value = getattr(commit, name)
        if value is not UNSET:
            setattr(new, name, value)
    new.version = stored.version + 1
    new.updated_at = now
    return new


def new_instance(
    def_id: str,
    def_version: int,
    subject: str,
    *,
    entries: dict[str, FieldLog] | None = None,
    status: str = "active",
    now: str,
) -> Instance:
    """A new instance as every adapter creates it: a generated id, version 1, created = updated = now,
    ``revision_seq`` the highest seq among the given entries."""
    from formctl.store.ids import new_instance_id

    return Instance(
        id=new_instance_id(),
        def_id=def_id,
        def_version=def_version,
        subject=subject,
        status=status,
        entries=dict(entries or {}),
        revision_seq=highest_seq((entries or {}).values()),
        created_at=now,
        updated_at=now,
    )


def apply_dispatch(stored: Instance, key: str, state: DispatchState, *, now: str) -> Instance:
    """The instance with one dispatch record upserted: outside compare-and-set, so no version bump."""
    new = stored.copy()
    new.dispatches[key] = state
    new.updated_at = now
    return new


def sort_recent_first(instances: list[Instance]) -> list[Instance]:
    """Most recently updated first; ties broken by id, descending (ids grow with creation time)."""
    return sorted(instances, key=lambda i: (i.updated_at, i.id), reverse=True)


def missing(instance_id: str) -> NotFoundError:
    return NotFoundError(f'No form instance "{instance_id}".')
