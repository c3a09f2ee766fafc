"""Drive the prompt-toolkit chat in a pexpect pseudo-terminal (shared by the chat and goal tests).

:func:`spawn` starts ``python ARGS`` in a pseudo-terminal and :func:`close` ends it; between them a
test types (``child.send``), signals (``child.sendintr``) and reads (``child.expect``, or
:class:`Terminal`, which also answers prompt-toolkit's cursor-position requests).

pexpect itself waits a fixed time in two places, for programs these tests are not: 50 ms before
every ``send`` (for a program that turns echo off just after printing its password prompt), and
0.1 s in every ``close`` (to let the kernel update the process's status). A chat test sends a
line or a cursor-position answer dozens of times, so the first cost it a second or more of
sleeping. A test here always waits for what it answers (the prompt, the question) before typing,
and a line typed while the chat is between prompts waits in the terminal until the prompt reads
it, as for a person typing ahead; so :func:`spawn` sends at once. :func:`close` waits for a child
that has ended to be gone, however long that takes, instead of the fixed pause.
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path
from typing import Any

from clitools import ctrl_c_at_default
from fixture_project import ROOT


def spawn(args: list[str], env: dict[str, str], *, cwd: str | Path = ROOT, **options: Any) -> Any:
    """``python ARGS`` in a 30x120 pseudo-terminal (``options``: pexpect.spawn's own, to change
    the size, the timeout, ...), Ctrl-C at its default (:func:`clitools.ctrl_c_at_default`)."""
    import pexpect

    options = {"dimensions": (30, 120), "encoding": "utf-8", "timeout": 30, "use_poll": True, **options}
    child = pexpect.spawn(sys.executable, args, env=env, cwd=str(cwd), preexec_fn=ctrl_c_at_default, **options)
    child.delaybeforesend = None
    return child


def close(child: Any) -> None:
    """Close the terminal, forcing the child to end if it has not (a failed test's). A child whose
    end of output was read is waited for first, so its own exit status is the one recorded."""
    if child.flag_eof:
        deadline = time.monotonic() + 30
        while child.isalive() and time.monotonic() < deadline:
            time.sleep(0.005)
    if not child.isalive():
        child.ptyproc.delayafterclose = 0
    child.close(force=True)


class Terminal:
    """A pexpect child that answers prompt-toolkit's cursor-position requests."""

    CPR = re.escape("\x1b[6n")

    def __init__(self, child) -> None:
        self.child = child

    def expect(self, pattern: str) -> None:
        while True:
            index = self.child.expect([pattern, self.CPR])
            if index == 0:
                return
            self.child.send("\x1b[5;1R")  # "the cursor is on row 5": plenty of room below

    def say(self, text: str) -> None:
        self.child.send(text + "\r")
