"""Goal programs in memory, for the life of one process: the reference :class:`GoalStore`.

Snapshots are kept as their JSON data and rebuilt on every read, so nothing a caller holds
can reach storage; definitions are immutable (frozen dataclasses and tuples), so each distinct
one is kept once, by digest, and shared by the snapshots rebuilt from it. One lock serialises
the threads that share the store.
"""

from __future__ import annotations

import threading
from typing import Any

from formctl.errors import GoalConflictError, NotFoundError
from formctl.goals.definition import Program, program_digest
from formctl.goals.state import (
    GoalScope,
    GoalState,
    Receipt,
    state_from_json,
    state_to_json,
)
from formctl.goals.store import claimed, settled

__all__ = ["MemoryGoalStore"]


class MemoryGoalStore:
    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._history: dict[str, list[tuple[dict[str, Any], Program]]] = {}
        self._programs: dict[str, Program] = {}
        self._scopes: dict[str, GoalScope] = {}
        self._receipts: dict[str, dict[str, Receipt]] = {}

    def get(self, scope: GoalScope) -> GoalState | None:
        with self._lock:
            rows = self._history.get(scope.id)
            return state_from_json(*rows[-1]) if rows else None

    def commit(self, scope: GoalScope, state: GoalState, *, if_version: int | None) -> GoalState:
        data = state_to_json(state, with_program=False)
        digest = program_digest(state.program)
        with self._lock:
            rows = self._history.setdefault(scope.id, [])
            actual = rows[-1][0]["version"] if rows else None
            if actual != if_version or state.version != (if_version or 0) + 1:
                raise GoalConflictError(if_version, actual)
            program = self._programs.setdefault(digest, state.program)
            rows.append((data, program))
            self._scopes[scope.id] = scope
            receipts = self._receipts.setdefault(scope.id, {})
            for t in state.transitions:
                receipts.setdefault(t.key, Receipt(t.key, t))
        return state_from_json(data, program)

    def history(self, scope: GoalScope) -> list[GoalState]:
        with self._lock:
            return [state_from_json(data, program) for data, program in self._history.get(scope.id, [])]

    def scopes(self, subject: str | None = None) -> list[GoalScope]:
        with self._lock:
            return [s for s in self._scopes.values() if subject is None or s.subject == subject]

    def receipts(self, scope: GoalScope) -> list[Receipt]:
        with self._lock:
            return list(self._receipts.get(scope.id, {}).values())

    def claim(self, scope: GoalScope, key: str, owner: str, *, lease_seconds: float, now: float) -> Receipt | None:
        with self._lock:
            receipts = self._receipts.get(scope.id, {})
            receipt = receipts.get(key)
            if receipt is None:
                raise NotFoundError(f'No hook receipt "{key}".')
            taken = claimed(receipt, owner, lease_seconds=lease_seconds, now=now)
            if taken is not None:
                receipts[key] = taken
            return taken

    def settle(self, scope: GoalScope, key: str, owner: str, *, ok: bool, at: str, error: str | None) -> bool:
        with self._lock:
            receipts = self._receipts.get(scope.id, {})
            done = settled(receipts.get(key), owner, ok=ok, at=at, error=error)
            if done is None:
                return False
            receipts[key] = done
            return True
