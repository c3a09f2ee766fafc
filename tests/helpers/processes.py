"""Processes for tests about dead owners: the pid of a process that has exited."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

# A process that exits at once: true(1) where there is one (no Python start-up to pay for).
SHORT_LIVED = [path] if (path := shutil.which("true")) else [sys.executable, "-c", "pass"]


def dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    for _ in range(5):
        child = subprocess.Popen(SHORT_LIVED)
        child.wait()
        try:
            os.kill(child.pid, 0)
        except ProcessLookupError:
            return child.pid
    pytest.skip("could not find a pid that is not running")
