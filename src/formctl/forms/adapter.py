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

Every store also says what it cannot keep (``find_instances(strict=True, damaged=[...])``),
can be asked before a chat opens whether it can record answers (``ensure_writable``), and is
closed when its owner is done (``close``). What only some stores do is a capability of its
own, a ``runtime_checkable`` protocol asked with ``isinstance`` (docs/engine.md, "The store
contract"): :class:`Serialising` (``exclusive(instance_id)``, a context manager inside which
no other writer can commit, so the runner never meets a conflict from those writers:
:mod:`formctl.forms.contention`), :class:`Maintainable` (damage, repair, check, reindex),
:class:`Watchable` (announces commits), :class:`Importing` (takes instances whole),
:class:`SharesConversations` (keeps the chats' conversations beside the instances) and
:class:`KeepsPrograms` (keeps goal programs, so it can say which item an instance serves).

The stores in ``formctl.store`` implement it; the engine never imports them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from formctl.errors import StoreError
from formctl.forms.instance import Commit, DispatchState, FieldLog, Instance, Provenance, Status

if TYPE_CHECKING:
    from collections.abc import Iterator

    from formctl.forms.reading import InstanceSummary, Scope
    from formctl.forms.search import SearchHit, SearchQuery
    from formctl.forms.stats import FormFacts

__all__ = [
    "DamageReport",
    "FormAdapter",
    "Importing",
    "Interruptible",
    "Maintainable",
    "Reporting",
    "Searchable",
    "Serialising",
    "SharesConversations",
    "Streaming",
    "Watchable",
    "Watcher",
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
        status: Status = Status.ACTIVE,
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
        strict: bool = False,
        damaged: list[StoreError] | None = None,
    ) -> list[Instance]:
        """Instances matching every given filter, most recently updated first, ``limit`` applied last.

        An instance the store cannot read back is left out, and its error appended to
        ``damaged`` when given. ``strict``: such an instance the store last saw open raises its
        :class:`StoreError` instead (a chat asks this way, rather than start a second form
        beside one it cannot read). A store that never loses an instance never does either.
        """
        ...

    def find_latest_unclosed(self, subject: str) -> Instance | None:
        """The subject's most recently updated instance that is not closed, or None.

        Not closed as :func:`formctl.forms.lifecycle.is_closed` says (not abandoned): a complete
        or stale instance counts, unlike :func:`~formctl.forms.lifecycle.is_open`, which asks
        whether a status is under way. It is what the runner calls the subject's open form
        (docs/engine.md, "Completion and closing").
        """
        ...

    def commit_instance(self, instance_id: str, commit: Commit, *, if_version: int, provenance: Provenance) -> Instance:
        """The only state write: atomic, compare-and-set on ``if_version``; returns the new snapshot."""
        ...

    def record_dispatch(self, instance_id: str, key: str, state: DispatchState, provenance: Provenance) -> None:
        """Upsert one dispatch record, outside compare-and-set. Must never make a commit fail."""
        ...

    def ensure_writable(self) -> None:
        """Raise :class:`StoreError` unless this store can record answers now (``formctl run``
        asks before the chat opens, so nobody answers questions that cannot be kept)."""
        ...

    def close(self) -> None:
        """Release what the store holds (a connection, file handles). Idempotent."""
        ...


@runtime_checkable
class Serialising(Protocol):
    """A store whose writers can hold an instance exclusively: inside ``exclusive(instance_id)``
    no other writer commits to it, so a compare-and-set write never conflicts."""

    def exclusive(self, instance_id: str) -> AbstractContextManager[object]: ...


@runtime_checkable
class DamageReport(Protocol):
    """What a store lost of one instance (``formctl store check`` and the reads show it)."""

    def describe(self) -> str: ...

    def to_dict(self) -> dict[str, Any]: ...


@runtime_checkable
class Maintainable(Protocol):
    """A store that can lose acknowledged commits (files) and so can check, repair and reindex."""

    def damage(self, instance_id: str) -> DamageReport | None:
        """What the instance's storage lost, or None; while there is damage, writes are refused."""
        ...

    def repairs(self, instance_id: str) -> tuple[dict[str, Any], ...]:
        """The losses ``repair`` accepted on this instance, oldest first."""
        ...

    def repair(self, instance_id: str, *, by: str) -> Any:
        """Accept the loss of a damaged instance (None if it is not damaged)."""
        ...

    def check(self) -> Any:
        """Read everything afresh and report what does not add up. Changes nothing."""
        ...

    def reindex(self) -> Any:
        """Rebuild whatever the store derives from its instances (an index)."""
        ...


@runtime_checkable
class Watcher(Protocol):
    """Hears the commits a store announces."""

    def wait(self, timeout: float) -> set[str] | None:
        """Block up to ``timeout`` seconds; the ids committed to meanwhile, or None when it cannot hear."""
        ...

    def close(self) -> None:
        """Stop listening (its connection is closed)."""
        ...


@runtime_checkable
class Watchable(Protocol):
    """A store that announces every commit (PostgreSQL's LISTEN/NOTIFY), so a reader can wait."""

    def watch(self) -> Watcher: ...


@runtime_checkable
class Interruptible(Protocol):
    """A store whose waits can be cut short from another thread (PostgreSQL waiting for a server
    that is away: a chat's Ctrl-C stops the wait, which ends with a ``StoreError``)."""

    def interrupt(self) -> None: ...


@runtime_checkable
class ReportsWaits(Protocol):
    """A store that says when a call starts waiting for its server (PostgreSQL: reconnecting to a
    server that is away, or a statement unanswered for a second). ``on_wait`` is called with
    where the server is, from any thread; a chat says "waiting for the database…"."""

    on_wait: Callable[[str], None] | None


@runtime_checkable
class SharesConversations(Protocol):
    """A store that keeps the chats' conversations beside the instances, each subject's apart
    (PostgreSQL), so a colleague who resumes an instance continues its chat. Without it a chat
    keeps its conversations in a folder of its own (``formctl.store.conversations``)."""

    def conversation_store(self, subject: str) -> Any:
        """The conversations of ``subject``'s instances: ``load``/``save`` by instance id."""
        ...


@runtime_checkable
class Importing(Protocol):
    """A store that takes instances whole, keeping their ids and logs (``formctl store copy``)."""

    def import_instances(self, instances: list[Instance]) -> list[tuple[str, str]]:
        """Per instance, in order: (outcome, why), as ``formctl.store.copy`` reads them."""
        ...


@runtime_checkable
class Searchable(Protocol):
    """A store that finds instances by their subject and values in force without reading them
    (``formctl find``): from an index every write keeps current (:mod:`formctl.forms.search`)."""

    def search(self, query: SearchQuery) -> list[SearchHit]:
        """The instances matching ``query``, most recently updated first, at most ``query.limit``."""
        ...


@runtime_checkable
class Streaming(Protocol):
    """A store that hands over one form's instances one at a time, oldest first, never all of
    them in memory at once (``formctl stats`` on a folder store, ``formctl export --form``)."""

    def iter_instances(self, scope: Scope) -> Iterator[Instance]: ...


@runtime_checkable
class Reporting(Protocol):
    """A store that computes ``formctl stats``' figures itself, by the rules of
    :mod:`formctl.forms.stats` (PostgreSQL: SQL aggregates, no instance read into Python)."""

    def form_facts(self, scope: Scope) -> FormFacts: ...


@runtime_checkable
class KeepsPrograms(Protocol):
    """A store that keeps goal programs beside the instances (docs/goals.md, "Form-bound items"),
    so a listing can say which program item each instance serves."""

    def items_served(self, instances: Sequence[InstanceSummary]) -> list[list[dict[str, Any]]]:
        """Per instance, in order: ``[{"program", "scope", "goal", "item", "label"}]`` for every live
        item it serves; empty lists when the store keeps no program at all."""
        ...

    def settle_bound_items(self, instance: Instance, *, actor: str, source: str) -> None:
        """``instance`` has just completed: settle the items of its subject's programs bound to its
        form (recorded as the ``form`` change, by ``actor`` through ``source``)."""
        ...
