"""Drive the prompt-toolkit chat in a pexpect pseudo-terminal (shared by the chat and goal tests)."""

from __future__ import annotations

import re


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
