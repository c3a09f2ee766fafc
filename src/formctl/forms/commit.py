"""What a commit does to an instance: pure functions every adapter applies.

A store persists instances; the meaning of a write (append revisions, move a cursor,
merge counters and dispatch records, replace the scalar properties a commit sets) is
defined here, once, next to the instance model. The runner uses the same functions to
project a write before it commits it, so the projection and the stored result agree.
"""

from __future__ import annotations

from formctl.errors import ConflictError
from formctl.forms.instance import (
    UNSET,
    Commit,
    DispatchState,
    EntryCommit,
    FieldLog,
    Instance,
    Status,
    replaced_fields,
)

__all__ = ["apply_commit", "apply_dispatch", "apply_entry_commit"]


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


def apply_commit(stored: Instance, commit: Commit, *, if_version: int, now: str) -> Instance:
    """The new instance a commit produces over ``stored``; ``stored`` itself is left untouched.

    Raises :class:`ConflictError` when ``if_version`` is not the stored version.
    """
    if stored.version != if_version:
        raise ConflictError(if_version, stored.version)
    new = _copy_with_runs(stored)
    if commit.entries:
        for field_id, change in commit.entries.items():
            new.entries[field_id] = apply_entry_commit(new.entries.get(field_id), change)
    if commit.occurrences:
        new.occurrences.update(commit.occurrences)
    if commit.dispatches:
        new.put_dispatches(commit.dispatches)
    for name in replaced_fields():
        value = getattr(commit, name)
        if value is not UNSET:
            setattr(new, name, value)
    if commit.status is not UNSET:
        new.status = Status(commit.status)  # a journal replays it as the plain word
    new.version = stored.version + 1
    new.updated_at = now
    return new


def apply_dispatch(stored: Instance, key: str, state: DispatchState, *, now: str) -> Instance:
    """The instance with one dispatch record upserted: outside compare-and-set, so no version bump."""
    new = _copy_with_runs(stored)
    new.put_dispatches({key: state})
    new.updated_at = now
    return new


def _copy_with_runs(stored: Instance) -> Instance:
    """A copy of a stored instance to change, carrying the runs it holds (:meth:`Instance.runs`,
    found now if never asked): so the stored instance each commit produces, and every copy a
    store hands out of it, answers "which runs are running, which hooks failed" without a walk
    over its records, which every write asks."""
    stored.runs()
    return stored.copy()
