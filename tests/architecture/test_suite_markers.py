"""The suite's own rule (conftest ``_processes_only_in_e2e``): a test that is not marked
``e2e`` cannot start a Python process, fork or open a pseudo-terminal, so ``pytest -m "not e2e"``
stays the fast, in-process run."""

from __future__ import annotations

import os
import pty
import subprocess
import sys

import pytest


def test_an_unmarked_test_cannot_start_python_fork_or_open_a_terminal():
    with pytest.raises(pytest.fail.Exception, match="marked @pytest.mark.e2e"):
        subprocess.run([sys.executable, "-c", "pass"])
    with pytest.raises(pytest.fail.Exception, match="marked @pytest.mark.e2e"):
        subprocess.run("python3 -c pass", shell=False)
    with pytest.raises(pytest.fail.Exception, match="marked @pytest.mark.e2e"):
        os.fork()
    with pytest.raises(pytest.fail.Exception, match="marked @pytest.mark.e2e"):
        pty.fork()


@pytest.mark.e2e
def test_a_marked_test_may():
    assert subprocess.run([sys.executable, "-c", "print(6 * 7)"], capture_output=True, text=True).stdout == "42\n"


def test_no_test_module_sets_its_marks_twice():
    # A second `pytestmark = ...` replaces the first: the crash and concurrency tests once lost
    # their `durable` mark that way, and ran their own writes without fsync.
    import re
    from pathlib import Path

    tests = Path(__file__).resolve().parent.parent
    twice = [
        str(module.relative_to(tests))
        for module in sorted(tests.rglob("test_*.py"))
        if len(re.findall(r"^pytestmark\s*[:=]", module.read_text(encoding="utf-8"), re.MULTILINE)) > 1
    ]
    assert twice == []
