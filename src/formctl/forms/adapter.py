"""The storage contract the engine needs, stated by the engine: :class:`FormAdapter`.

The engine holds every semantic (liveness, edges, completion) and recomputes it from
whatever the adapter hands back, so an adapter that persists an :class:`Instance`
faithfully is a correct adapter. Four invariants are the whole contract:

1. Entries append and never replace: no answer log is overwritten or truncated
   (use :func:`formctl.forms.commit.apply_entry_commit`, which is exactly those semantics).
2. ``version`` is compare-and-set and bumps by one on every landed commit; a stale
   ``if_version`` raises :class:`ConflictError`.
3. A commit is all-or-nothing: entries, occurrences, dispatches and status land together.
4. Reads return snapshots: callers can never mutate storage through a returned object.

Optionally an adapter offers ``exclusive(instance_id)``, a context manager inside which no
other writer can commit: the runner then runs each read, stage and commit inside it and
never meets a conflict from those writers (:mod:`formctl.forms.contention`).

The stores in ``formctl.store`` implement it; the engine never imports them.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from formctl.forms.instance import Commit, DispatchState, FieldLog, Instance, Provenance

__all__ = ["FormAdapter"]


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
        status: str = "active",  # a Status
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

    def commit_instance(self, instance_id: str, commit: Commit, *, if_version: int, provenance: Provenance) -> Instance:
        """The only state write: atomic, compare-and-set on ``if_version``; returns the new snapshot."""
        ...

    def record_dispatch(self, instance_id: str, key: str, state: DispatchState, provenance: Provenance) -> None:
        """Upsert one dispatch record, outside compare-and-set. Must never make a commit fail."""
        ...
