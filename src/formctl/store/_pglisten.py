"""Hearing other processes' writes to a PostgreSQL store: LISTEN on the channel that every
writing transaction NOTIFYs when it commits (the trigger is in ``_pgschema``)."""

from __future__ import annotations

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
        try:
            conn = self._listening()
            changed: set[str] = set()
            for note in conn.notifies(timeout=timeout, stop_after=1):
                changed.add(note.payload.split(" ", 1)[0])
            for note in conn.notifies(timeout=0):  # whatever else arrived meanwhile
                changed.add(note.payload.split(" ", 1)[0])
            if not changed:
                return changed
            ours = conn.execute("SELECT id FROM formctl_instances WHERE id = ANY(%s)", (sorted(changed),))
            return {row[0] for row in ours.fetchall()}
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
