"""Crash-test helper: a zygote that forks writers for the parent test to SIGKILL.

    python store_crash_child.py STORE INSTANCE_ID   (STORE: a folder or a DSN)

It imports formctl once (half a second), prints ``ready``, then for each ``go RUN`` line on
stdin forks a child that fills the instance through ``FormRunner`` in an endless loop and
prints ``ack RUN I VERSION VALUE`` after every fill the store acknowledged (the version is
the one ``commit_instance`` returned). The zygote prints ``pid PID`` for the test to kill
and, once the child is gone, ``exit PID``. Forking from a warm interpreter is what lets the
test kill 50+ writers in a few seconds; each child opens its own adapter, as a process would.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from race_form import Acknowledging, open_adapter, warmed_registry  # noqa: E402

from formctl import FormRunner  # noqa: E402


def say(line: str) -> None:
    """One line in one write(2): the forked writers' ``ack`` lines share this pipe, and print()
    may write a line and its newline apart (under PYTHONUNBUFFERED it does), so an ``ack`` could
    land between them ("pid 5334ack ...")."""
    os.write(1, f"{line}\n".encode())


def write_forever(store: str, instance_id: str, run: int, forms) -> None:
    # compact_after=8 (JSON store): kills land inside compactions too, not only inside appends.
    adapter = Acknowledging(open_adapter(store, compact_after=8))
    runner = FormRunner(adapter, registry=forms, subject="crash", actor="crash-test")
    i = 0
    while True:
        value = f"r{run}-{i}"
        runner.fill({f"f{i % 3}": value}, instance_id=instance_id)
        say(f"ack {run} {i} {adapter.versions[-1]} {value}")
        i += 1


def main() -> None:
    store, instance_id = sys.argv[1], sys.argv[2]
    forms = warmed_registry(store)  # compiled, and what a fill imports imported, once, before forking
    say("ready")
    for line in sys.stdin:
        words = line.split()
        if not words or words[0] != "go":
            break
        pid = os.fork()
        if pid == 0:
            try:
                write_forever(store, instance_id, int(words[1]), forms)
            finally:
                os._exit(1)
        say(f"pid {pid}")
        os.waitpid(pid, 0)
        say(f"exit {pid}")


if __name__ == "__main__":
    main()
