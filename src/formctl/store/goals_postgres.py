"""Goal programs in PostgreSQL, beside the forms' tables (same database, same DSN).

Tables (created by ``formctl store init`` with the others, :mod:`formctl.store._pgschema`;
all names start ``formctl_goal``):

* ``formctl_goal_heads``: one row per scope, the newest complete snapshot (definitions
  included, so ``inspect()`` is one indexed row) and its version;
* ``formctl_goal_history``: one row per version, never updated or deleted (a trigger refuses
  both): the snapshot without its definitions, which it names by digest;
* ``formctl_goal_programs``: each distinct definition of a scope once, by digest;
* ``formctl_goal_receipts``: one row per transition, the hook's receipt.

A commit is one transaction at READ COMMITTED: ``SELECT … FOR UPDATE`` of the head row (or an
``INSERT … ON CONFLICT DO NOTHING`` for a start) makes the version check and the write
atomic against other writers of the scope on any machine; the history row, the definition
and the transitions' receipts are inserted in the same transaction. A claim or settle locks
only its receipt row. Why the history names definitions by digest: docs/goals.md, "Storage".
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from formctl.errors import GoalConflictError, NotFoundError, StoreError
from formctl.goals.definition import Program, program_digest, program_from_json, program_to_json
from formctl.goals.state import (
    GoalScope,
    GoalState,
    Receipt,
    state_from_json,
    state_to_json,
)
from formctl.goals.store import claimed, settled
from formctl.store import _pgschema
from formctl.store._pgconn import _reason, connect, connect_failure, connect_options, mask_dsn, require_psycopg

__all__ = ["PostgresGoalStore"]

T = TypeVar("T")


def _dumps(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


class PostgresGoalStore:
    """A :class:`~formctl.goals.store.GoalStore` on the database ``dsn`` names."""

    def __init__(self, dsn: str, *, connect_timeout: int = 10) -> None:
        require_psycopg()
        self.dsn = dsn
        self.display = mask_dsn(dsn)
        self._timeout = connect_timeout
        self._conn: Any = None
        self._pid = 0
        self._ready = False
        self._mutex = threading.RLock()
        self._programs: dict[str, Program] = {}  # definitions are immutable: parsed once per digest

    def __repr__(self) -> str:
        return f"PostgresGoalStore({self.display!r})"

    def close(self) -> None:
        with self._mutex:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None

    # ------------------------------------------------------------------ connection

    def _connection(self) -> Any:
        import psycopg

        if self._conn is not None and (self._pid != os.getpid() or self._conn.closed or self._conn.broken):
            self._conn = None  # a forked child's or a dead one: never reused
            self._ready = False
        if self._conn is None:
            connect_options(self.dsn, connect_timeout=self._timeout)  # a malformed DSN, in our words, first
            try:
                self._conn = connect(self.dsn, connect_timeout=self._timeout)
            except (psycopg.Error, ValueError) as exc:  # ValueError: a NUL in the string
                raise StoreError(connect_failure(self.dsn, exc)) from None
            self._pid = os.getpid()
        return self._conn

    def _tables(self, conn: Any) -> None:
        """Refuse, in one line that says what to run, unless the tables are at this formctl's
        schema: ``formctl store init`` creates them, nothing else does (``_pgschema``)."""
        if self._ready:
            return
        with conn.cursor() as cur:
            found, path = _pgschema.version(cur)
        refused = _pgschema.refusal(self.display, found, path)
        if refused is not None:
            raise StoreError(refused)
        self._ready = True

    def _run(self, work: Callable[[Any], T], *, write: bool) -> T:
        """``work(cursor)`` in one transaction; a connection found broken before anything was
        written is replaced and the work tried once more. Refused in one line unless the
        store's tables are at this formctl's schema (:meth:`_tables`)."""
        import psycopg

        with self._mutex:
            for attempt in (1, 2):
                conn = self._connection()
                try:
                    self._tables(conn)
                    with conn.transaction(), conn.cursor() as cur:
                        return work(cur)
                except psycopg.OperationalError as exc:
                    if attempt == 2 or not conn.broken:
                        raise StoreError(
                            f"The PostgreSQL goal store at {self.display} failed: {_reason(exc, self.dsn)}"
                        ) from None
                    self._conn = None
                    self._ready = False
                except psycopg.errors.InsufficientPrivilege as exc:
                    raise StoreError(_pgschema.not_allowed(self.display, _reason(exc, self.dsn), write)) from None
                except psycopg.Error as exc:  # every message built from the driver's text is scrubbed
                    what = "write to" if write else "read"
                    raise StoreError(
                        f"Cannot {what} the goal programs in {self.display}: {_reason(exc, self.dsn)}"
                    ) from None
            raise AssertionError("unreachable")

    # ------------------------------------------------------------------ the contract

    def get(self, scope: GoalScope) -> GoalState | None:
        def read(cur: Any) -> Any:
            cur.execute("SELECT digest, state FROM formctl_goal_heads WHERE scope_id = %s", (scope.id,))
            return cur.fetchone()

        row = self._run(read, write=False)
        if row is None:
            return None
        digest, state = row
        program = self._programs.get(digest)
        if program is None:
            program = self._programs[digest] = program_from_json(state["program"])
        return state_from_json(state, program)

    def commit(self, scope: GoalScope, state: GoalState, *, if_version: int | None) -> GoalState:
        digest = program_digest(state.program)
        head = state_to_json(state)
        values = (state.version, digest, _dumps(head), state.updated_at)

        def write(cur: Any) -> None:
            if state.version != (if_version or 0) + 1:
                raise GoalConflictError(if_version, state.version - 1)
            if if_version is None:
                cur.execute(f"{_INSERT_HEAD} ON CONFLICT (scope_id) DO NOTHING", (*_scope_columns(scope), *values))
                if cur.rowcount != 1:
                    cur.execute("SELECT version FROM formctl_goal_heads WHERE scope_id = %s", (scope.id,))
                    row = cur.fetchone()
                    raise GoalConflictError(None, row[0] if row else None)
            else:
                found = _locked_head_version(cur, scope)
                if found != if_version:
                    raise GoalConflictError(if_version, found)
                cur.execute(_UPDATE_HEAD, (*values, scope.id))
            _append_version(cur, scope, state, digest)

        self._run(write, write=True)
        return state_from_json(head)

    def history(self, scope: GoalScope) -> list[GoalState]:
        def read(cur: Any) -> tuple[list[Any], list[Any]]:
            cur.execute("SELECT digest, definition FROM formctl_goal_programs WHERE scope_id = %s", (scope.id,))
            programs = cur.fetchall()
            cur.execute(
                "SELECT digest, state FROM formctl_goal_history WHERE scope_id = %s ORDER BY version", (scope.id,)
            )
            return programs, cur.fetchall()

        programs, rows = self._run(read, write=False)
        definitions: dict[str, Program] = {d: self._programs.get(d) or program_from_json(p) for d, p in programs}
        return [state_from_json(state, definitions[digest]) for digest, state in rows]

    def scopes(self, subject: str | None = None) -> list[GoalScope]:
        def read(cur: Any) -> list[Any]:
            if subject is None:
                cur.execute("SELECT subject, key, agent FROM formctl_goal_heads ORDER BY subject, key")
            else:
                cur.execute(
                    "SELECT subject, key, agent FROM formctl_goal_heads WHERE subject = %s ORDER BY key", (subject,)
                )
            return list(cur.fetchall())

        return [GoalScope(s, k, a) for s, k, a in self._run(read, write=False)]

    def receipts(self, scope: GoalScope) -> list[Receipt]:
        def read(cur: Any) -> list[Any]:
            cur.execute("SELECT receipt FROM formctl_goal_receipts WHERE scope_id = %s ORDER BY ord", (scope.id,))
            return list(cur.fetchall())

        return [Receipt.from_json(r[0]) for r in self._run(read, write=False)]

    def _locked_receipt(self, cur: Any, scope: GoalScope, key: str) -> dict[str, Any] | None:
        cur.execute(
            "SELECT receipt FROM formctl_goal_receipts WHERE scope_id = %s AND key = %s FOR UPDATE", (scope.id, key)
        )
        row = cur.fetchone()
        return dict(row[0]) if row is not None else None

    def _put_receipt(self, cur: Any, scope: GoalScope, key: str, data: dict[str, Any]) -> None:
        cur.execute(
            "UPDATE formctl_goal_receipts SET receipt = %s WHERE scope_id = %s AND key = %s",
            (_dumps(data), scope.id, key),
        )

    def claim(self, scope: GoalScope, key: str, owner: str, *, lease_seconds: float, now: float) -> Receipt | None:
        def write(cur: Any) -> Receipt | None:
            data = self._locked_receipt(cur, scope, key)
            if data is None:
                raise NotFoundError(f'No hook receipt "{key}".')
            taken = claimed(Receipt.from_json(data), owner, lease_seconds=lease_seconds, now=now)
            if taken is not None:
                self._put_receipt(cur, scope, key, taken.to_json())
            return taken

        return self._run(write, write=True)

    def settle(self, scope: GoalScope, key: str, owner: str, *, ok: bool, at: str, error: str | None) -> bool:
        def write(cur: Any) -> bool:
            data = self._locked_receipt(cur, scope, key)
            done = settled(Receipt.from_json(data) if data is not None else None, owner, ok=ok, at=at, error=error)
            if done is None:
                return False
            self._put_receipt(cur, scope, key, done.to_json())
            return True

        return self._run(write, write=True)

    # ------------------------------------------------------------------ formctl store copy

    def import_history(
        self, scope: GoalScope, states: list[GoalState], receipts: list[Receipt], *, if_version: int | None
    ) -> None:
        """Append ``states`` (versions ``if_version + 1`` on, each exactly as given) to the scope's
        history, move the head to the last of them, and put ``receipts`` as given, in one
        transaction (``formctl store copy``). Refused (:class:`GoalConflictError`) unless the
        head is still at ``if_version``."""
        if any(st.version != (if_version or 0) + n + 1 for n, st in enumerate(states)):
            raise GoalConflictError(if_version, states[0].version - 1 if states else None)
        order = {t.key: _receipt_order(st, n) for st in states for n, t in enumerate(st.transitions)}

        def write(cur: Any) -> None:
            found = _locked_head_version(cur, scope)
            if found != if_version:
                raise GoalConflictError(if_version, found)
            if states:
                last = states[-1]
                values = (last.version, program_digest(last.program), _dumps(state_to_json(last)), last.updated_at)
                if found is None:
                    cur.execute(_INSERT_HEAD, (*_scope_columns(scope), *values))
                else:
                    cur.execute(_UPDATE_HEAD, (*values, scope.id))
            for state in states:
                _append_version(cur, scope, state, program_digest(state.program))
            for receipt in receipts:
                cur.execute(
                    "INSERT INTO formctl_goal_receipts (scope_id, key, ord, receipt) VALUES (%s, %s, %s, %s) "
                    "ON CONFLICT (scope_id, key) DO UPDATE SET receipt = EXCLUDED.receipt",
                    (
                        scope.id,
                        receipt.key,
                        order.get(receipt.key, receipt.transition.version * 1000),
                        _dumps(receipt.to_json()),
                    ),
                )

        if states or receipts:
            self._run(write, write=True)


_INSERT_HEAD = (
    "INSERT INTO formctl_goal_heads (scope_id, subject, key, agent, version, digest, state, updated_at) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
)
_UPDATE_HEAD = (
    "UPDATE formctl_goal_heads SET version = %s, digest = %s, state = %s, updated_at = %s WHERE scope_id = %s"
)


def _scope_columns(scope: GoalScope) -> tuple[str, str, str, str | None]:
    return (scope.id, scope.subject, scope.key, scope.agent)


def _locked_head_version(cur: Any, scope: GoalScope) -> int | None:
    """The head's version, its row locked until the transaction ends; None when the scope has none."""
    cur.execute("SELECT version FROM formctl_goal_heads WHERE scope_id = %s FOR UPDATE", (scope.id,))
    row = cur.fetchone()
    return row[0] if row else None


def _receipt_order(state: GoalState, n: int) -> int:
    """Where the receipt of the ``n``-th transition of ``state`` sorts: by version, then in turn."""
    return state.version * 1000 + n


def _append_version(cur: Any, scope: GoalScope, state: GoalState, digest: str) -> None:
    """One version's history row, its definition (once per digest) and a pending receipt for
    each of its transitions (one already there is kept)."""
    cur.execute(
        "INSERT INTO formctl_goal_programs (scope_id, digest, definition) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
        (scope.id, digest, _dumps(program_to_json(state.program))),
    )
    cur.execute(
        "INSERT INTO formctl_goal_history (scope_id, version, digest, state) VALUES (%s, %s, %s, %s)",
        (scope.id, state.version, digest, _dumps(state_to_json(state, with_program=False))),
    )
    for n, t in enumerate(state.transitions):
        cur.execute(
            "INSERT INTO formctl_goal_receipts (scope_id, key, ord, receipt) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT DO NOTHING",
            (scope.id, t.key, _receipt_order(state, n), _dumps(Receipt(t.key, t).to_json())),
        )
