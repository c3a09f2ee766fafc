"""The terminal chat's input history: prompt-toolkit's file history, but a line reaches the file
only after its turn has run, masked: a value given to a ``sensitive=True`` field, or a secret
(formctl.redact), never lands in the history file.

(The line is held back because when it is typed, nobody yet knows it holds a value for a
sensitive field; after the turn the value is in the store, and the masks know it. The
up-arrow still recalls the line as typed, from memory, for the rest of this run.)

Imported only by the terminal chat, which needs prompt-toolkit anyway.
"""

from __future__ import annotations

from collections.abc import Callable

from prompt_toolkit.history import FileHistory

from formctl.redact import redact

__all__ = ["MaskedFileHistory"]


class MaskedFileHistory(FileHistory):
    """``filename``'s history; ``mask`` hides what the chat's sensitive fields were given."""

    def __init__(self, filename: str, mask: Callable[[str], str]) -> None:
        super().__init__(filename)
        self._mask = mask
        self._pending: list[str] = []

    def store_string(self, string: str) -> None:
        self._pending.append(string)

    def discard(self) -> None:
        """Forget the lines not yet written (a line that is not text could not be)."""
        self._pending.clear()

    def flush(self) -> None:
        pending, self._pending = self._pending, []
        for line in pending:
            super().store_string(redact(self._mask(line)))  # and a key pasted into the chat never
