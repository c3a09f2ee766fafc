"""Replacing a file atomically: the one way formctl writes a whole file outside the JSON store.

The conversation files, recorded transcripts and ``registry.toml`` are each rewritten whole.
A reader (or a crash part-way) must see the old file or the new one, never half of either: a
torn conversation locks a person out of their form, a torn registry breaks every command.

This module imports only the standard library and no other part of formctl, so every layer
may use it (a contract in pyproject.toml keeps it that way). The JSON store has its own
primitives (``formctl.store._durable``), which it needs to inject faults between each step.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["replace_text"]

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def replace_text(path: str | os.PathLike[str], text: str, *, private: bool = False) -> None:
    """Replace ``path`` with ``text`` (UTF-8): written to a temporary file beside it, flushed to
    the disk, renamed over it, and the folder synced so the rename itself survives a crash.

    ``private``: the file is ``0600`` whatever the umask (it holds answers); otherwise the umask
    decides, as for any new file. The folder must exist. On any error the temporary file is
    removed and the old file is left as it was.
    """
    target = Path(path)
    temp = target.with_name(f".{target.name}.{os.urandom(4).hex()}.tmp")  # secrets.token_hex(4), without its imports
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_CLOEXEC, 0o600 if private else 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            if private:
                os.fchmod(fh.fileno(), 0o600)
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(temp, target)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
    _sync_folder(target.parent)


def _sync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable; a platform or file system that can't is left as it is."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
