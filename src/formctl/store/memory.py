"""An in-memory adapter: the reference implementation of the store contract.

Short enough to read end to end before writing another adapter. Snapshots share the
immutable revision and dispatch records and copy only the maps, so a read costs
O(fields) however long the answer logs grow.

It offers the optional ``exclusive`` (:class:`formctl.forms.adapter.Serialising`), as the JSON
and PostgreSQL stores do: threads sharing one adapter are the only writers that can race here,
and without it two threads could both find no open instance of a form and both start one
(docs/store.md, "Two starts at once"). One lock serves every key, the one commits already
take: work under it is in memory, so nothing is gained by locking keys apart.

``create_instance`` and ``find_instances`` are :class:`~formctl.store.base.InstanceStore`'s, as
in every store: a store keeps a new instance (``_insert``) and finds a listing (``_find``).
"""

from __future__ import annotations

import threading
import time
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from formctl.errors import StoreError
from formctl.forms.commit import apply_commit, apply_dispatch
from formctl.forms.instance import Commit, DispatchState, Instance, Provenance, now_iso
from formctl.forms.lifecycle import is_closed
from formctl.store.base import InstanceStore, check_provenance, missing, sort_recent_first

if TYPE_CHECKING:
    from collections.abc import Sequence

    from formctl.forms.reading import InstanceSummary, Listing
    from formctl.store.goals_memory import MemoryGoalStore


class MemoryAdapter(InstanceStore):
    """Keeps instances in a dict for the life of the process."""

    def __init__(self, identifier: str | None = None) -> None:
        self.identifier = identifier or f"in-memory-forms-{int(time.time() * 1000)}"
        self._instances: dict[str, Instance] = {}
        self._lock = threading.RLock()  # commits from threads sharing the adapter land one at a time
        self._goals: MemoryGoalStore | None = None

    def _insert(self, instance: Instance) -> Instance:
        self._instances[instance.id] = instance
        return instance.copy()

    def get_instance(self, instance_id: str) -> Instance | None:
        stored = self._instances.get(instance_id)
        return stored.copy() if stored is not None else None

    def _find(self, listing: Listing, *, strict: bool, damaged: list[StoreError] | None) -> list[Instance]:
        """Every instance ``listing`` takes, most recent first. ``strict`` and ``damaged`` ask
        about instances that cannot be read back; a dict never loses one, so neither ever applies."""
        rows = sort_recent_first([i for i in self._instances.values() if listing.admits(i)])
        if listing.limit:
            rows = rows[: listing.limit]
        return [i.copy() for i in rows]

    def ensure_writable(self) -> None:
        """Always writable: the dict lives as long as the process."""

    def close(self) -> None:
        """Nothing to release: the instances stay readable until the adapter is dropped."""

    def find_latest_unclosed(self, subject: str) -> Instance | None:
        """The subject's most recently updated instance that is not closed (complete ones count)."""
        rows = [i for i in self._instances.values() if i.subject == subject and not is_closed(i)]
        if not rows:
            return None
        return sort_recent_first(rows)[0].copy()

    def commit_instance(self, instance_id: str, commit: Commit, *, if_version: int, provenance: Provenance) -> Instance:
        check_provenance(provenance)
        with self._lock:
            stored = self._instances.get(instance_id)
            if stored is None:
                raise missing(instance_id)
            new = apply_commit(stored, commit, if_version=if_version, now=now_iso())
            self._instances[instance_id] = new
        return new.copy()

    def record_dispatch(self, instance_id: str, key: str, state: DispatchState, provenance: Provenance) -> None:
        check_provenance(provenance)
        with self._lock:
            stored = self._instances.get(instance_id)
            if stored is None:
                raise missing(instance_id)
            self._instances[instance_id] = apply_dispatch(stored, key, state, now=now_iso())

    def exclusive(self, key: str) -> AbstractContextManager[object]:
        """Hold the adapter's lock across a whole read, stage and commit of ``key`` (an instance
        id, or ``start:<form>:<subject>`` around a start's look and create). Commits and dispatch
        records of other threads wait for it; reads do not (they return copies). Re-entrant, so
        the commit made inside it by the same thread goes straight through. The lock itself is
        the context manager: every write takes it twice, and a generator around it would cost
        more than the in-memory commit."""
        return self._lock

    def goal_store(self) -> MemoryGoalStore:
        """Goal programs kept beside these instances, for as long as this adapter lives (docs/goals.md)."""
        if self._goals is None:
            from formctl.store.goals_memory import MemoryGoalStore

            self._goals = MemoryGoalStore()
        return self._goals

    def items_served(self, instances: Sequence[InstanceSummary]) -> list[list[dict[str, Any]]]:
        """Which program item each instance serves (:class:`~formctl.forms.adapter.KeepsPrograms`)."""
        from formctl.goals.serving import items_served_each

        return items_served_each(self.goal_store(), instances)

    def settle_bound_items(self, instance: Instance, *, actor: str, source: str) -> None:
        """Settle the program items bound to a form ``instance`` just completed (:class:`~formctl.forms.adapter.KeepsPrograms`)."""
        from formctl.goals.serving import settle_bound

        settle_bound(self, instance.subject, instance.def_id, actor=actor, source=source)
