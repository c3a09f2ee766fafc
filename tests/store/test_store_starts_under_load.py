"""The store under load: a read that meets an instance mid-write waits for the write instead of
leaving the instance out, and two starts of one form for one subject at once cannot both create
an instance (docs/store.md, "Two starts at once").

Once, four writers beside a busy machine lost one writer's 200 acknowledged fills: its
``open_instance()`` found no open form while another process was starting one, so it started a
second instance and filled that. The deterministic tests pin each half of the answer on
threads with two adapters (``flock`` locks taken through two opens of the lock file exclude
each other even inside one process); the stress test runs the whole story in processes.
"""

from __future__ import annotations

import os
import threading

import pytest

from formctl import FormError, FormRunner, JsonFileAdapter, MemoryAdapter
from formctl.store import _durable
from helpers.forked import race_beside_busy_cpus
from helpers.lock_waits import advisory_waiters, flock_waiters, until_queued
from helpers.race_form import open_adapter, registry

HELPERS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "helpers")


def _runner(store: str, actor: str = "test") -> FormRunner:
    forms = registry()
    return FormRunner(open_adapter(store), registry=forms, subject="race", actor=actor)


def test_a_read_that_meets_a_journal_line_half_written_waits_for_the_write_and_lists_the_instance(
    tmp_path, monkeypatch
):
    store = str(tmp_path / "store")
    writer = _runner(store, "writer")
    iid = writer.start("race").instance_id
    mid_write, finish = threading.Event(), threading.Event()
    real = _durable.write_all
    writer_thread: list[threading.Thread] = []

    def half_then_rest(fd: int, data: bytes) -> None:
        if threading.current_thread() is not writer_thread[0] or mid_write.is_set():
            return real(fd, data)
        real(fd, data[: len(data) // 2])  # a torn line on disk, the lock held
        mid_write.set()
        assert finish.wait(30)
        return real(fd, data[len(data) // 2 :])

    monkeypatch.setattr(_durable, "write_all", half_then_rest)
    writing = threading.Thread(target=lambda: writer.fill({"w0": "half"}, instance_id=iid))
    writer_thread.append(writing)
    writing.start()
    assert mid_write.wait(30)

    reader = JsonFileAdapter(store)  # another adapter: its own lock file description, as another process has
    seen: dict[str, object] = {}

    def read() -> None:
        seen["open"] = reader.find_latest_unclosed("race")
        seen["listed"] = reader.find_instances(subject="race")

    reading = threading.Thread(target=read)
    reading.start()
    until_queued(reading, lambda: flock_waiters(os.path.join(store, "lock")) > 0)
    assert reading.is_alive(), "the read went ahead while the write was half done"
    finish.set()
    writing.join(30)
    reading.join(30)
    assert not reading.is_alive()
    assert seen["open"].id == iid and seen["open"].entries["w0"].revisions[-1].value == "half"
    assert [i.id for i in seen["listed"]] == [iid]


@pytest.mark.parametrize("kind", ["jsonfile", "postgres", "memory"])
def test_two_starts_of_one_form_for_one_subject_at_once_create_one_instance(kind, tmp_path, request, monkeypatch):
    """``memory``: two threads sharing one in-memory store (the others: an adapter each)."""
    if kind == "memory":
        shared = MemoryAdapter()
        first, second = (FormRunner(shared, registry=registry(), subject="race", actor=a) for a in ("first", "second"))
    else:
        store = request.getfixturevalue("pg_dsn") if kind == "postgres" else str(tmp_path / "store")
        first, second = _runner(store, "first"), _runner(store, "second")
    looked, go_on = threading.Event(), threading.Event()
    real = first.adapter.find_instances
    pausing: list[threading.Thread] = []

    def look_then_pause(**kw):  # the first start has looked for an open one and found none
        found = real(**kw)
        if threading.current_thread() is pausing[0]:
            looked.set()
            assert go_on.wait(30)
        return found

    monkeypatch.setattr(first.adapter, "find_instances", look_then_pause)
    outcome: dict[str, object] = {}

    def start(name: str, runner: FormRunner) -> None:
        try:
            outcome[name] = runner.start("race").instance_id
        except FormError as exc:
            outcome[name] = exc

    a = threading.Thread(target=start, args=("first", first))
    pausing.append(a)
    a.start()
    assert looked.wait(30)
    b = threading.Thread(target=start, args=("second", second))
    b.start()
    # The second start waits for the first to finish its look-and-create: seen queued on the
    # store's lock (a threading lock shows no waiters: there, 0.1 s, ample for a start that did
    # not wait to look, create and end).
    if kind == "jsonfile":
        until_queued(b, lambda: flock_waiters(os.path.join(store, "lock")) > 0)
    elif kind == "postgres":
        import psycopg

        with psycopg.connect(store, autocommit=True) as conn:
            until_queued(b, lambda: advisory_waiters(conn, "start:race:race") > 0)
    else:
        b.join(0.1)
    assert b.is_alive(), outcome
    go_on.set()
    a.join(30)
    b.join(30)

    created = outcome["first"]
    assert isinstance(created, str)
    refused = outcome["second"]
    assert isinstance(refused, FormError) and refused.code == "form_open"
    assert created in refused.message
    adapter = shared if kind == "memory" else open_adapter(store)
    assert [i.id for i in adapter.find_instances(subject="race")] == [created]


@pytest.mark.e2e
@pytest.mark.durable
@pytest.mark.parametrize("kind", ["jsonfile", "postgres"])
def test_six_processes_starting_and_filling_one_form_beside_busy_ones_share_one_instance(kind, tmp_path, request):
    """Six writers start the same form for the same subject at the same moment, beside as many
    CPU-bound processes as there are CPUs, then each fills its own field 60 times through
    ``open_instance()``. One start creates; five are refused and name it; every fill lands in it."""
    store = request.getfixturevalue("pg_dsn") if kind == "postgres" else str(tmp_path / "store")
    workers_n, fills = 6, 60
    summaries = race_beside_busy_cpus(
        [os.path.join(HELPERS, "store_start_child.py"), store, ",".join(str(w) for w in range(workers_n)), str(fills)],
        workers_n,
    )

    created = [s["started"] for s in summaries if s["started"]]
    assert len(created) == 1, summaries
    (iid,) = created
    for s in summaries:
        assert s["landed"] == [iid], s
        if not s["started"]:
            assert iid in s["refused"]
    stored = open_adapter(store).find_instances(subject="race")
    assert [i.id for i in stored] == [iid]
    for w in range(workers_n):
        assert [e.value for e in stored[0].entries[f"w{w}"].revisions] == [f"{w}-{i}" for i in range(fills)]
