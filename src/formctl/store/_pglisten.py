"""Hearing other processes' writes to a PostgreSQL store: LISTEN on the channel that every
writing transaction NOTIFYs when it commits (the trigger is in ``_pgschema``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import psycopg

from formctl.errors import StoreError
from formctl.store._pgschema import CHANNEL

__all__ = ["Watcher"]


class Watcher:
    """LISTENs for the store's change notifications on a connection of its own.

    ``wait(timeout)`` returns the ids of the instances written since the last call (waiting
    up to ``timeout`` seconds for the first), or None when the server cannot be reached just
    now (the caller falls back on polling; the watcher reconnects on the next call).

    The channel is the database's, not the store's: two stores in two schemas of one database
    (two teams, or the tests' schema per test) hear each other's writes on it. So the ids heard
    are kept only when this store holds them (one indexed read on the listening connection, in
    autocommit, so no transaction stays open to hold back later notifications).
    """

    def __init__(self, connect: Callable[[], Any]) -> None:
        self._connect = connect
        self._conn: Any = None

    def _listening(self) -> Any:
        if self._conn is None or self._conn.closed or self._conn.broken:
            self.close()
            conn = self._connect()
            conn.execute(f"LISTEN {CHANNEL}")
            self._conn = conn
        return self._conn

    def wait(self, timeout: float) -> set[str] | None:
        deadline = time.monotonic() + timeout
        try:
            conn = self._listening()
            while True:
                changed: set[str] = set()
                left = max(0.0, deadline - time.monotonic())
                for note in conn.notifies(timeout=left, stop_after=1):
                    changed.add(note.payload.split(" ", 1)[0])
                for note in conn.notifies(timeout=0):  # whatever else arrived meanwhile
                    changed.add(note.payload.split(" ", 1)[0])
                if not changed:
                    return changed
                rows = conn.execute("SELECT id FROM formctl_instances WHERE id = ANY(%s)", (sorted(changed),))
                ours = {row[0] for row in rows.fetchall()}
                # Only another store's writes: not a change of ours, so the wait goes on (a
                # caller that hears "nothing changed" early would miss a write of ours that
                # arrives before its timeout is up).
                if ours or time.monotonic() >= deadline:
                    return ours
        except (StoreError, psycopg.Error):
            self.close()
            return None

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:
                pass
