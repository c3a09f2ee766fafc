"""Durable file primitives: the only place the JSON store writes, syncs and renames, and where
it reads a JSON document it saved whole (:func:`read_document`).

Every byte the store puts on disk goes through :func:`write_all`, :func:`sync` or
:func:`sync_data`, so a test can inject a full disk or an I/O error at exactly the
point where a real one would strike (``monkeypatch.setattr(_durable, "write_all", ...)``).

Files are created ``0600`` and folders ``0700`` whatever the umask leaves: answers in a
form are personal data, and a store folder is normally inside a user's home.
"""

from __future__ import annotations

import errno
import json
import os
from typing import Any

from formctl.errors import StoreError

FILE_MODE = 0o600
DIR_MODE = 0o700
TEMP_SUFFIX = ".tmp"

# The test suite turns this off for every test that does not test durability (an autouse
# fixture in tests/conftest.py): the files are still written, renamed and locked exactly as
# here, only not forced to the device. Nothing else should touch it.
fsync_enabled = True

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


def write_all(fd: int, data: bytes) -> None:
    """Write every byte (``os.write`` may write fewer than asked on a nearly full disk)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def sync(fd: int) -> None:
    """Flush a file's data and metadata to the device."""
    if fsync_enabled:
        os.fsync(fd)


def sync_data(fd: int) -> None:
    """Flush a file's data, and the metadata needed to read it back (its size), to the device.

    ``fdatasync`` skips the mtime update that ``fsync`` also forces out; for an append
    that grows the file the new size is still made durable (POSIX requires it).
    """
    if fsync_enabled:
        getattr(os, "fdatasync", os.fsync)(fd)


def sync_dir(path: str) -> None:
    """Make a folder's entries (a rename, a new file) durable."""
    if not fsync_enabled:
        return
    fd = os.open(path, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
    try:
        sync(fd)
    finally:
        os.close(fd)


def make_dir(path: str) -> bool:
    """Create ``path`` private (``0700``) if missing; True when this call created it."""
    try:
        os.mkdir(path, DIR_MODE)
    except FileExistsError:
        return False
    os.chmod(path, DIR_MODE)  # the umask may have removed bits; it never adds any, but be exact
    return True


def open_private(path: str, flags: int) -> int:
    """``os.open`` with close-on-exec and a private mode for any file it creates."""
    fd = os.open(path, flags | _O_CLOEXEC, FILE_MODE)
    return fd


def replace_atomically(path: str, data: bytes, *, durable: bool = True) -> None:
    """All-or-nothing file replacement that survives a crash at any instant.

    Write a temporary file in the same folder, flush and fsync it, ``os.replace`` it
    over ``path``, then fsync the folder so the rename itself is durable. A crash before
    the rename leaves the old file untouched (and a stray ``*.tmp`` that the store's
    ``reindex`` removes); a crash after it leaves the new file complete.

    ``durable=False`` skips both fsyncs: other processes still see the old file or the new
    one, never a mix, but a machine crash may leave either (or a torn file). For data that
    is rebuilt after a restart anyway (the index).
    """
    folder = os.path.dirname(path)
    # os.urandom, as secrets.token_hex uses, without importing secrets (and hmac, hashlib: ~5 ms) into
    # every command that writes.
    temp = f"{path}.{os.getpid()}-{os.urandom(4).hex()}{TEMP_SUFFIX}"
    fd = open_private(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        try:
            write_all(fd, data)
            if durable:
                sync(fd)
        finally:
            os.close(fd)
        os.replace(temp, path)
    except BaseException:
        remove_quietly(temp)
        raise
    if durable:
        sync_dir(folder)


def remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def os_error(exc: OSError, what: str, *, writing: bool = True) -> StoreError:
    """One clear line for an operating-system failure while the store tried to ``what``."""
    reason = exc.strerror or str(exc)
    if not writing:
        return StoreError(f"Cannot {what}: {reason}.")
    tail = " Nothing was changed; the previous version is intact."
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return StoreError(f"The form store is read-only: cannot {what} ({reason}).{tail}")
    if exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
        return StoreError(f"The disk is full: cannot {what} ({reason}).{tail}")
    return StoreError(f"Cannot {what}: {reason}.{tail}")


def read_document(path: str | os.PathLike[str], kind: str, format: int) -> dict[str, Any] | None:
    """The JSON document ``path`` holds, one formctl saved whole (a goal program's head; a
    conversation an earlier formctl saved), or None when there is no such file. A file that cannot
    be read, is not UTF-8 JSON, or is not a ``kind`` of this ``format`` is a StoreError naming it;
    the file is left as it is."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise os_error(exc, f"read {path}", writing=False) from None
    except UnicodeDecodeError as exc:
        raise StoreError(f"The {kind} file {path} is corrupt (not UTF-8 text, byte {exc.start}).") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise StoreError(f"The {kind} file {path} is corrupt (not JSON: {exc.msg}, line {exc.lineno}).") from None
    if not isinstance(data, dict) or data.get("format") != format:
        raise StoreError(f"The {kind} file {path} is not a formctl {kind} (format {format}).")
    return data
