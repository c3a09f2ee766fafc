"""Crash test: writers killed with SIGKILL at random moments never lose or corrupt an answer.

A helper process (``helpers/store_crash_child.py``) forks writers that fill one instance
through ``FormRunner`` in a loop and print every version the store acknowledged. This
test kills each writer at a random moment, inside appends, fsyncs, compactions and index
updates alike, at least 50 times, and after every kill checks the store with a fresh
adapter: every file parses, the version never went backwards, and every acknowledged
answer is in the log.

Nothing here depends on how fast the machine is: the kill moments are random, and the
assertions hold whatever moment a kill lands on.
"""

from __future__ import annotations

import os
import queue
import random
import signal
import subprocess
import sys
import threading

import pytest

from formctl.forms.instance import Provenance, now_iso

# The helpers are separate processes that fsync anyway; the mark keeps the test's own
# set-up writes as durable as a user's.
pytestmark = [pytest.mark.durable, pytest.mark.e2e]  # real fsyncs; every test here crosses a process boundary

HELPERS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "helpers")
KILLS = 60

from helpers.race_form import open_adapter  # noqa: E402


@pytest.fixture(params=["jsonfile", "postgres"])
def store(request, tmp_path) -> str:
    """A JSON store folder, or a DSN for a fresh schema on the test server."""
    if request.param == "postgres":
        return request.getfixturevalue("pg_dsn")
    return str(tmp_path / "store")


def _lines(stream, out: queue.Queue) -> None:
    for line in stream:
        out.put(line.split())
    out.put(None)


def _acks(out: queue.Queue, n: int, acks: list) -> None:
    """Read helper lines until ``n`` more acks have arrived."""
    target = len(acks) + n
    while len(acks) < target:
        words = out.get(timeout=60)
        assert words is not None and words[0] in ("ack", "pid"), f"the writer stopped early: {words}"
        if words[0] == "ack":
            acks.append(words)


def _until(out: queue.Queue, word: str, acks: list) -> list[str]:
    """Read helper lines, collecting acks, until one starts with ``word``."""
    while True:
        words = out.get(timeout=60)
        assert words is not None, "the crash helper exited early (see its stderr above)"
        if words[0] == "ack":
            acks.append(words)
        elif words[0] == word:
            return words


def test_writers_killed_at_random_moments_lose_no_acknowledged_answer(store):
    from helpers import race_form

    setup = open_adapter(store)
    instance = setup.create_instance("race", race_form.race.version, "crash", Provenance("test", "setup", now_iso()))

    rng = random.Random(os.environ.get("FORMCTL_CRASH_SEED", "formctl"))
    helper = subprocess.Popen(
        [sys.executable, os.path.join(HELPERS, "store_crash_child.py"), store, instance.id],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        bufsize=1,
    )
    out: queue.Queue = queue.Queue()
    threading.Thread(target=_lines, args=(helper.stdout, out), daemon=True).start()
    acknowledged: dict[str, tuple[str, int]] = {}  # value -> (field, version)
    last_version = 1
    kills_with_acks = 0
    runs_with_commits = 0
    try:
        _until(out, "ready", [])
        for run in range(KILLS):
            acks: list[list[str]] = []
            helper.stdin.write(f"go {run}\n")
            helper.stdin.flush()
            pid = int(_until(out, "pid", acks)[1])
            # Let the writer get some commits in (none: it dies starting up, or in its first
            # commit), then kill it at a random instant of the commit cycle it is in.
            wanted = rng.choice([0, 1, 2, 3, 5, 8, 13, 21])
            _acks(out, wanted, acks)
            threading.Event().wait(rng.uniform(0, 0.004))
            os.kill(pid, signal.SIGKILL)
            runs_with_commits += wanted > 0
            _until(out, "exit", acks)
            kills_with_acks += bool(acks)
            for _, _, i, version, value in acks:
                acknowledged[value] = (f"f{int(i) % 3}", int(version))

            # After every kill, with a fresh adapter, as the next process would see it:
            fresh = open_adapter(store)
            report = fresh.check()
            assert report.problems == (), report.problems  # every file parses
            stored = fresh.get_instance(instance.id)
            acked_versions = [v for _, v in acknowledged.values()]
            assert stored.version >= last_version, "the version went backwards"
            assert stored.version >= max(acked_versions, default=1)
            last_version = stored.version
            logged = {field: {e.value for e in log.revisions} for field, log in stored.entries.items()}
            lost = [value for value, (field, _) in acknowledged.items() if value not in logged.get(field, ())]
            assert not lost, f"acknowledged answers missing after kill {run}: {lost[:5]}"
            # The log holds each revision once, in seq order, and the versions are dense.
            seqs = sorted(e.seq for log in stored.entries.values() for e in log.revisions)
            assert seqs == list(range(1, len(seqs) + 1))
            assert stored.revision_seq == len(seqs) and stored.version == len(seqs) + 1
    finally:
        helper.stdin.close()
        helper.wait(timeout=30)

    assert kills_with_acks >= runs_with_commits >= KILLS // 2
    final = open_adapter(store)
    assert final.reindex().problems == ()
    assert final.check().ok
    assert final.find_latest_unclosed("crash").id == instance.id
