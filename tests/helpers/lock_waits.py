"""Seeing from outside that a thread is queued on a store's lock, instead of guessing how long
it takes to get there: a test that proves a reader or a second writer waits for the lock
polls for the waiter the kernel or the server reports, and only then asserts it is still
waiting. A thread that ended meanwhile went ahead without the lock (the broken product):
the wait ends too, at once, and the test's assertion says so.

* A folder store's lock is ``flock(2)`` on ``<store>/lock``: a blocked ``flock`` is listed in
  ``/proc/locks`` on a line marked ``->`` with the file's device and inode.
* A PostgreSQL store's ``exclusive(key)`` is a session advisory lock in the adapter's lock
  space: a session waiting for one is a row of ``pg_locks`` that is not granted.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

__all__ = ["flock_waiters", "until_queued", "advisory_waiters"]


def flock_waiters(path: str) -> int:
    """How many ``flock`` requests on the file at ``path`` are blocked right now."""
    st = os.stat(path)
    where = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    with open("/proc/locks", encoding="ascii") as locks:
        return sum(1 for line in locks if "->" in line.split() and where in line.split())


def advisory_waiters(conn, key: str) -> int:
    """How many sessions wait for ``PostgresAdapter.exclusive(key)`` right now (``conn``: any
    connection to the server, in autocommit)."""
    from formctl.store.postgres import _LOCK_CLASS

    row = conn.execute(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
        " AND classid = %s::bigint::oid AND objid = (hashtext(%s)::bigint & 4294967295)::oid AND objsubid = 2",
        (_LOCK_CLASS, key),
    ).fetchone()
    return int(row[0])


def until_queued(thread: threading.Thread, queued: Callable[[], bool], timeout: float = 30) -> None:
    """Until ``queued()`` says ``thread`` waits on the lock, or ``thread`` has ended."""
    deadline = time.monotonic() + timeout
    while thread.is_alive() and not queued():
        assert time.monotonic() < deadline, f"{thread.name} neither ended nor queued in {timeout} s"
        time.sleep(0.005)
