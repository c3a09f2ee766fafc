"""Several worker processes from one warm interpreter, for the store's race helpers.

A Python process that imports formctl costs about half a CPU-second to start. What the
concurrency and start-race tests are about is processes racing in the store, not each one
starting, so their helper imports formctl (and the store's driver) once and forks the workers
from it, as the crash test's helper forks its writers. Each worker opens its own adapter after
the fork (its own connection, its own lock file description), as a process started on its own
has; nothing that touches the store exists before the fork.

Every worker says ``ready`` once it is set up, then waits for a line or the end of its stdin
(the workers share the helper's stdin: closing it starts them all at the same moment), does
its work, and prints one JSON line. Each line goes out in one ``write(2)`` of less than
``PIPE_BUF`` bytes, so the workers' lines never interleave on the shared pipe.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import traceback
from collections.abc import Callable
from typing import Any


def say(line: str) -> None:
    """One line in one write(2) (see the module's docstring)."""
    os.write(1, f"{line}\n".encode())


def _one(worker: int, prepare: Callable[[int], Callable[[], dict[str, Any]]]) -> None:
    work = prepare(worker)
    say("ready")
    sys.stdin.readline()  # "go", or the end of stdin
    say(json.dumps(work()))


def run(workers: list[int], prepare: Callable[[int], Callable[[], dict[str, Any]]]) -> int:
    """``prepare(w)`` then, at the go, its work, for each worker ``w``: here when there is one,
    else each in a child forked from this process. The exit status: 0 when every worker's was."""
    if len(workers) == 1:
        _one(workers[0], prepare)
        return 0
    children = []
    for worker in workers:
        pid = os.fork()
        if pid == 0:
            status = 1
            try:
                _one(worker, prepare)
                status = 0
            except BaseException:
                traceback.print_exc()
            finally:
                sys.stderr.flush()
                os._exit(status)
        children.append(pid)
    status, left = 0, set(children)
    while left:
        pid, wait_status = os.wait()
        left.discard(pid)
        if os.waitstatus_to_exitcode(wait_status) != 0 and not status:
            status = 1  # one worker failed: the others (perhaps waiting for a go that will not come) end too
            for other in left:
                os.kill(other, signal.SIGKILL)
    return status


# ---------------------------------------------------------------------------- the test's side

BUSY = "import sys\nprint('busy', flush=True)\nwhile True: pass"


def race_beside_busy_cpus(helper: list[str], workers: int, *, timeout: float = 300) -> list[dict[str, Any]]:
    """Run ``python HELPER...`` (a helper whose ``workers`` workers use :func:`run`) beside as many
    CPU-bound processes as there are CPUs: once every worker is ready and every busy process
    spins, every worker starts at the same moment (the helper's stdin closes). Each worker's
    summary, once all have exited 0; the busy processes and any worker left are killed at the end.
    The busy processes start after the workers are set up: the set-up is not what is raced."""
    import subprocess
    import threading

    zygote = subprocess.Popen(
        [sys.executable, *helper], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    load: list[subprocess.Popen[str]] = []
    # A helper or worker that hangs (a worker that fails ends the others itself): the watchdog
    # ends them all, so the test fails instead of waiting on a line that never comes.
    watchdog = threading.Timer(timeout, _kill_group, args=(zygote.pid,))
    watchdog.start()
    try:
        for _ in range(workers):
            assert zygote.stdout is not None and zygote.stdout.readline().strip() == "ready", "a worker failed to start"
        load = [
            subprocess.Popen([sys.executable, "-c", BUSY], stdout=subprocess.PIPE, text=True)
            for _ in range(os.cpu_count() or 2)
        ]
        for process in load:
            assert process.stdout is not None and process.stdout.readline().strip() == "busy"
        out, _ = zygote.communicate(timeout=timeout)  # closes the workers' stdin: all start at once
        assert zygote.returncode == 0, out
    finally:
        watchdog.cancel()
        for process in load:
            process.kill()
            process.wait()
        _kill_group(zygote.pid)  # the helper and any worker it forked, if still there
        zygote.wait()
    summaries = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert len(summaries) == workers, out
    return summaries


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
