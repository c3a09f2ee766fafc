"""The storage contract goal programs need, stated here: :class:`GoalStore`.

The invariants (docs/goals.md, "Storage"):

1. ``commit(scope, state, if_version=…)`` is compare-and-set: it lands only if the stored
   version is ``if_version`` (``None``: only if the scope has no program yet), and raises
   :class:`~formctl.errors.GoalConflictError` otherwise. The runner assigns versions (one more
   than the version read), timestamps and provenance; the store checks and keeps.
2. A commit is all-or-nothing: the new head, its complete snapshot appended to the history,
   and a ``pending`` receipt for each of ``state.transitions`` land together or not at all.
3. History is append-only: ``history(scope)`` returns every committed snapshot, oldest first.
4. Receipts live outside compare-and-set (a hook's settle never conflicts with progress) and
   survive later commits. ``claim`` is atomic: at most one owner holds a receipt's lease.
5. Reads return detached snapshots.

A forms adapter offers goal storage by implementing :class:`HasGoalStore` (``goal_store()``),
so ``GoalRunner(adapter, …)`` keeps goals in the same store as the forms.
"""

from __future__ import annotations

import dataclasses
from typing import Protocol, runtime_checkable

from formctl.forms.executors import owner, owner_alive
from formctl.goals.state import (
    RECEIPT_FAILED,
    RECEIPT_OK,
    RECEIPT_PENDING,
    RECEIPT_RUNNING,
    GoalScope,
    GoalState,
    Receipt,
)

__all__ = ["GoalStore", "HasGoalStore", "claimable", "claimed", "settled"]


@runtime_checkable
class GoalStore(Protocol):
    def get(self, scope: GoalScope) -> GoalState | None:
        """The newest snapshot, or None before the program starts."""
        ...

    def commit(self, scope: GoalScope, state: GoalState, *, if_version: int | None) -> GoalState:
        """Compare-and-set ``state`` (whose version is ``if_version + 1``, or 1) as the new head."""
        ...

    def history(self, scope: GoalScope) -> list[GoalState]:
        """Every committed snapshot, oldest first."""
        ...

    def scopes(self, subject: str | None = None) -> list[GoalScope]:
        """The scopes that have a program (of ``subject``, when given)."""
        ...

    def receipts(self, scope: GoalScope) -> list[Receipt]:
        """Every hook receipt of the scope, oldest transition first."""
        ...

    def claim(self, scope: GoalScope, key: str, owner: str, *, lease_seconds: float, now: float) -> Receipt | None:
        """Take the receipt ``key`` for ``owner`` (status running, attempts + 1, a lease until
        ``now + lease_seconds``) if :func:`claimable`; None when it is not."""
        ...

    def settle(self, scope: GoalScope, key: str, owner: str, *, ok: bool, at: str, error: str | None) -> bool:
        """Record the run's outcome, only if ``owner`` still holds the receipt (fencing): False if not."""
        ...


@runtime_checkable
class HasGoalStore(Protocol):
    """A forms adapter that keeps goal programs too."""

    def goal_store(self) -> GoalStore: ...


def claimable(receipt: Receipt, *, now: float) -> bool:
    """May an owner take this receipt now? Pending and failed ones, yes; done ones never; a
    running one only when its lease ran out or its owner's process is gone (same machine:
    the pid no longer exists, as for the forms' executor records; another machine's owner is
    trusted until its lease ends)."""
    if receipt.status in (RECEIPT_PENDING, RECEIPT_FAILED):
        return True
    if receipt.status == RECEIPT_RUNNING:
        if receipt.lease_until < now:
            return True
        if receipt.owner == owner():
            return False  # this process's own run, in flight in another thread
        return not owner_alive(receipt.owner)
    return False


# A receipt's two moves, decided here once; each store only reads the receipt and writes the result
# under its own lock or transaction (invariant 4).


def claimed(receipt: Receipt, holder: str, *, lease_seconds: float, now: float) -> Receipt | None:
    """The receipt as ``holder`` holds it for ``lease_seconds`` from ``now``, one more attempt
    counted; None when it may not be taken now (:func:`claimable`)."""
    if not claimable(receipt, now=now):
        return None
    return dataclasses.replace(
        receipt, status=RECEIPT_RUNNING, attempts=receipt.attempts + 1, owner=holder, lease_until=now + lease_seconds
    )


def settled(receipt: Receipt | None, holder: str, *, ok: bool, at: str, error: str | None) -> Receipt | None:
    """The receipt as its run ended (done or failed, the lease released); None when ``holder``
    does not hold it: no such receipt, not running, or its lease was taken over meanwhile."""
    if receipt is None or receipt.owner != holder or receipt.status != RECEIPT_RUNNING:
        return None
    return dataclasses.replace(
        receipt, status=RECEIPT_OK if ok else RECEIPT_FAILED, at=at, error=error, lease_until=0.0
    )
