"""A child process's output read line by line in a thread of its own, so a test waits for a line
with a deadline instead of blocking on a pipe (the chat tests that stop servers and models)."""

from __future__ import annotations

import queue
import threading
import time
from typing import IO

__all__ = ["Lines"]


class Lines:
    """The lines of ``stream`` (text, as a child's piped stdout or stderr gives them), as they come."""

    def __init__(self, stream: IO[str]) -> None:
        self._queue: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def until(self, text: str, timeout: float = 60) -> list[str]:
        """The lines up to and including the first that holds ``text``; fails, saying what came, when
        the output ends or ``timeout`` seconds pass first."""
        seen: list[str] = []
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._queue.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no {text!r} within {timeout:g}s: {seen}") from None
            assert line is not None, f"the output ended before {text!r}: {seen}"
            seen.append(line)
            if text in line:
                return seen

    def rest(self, timeout: float = 60) -> list[str]:
        """Every line until the output ends."""
        seen: list[str] = []
        while (line := self._queue.get(timeout=timeout)) is not None:
            seen.append(line)
        return seen
