"""The store lock: ``flock(2)`` on ``<dir>/lock``, writers exclusive, readers shared.

One lock for the whole store folder serialises writers across processes on one machine
(compare-and-set holds from reading the current version to the fsync) and keeps readers
from seeing a compaction half done. The kernel releases it when a process dies, so a
killed writer never leaves the store locked.

Within a process, threads sharing one adapter are serialised by a re-entrant mutex, and
a thread that already holds the lock may take it again (a write inside
:meth:`StoreLock.held` ``exclusive=True``, as ``JsonFileAdapter.exclusive`` does).
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from formctl.errors import StoreError
from formctl.store import _durable

__all__ = ["StoreLock"]


class StoreLock:
    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.path = os.path.join(directory, "lock")
        self._mutex = threading.RLock()
        self._fd: int | None = None
        self._pid = 0
        self._held: str | None = None

    @contextmanager
    def held(self, *, exclusive: bool, for_write: bool = False) -> Iterator[None]:
        """Hold the lock (and the mutex). ``for_write``: the lock file must exist or be created."""
        with self._mutex:
            if self._held is not None:
                if exclusive and self._held != "ex":
                    raise RuntimeError("JsonFileAdapter: cannot upgrade a shared lock")
                yield
                return
            fd = self._file(required=for_write)
            if fd is not None:
                fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            self._held = "ex" if exclusive else "sh"
            try:
                yield
            finally:
                self._held = None
                if fd is not None:
                    fcntl.flock(fd, fcntl.LOCK_UN)

    def close(self) -> None:
        with self._mutex:
            if self._fd is not None and self._pid == os.getpid():
                os.close(self._fd)
            self._fd = None

    def _file(self, *, required: bool) -> int | None:
        """The lock file's descriptor. None (only when not ``required``) for a store that no one
        can have written: its lock file does not exist and cannot be created."""
        if self._fd is not None:
            if self._pid == os.getpid():
                return self._fd
            # A forked child shares the parent's open file description, and with it the
            # parent's flock: drop our reference and open a description of our own.
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = None
        fd: int | None = None
        try:
            fd = _durable.open_private(self.path, os.O_RDWR | os.O_CREAT)
        except FileNotFoundError:
            if required:
                raise StoreError(f"The form store {self.directory} does not exist.") from None
        except OSError as exc:
            try:
                fd = _durable.open_private(self.path, os.O_RDONLY)  # flock works read-only too
            except FileNotFoundError:
                if required:
                    raise _durable.os_error(exc, f"create {self.path}") from None
            except OSError:
                raise _durable.os_error(exc, f"open {self.path}", writing=required) from None
        if fd is not None:
            self._fd, self._pid = fd, os.getpid()
        return fd
