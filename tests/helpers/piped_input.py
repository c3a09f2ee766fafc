"""Seeing from outside where a piped chat is with its input, instead of sleeping on a guess.

A piped chat reads its next line only when the last one is done with: its output, and after
it the store calls that end every turn and command (the status read, what changed
elsewhere). So the last line of output does not mean the chat is idle. These read Linux's
``/proc``:

* :func:`until_reading_input`: the chat's main thread is blocked in ``read(0, ...)`` on its
  stdin (``/proc/PID/syscall``): everything before is done, and whatever happens now (a server
  stopped) meets the next line;
* :func:`until_taken`: the chat has read every byte written to its stdin pipe so far (FIONREAD
  on the pipe is 0): the line is in its hands and its turn has begun.
"""

from __future__ import annotations

import fcntl
import platform
import struct
import subprocess
import termios
import time

__all__ = ["until_reading_input", "until_taken"]

# read(2)'s number in /proc/PID/syscall, by machine
_READ = {"x86_64": "0", "aarch64": "63", "arm64": "63"}


def _reading_stdin(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/syscall", encoding="ascii") as f:
            fields = f.read().split()
        with open(f"/proc/{pid}/wchan", encoding="ascii") as f:
            wchan = f.read()
    except OSError:
        return False
    number = _READ.get(platform.machine())
    if number is None:
        return "pipe" in wchan  # an unknown machine: the kernel's name for where it sleeps
    return len(fields) > 1 and fields[0] == number and int(fields[1], 16) == 0


def until_reading_input(chat: subprocess.Popen, timeout: float = 60) -> None:
    """Until ``chat`` waits for its next line of input, blocked reading its stdin."""
    deadline = time.monotonic() + timeout
    while not _reading_stdin(chat.pid):
        assert chat.poll() is None, "the chat ended"
        assert time.monotonic() < deadline, f"the chat did not come back to its input in {timeout} s"
        time.sleep(0.005)


def until_taken(chat: subprocess.Popen, timeout: float = 30) -> None:
    """Until ``chat`` has read everything written to its stdin so far."""
    deadline = time.monotonic() + timeout
    while struct.unpack("i", fcntl.ioctl(chat.stdin.fileno(), termios.FIONREAD, b"\0\0\0\0"))[0]:
        assert time.monotonic() < deadline, f"the chat did not read its line in {timeout} s"
        time.sleep(0.005)
