"""How a write waits out other writers of the same instance.

Two mechanisms, the first preferred:

* An adapter that can serialise a whole read, stage and commit offers
  ``exclusive(instance_id)``, a context manager (the JSON store holds its file lock). Each
  attempt then runs inside it, re-reading the instance first, so no other writer can
  commit in between: a local writer never meets a conflict; under contention writers
  queue on the lock.
* Otherwise (or when a writer elsewhere still got in first) a compare-and-set conflict is
  retried after a pause that doubles from a few milliseconds, with jitter so that writers
  that collided do not collide again in step, for up to :data:`PATIENCE` seconds in all.
  Then the :class:`~formctl.errors.ConflictError` goes to the caller.
"""

from __future__ import annotations

import random
import time
import weakref
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from formctl.forms.adapter import Serialising

__all__ = ["PATIENCE", "Attempts", "Exclusive", "exclusive_of", "serialised"]

PATIENCE = 2.0
"""Seconds a write keeps retrying conflicts before it gives up."""

_FIRST_PAUSE = 0.004
_LONGEST_PAUSE = 0.25

clock: Callable[[], float] = time.monotonic
sleep: Callable[[float], None] = time.sleep
"""Looked up on every use, so that a test can run the pauses on a simulated clock."""

Exclusive = Callable[[str], AbstractContextManager[object]]
"""An adapter's ``exclusive``: the lock one attempt runs inside."""


class Attempts:
    """The attempts of one write, run as::

        attempts = Attempts(exclusive_of(adapter), instance_id)
        while True:
            with attempts.hold():
                ...  # read (inside the lock: re-read), build, commit; return on success
                ...  # on a conflict: re-raise when expired(), else fall through
            attempts.pause()

    Each attempt runs inside the adapter's ``exclusive`` lock when it offers one, and the pause
    comes between attempts, outside the lock. A loop, not a generator the body runs inside:
    every write makes two of these, and a generator's close and a ``contextmanager`` around
    the lock cost more than the in-memory commit they wrap (benchmarks/engine.py)."""

    __slots__ = ("_exclusive", "_instance_id", "_deadline", "_pauses")

    def __init__(
        self,
        exclusive: Exclusive | None,
        instance_id: str,
        *,
        patience: float = PATIENCE,
    ) -> None:
        self._exclusive = exclusive
        self._instance_id = instance_id
        self._deadline = clock() + patience
        self._pauses = 0

    @property
    def serialised(self) -> bool:
        """True when each attempt holds the adapter's lock (re-read the instance inside it)."""
        return self._exclusive is not None

    def expired(self) -> bool:
        return clock() >= self._deadline

    def hold(self) -> AbstractContextManager[object]:
        """What one attempt runs inside: the adapter's lock on the instance, or nothing."""
        return self._exclusive(self._instance_id) if self._exclusive is not None else _NO_LOCK

    def pause(self) -> None:
        """Wait before the next attempt: a few milliseconds, doubling, jittered, never past the
        deadline."""
        remaining = self._deadline - clock()
        if remaining <= 0:
            return
        pause = min(_LONGEST_PAUSE, _FIRST_PAUSE * 2**self._pauses) * (0.5 + random.random())
        self._pauses += 1
        sleep(min(pause, remaining))


_NO_LOCK = nullcontext()


def exclusive_of(adapter: Any) -> Exclusive | None:
    """The adapter's ``exclusive``, when it offers one (a write asks once, for all its attempts)."""
    return adapter.exclusive if _serialising(adapter) else None


def serialised(adapter: Any, key: str) -> AbstractContextManager[Any]:
    """The adapter's ``exclusive`` lock on ``key`` (any string, not only an instance id), or no
    lock when it offers none. ``start`` holds it on ``start:<form>:<subject>`` around "is one
    open already?" and the create, so two starts of one form for one subject, in two processes
    or on two machines, cannot both create an instance (docs/store.md, "Two starts at once")."""
    return adapter.exclusive(key) if _serialising(adapter) else nullcontext()


_SERIALISING: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()


def _serialising(adapter: Any) -> bool:
    """The adapter offers :class:`~formctl.forms.adapter.Serialising`. Asked once per adapter
    object (``isinstance`` against a protocol costs microseconds, and every write asks); per
    object, not per class, because a wrapper that forwards attributes offers what it wraps."""
    try:
        known = _SERIALISING.get(adapter)
    except TypeError:  # not weakly referenceable: ask every time
        return isinstance(adapter, Serialising)
    if known is None:
        known = _SERIALISING[adapter] = isinstance(adapter, Serialising)
    return known
