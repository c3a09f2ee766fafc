"""The status bar's reads: an adapter and a runner of its own, and the store's announcements.

The terminal chat's poller thread reads the instance about once a second to redraw the status
bar and to notice a change made elsewhere (:class:`~formctl.cli.chat.terminal.TerminalChat`).
It reads through an adapter of its own, opened on first use (a plain chat never polls, so it
never opens one), so it never shares file state or a connection with a turn in progress.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from formctl.forms.adapter import FormAdapter, Watcher

if TYPE_CHECKING:  # pragma: no cover
    from formctl.forms.reading import Stamp
    from formctl.forms.runner import FormRunner

__all__ = ["StatusPoller"]


class StatusPoller:
    """``open_adapter`` opens the poller's own adapter on the chat's store; ``runner_over`` makes
    the runner that reads through it (the chat's subject and instance)."""

    def __init__(
        self, open_adapter: Callable[[], FormAdapter], runner_over: Callable[[FormAdapter], FormRunner]
    ) -> None:
        self._open_adapter = open_adapter
        self._runner_over = runner_over
        self._lock = threading.Lock()
        self._adapter: FormAdapter | None = None
        self._runner: FormRunner | None = None
        self._watcher: Watcher | None = None
        self._watched = False

    @property
    def runner(self) -> FormRunner:
        """The runner the status lines are read through (opened on first use)."""
        with self._lock:
            if self._runner is None:
                self._adapter = self._open_adapter()
                self._runner = self._runner_over(self._adapter)
            return self._runner

    def stamp(self, instance_id: str) -> Stamp | None:
        return self.runner.stamp(instance_id)

    def wait_for_change(self, instance_id: str | None, timeout: float, stop: threading.Event) -> bool:
        """Block up to ``timeout`` seconds (or until ``stop`` is set) and say whether the instance
        may have changed elsewhere, so that a read is worth making.

        A store that announces writes (:class:`~formctl.forms.adapter.Watchable`: PostgreSQL's
        LISTEN/NOTIFY) wakes this as soon as another process commits, and a quiet second costs
        no read at all. Any other store, or one whose announcements cannot be heard just now, is
        read every ``timeout`` seconds."""
        if not self._watched:
            self._watched = True
            self._watcher = self.runner.watch()
            if self._watcher is not None:
                stop.wait(0)
                return True  # read once: a write before we listened is not announced
        if self._watcher is not None:
            changed = self._watcher.wait(timeout)
            if changed is not None:
                return instance_id in changed
        stop.wait(timeout)
        return True

    def close(self) -> None:
        if self._watcher is not None:
            self._watcher.close()
        if self._adapter is not None:
            self._adapter.close()
