"""A deadline on every statement, kept by the client, and a word when one is slow.

The server ends a statement that runs past ``statement_timeout`` (set by
:func:`~formctl.store._pgconn.connect_options`), but a server that cannot run at all (its
processes stopped, a host whose kernel still acknowledges packets while the database does not
answer) ends nothing, and libpq waits on its socket for ever: a chat turn hung with no output
until the server came back. So every statement on a formctl connection is watched here: past
its limit the connection's socket is shut down, which ends the wait at once with psycopg's
"connection lost" error (the adapter then says it in one line, and reconnects next time, as
after any dropped connection). A statement that has waited a second calls ``on_wait`` once, so
the chat can say it is waiting for the database rather than sit silent.

One watchdog thread for the process, started when first needed; each statement costs a dict
insert and delete. Waits that bound themselves (``Connection.notifies(timeout=...)``, the
listening connection's) are left alone.
"""

from __future__ import annotations

import functools
import os
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["bounded_connection"]

SLOW = 1.0  # seconds a statement waits before ``on_wait`` hears of it
_TICK = 0.1


def bounded_connection(dsn: str, options: dict[str, Any], *, limit: float, on_wait: Callable[[], None] | None) -> Any:
    """``psycopg.connect(dsn, autocommit=True, **options)``, whose statements end by ``limit`` seconds."""
    conn = _bounded_class().connect(dsn, autocommit=True, **options)
    conn.formctl_limit = limit
    conn.formctl_on_wait = on_wait
    return conn


@functools.cache
def _bounded_class() -> Any:
    import psycopg

    class Bounded(psycopg.Connection):
        """A connection whose statements are watched (see the module's docstring)."""

        formctl_limit: float = 0.0
        formctl_on_wait: Callable[[], None] | None = None

        def wait(self, gen: Any, *args: Any, **kwargs: Any) -> Any:
            if (
                kwargs.get("timeout") is not None
                or getattr(gen, "__name__", "") == "notifies"
                or not self.formctl_limit
            ):
                return super().wait(gen, *args, **kwargs)  # a wait with its own end (LISTEN's)
            watched = _WATCH.begin(self)
            try:
                return super().wait(gen, *args, **kwargs)
            except psycopg.OperationalError:
                if watched.expired:
                    raise psycopg.OperationalError(
                        f"the server did not answer within {self.formctl_limit:g}s (it may be frozen or cut off)"
                    ) from None
                raise
            finally:
                _WATCH.end(watched)

    return Bounded


class _Watched:
    __slots__ = ("conn", "ends", "slow_at", "expired")

    def __init__(self, conn: Any) -> None:
        now = time.monotonic()
        self.conn = conn
        self.ends = now + conn.formctl_limit
        self.slow_at: float | None = now + SLOW if conn.formctl_on_wait is not None else None
        self.expired = False


class _Watchdog:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._watched: dict[int, _Watched] = {}
        self._thread: threading.Thread | None = None

    def begin(self, conn: Any) -> _Watched:
        watched = _Watched(conn)
        with self._lock:
            self._watched[id(watched)] = watched
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="formctl-pg-watchdog", daemon=True)
                self._thread.start()
        return watched

    def end(self, watched: _Watched) -> None:
        with self._lock:
            self._watched.pop(id(watched), None)

    def _run(self) -> None:
        while True:
            time.sleep(_TICK)
            now = time.monotonic()
            with self._lock:
                due = [
                    w for w in self._watched.values() if now >= w.ends or (w.slow_at is not None and now >= w.slow_at)
                ]
            for watched in due:
                if watched.slow_at is not None and now >= watched.slow_at:
                    watched.slow_at = None
                    _say(watched.conn.formctl_on_wait)
                if now >= watched.ends and not watched.expired:
                    watched.expired = True
                    _cut(watched.conn)


def _say(on_wait: Callable[[], None] | None) -> None:
    try:
        if on_wait is not None:
            on_wait()
    except Exception:  # a listener's fault must not stop the watch over every other statement
        pass


def _cut(conn: Any) -> None:
    """Shut the connection's socket down both ways: the statement's wait ends at once."""
    try:
        fd = os.dup(conn.pgconn.socket)
    except Exception:  # already closed
        return
    with socket.socket(fileno=fd) as sock:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


_WATCH = _Watchdog()
