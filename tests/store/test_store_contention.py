"""How a write waits out other writers: under the JSON store's lock, or by backing off.

A write that keeps losing the compare-and-set (here to a writer that commits just before
every commit of ours, as a writer on another machine can) makes the runner retry: with pauses that grow and are jittered, for
about two seconds of (simulated) time, after which the conflict reaches the caller. The
JSON store offers ``exclusive``, so a runner over it never meets a conflict from a writer
on this machine: see test_store_concurrency.py for four processes under CPU load.
"""

from __future__ import annotations

import threading

import pytest

from formctl import ConflictError, FormRegistry, FormRunner, JsonFileAdapter, MemoryAdapter
from formctl.forms import contention
from helpers.lock_waits import flock_waiters, until_queued
from helpers.race_form import race


class AlwaysBeaten:
    """A MemoryAdapter where another writer commits just before every commit of ours."""

    def __init__(self) -> None:
        self.inner = MemoryAdapter()
        self.identifier = self.inner.identifier
        self.commits = 0
        self.armed = False  # from now on, every commit loses the race

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def commit_instance(self, instance_id, commit, *, if_version, provenance):
        if not self.armed:
            return self.inner.commit_instance(instance_id, commit, if_version=if_version, provenance=provenance)
        self.commits += 1
        raise ConflictError(if_version, if_version + 1)


@pytest.fixture
def fake_time(monkeypatch):
    now = [100.0]
    pauses: list[float] = []

    def sleep(seconds: float) -> None:
        pauses.append(seconds)
        now[0] += seconds

    monkeypatch.setattr(contention, "clock", lambda: now[0])
    monkeypatch.setattr(contention, "sleep", sleep)
    return pauses


def _registry() -> FormRegistry:
    return FormRegistry().register("race", name="Race", description="", load=lambda: race)


def test_conflicts_are_retried_with_growing_jittered_pauses_for_about_two_seconds(fake_time):
    adapter = AlwaysBeaten()
    runner = FormRunner(adapter, registry=_registry(), subject="s")
    instance_id = runner.start("race").view.instance_id
    adapter.armed = True
    with pytest.raises(ConflictError):
        runner.fill({"f0": "x"}, instance_id=instance_id)
    assert contention.PATIENCE - 0.01 <= sum(fake_time) <= contention.PATIENCE + 1e-9  # bounded by time
    assert adapter.commits == len(fake_time) + 1 > 5  # not five immediate attempts
    assert fake_time[0] < 0.01 and max(fake_time) > 0.1  # the pauses grow from a few milliseconds
    ratios = [b / a for a, b in zip(fake_time[:6], fake_time[1:7])]
    assert len(set(round(r, 6) for r in ratios)) > 1  # jittered, not a fixed doubling
    assert runner.conflict_retries == adapter.commits - 1


def test_a_json_store_write_holds_the_lock_from_read_to_commit(tmp_path):
    adapter = JsonFileAdapter(tmp_path / "store")
    runner = FormRunner(adapter, registry=_registry(), subject="s")
    instance_id = runner.start("race").view.instance_id
    other = JsonFileAdapter(tmp_path / "store")
    before = other.get_instance(instance_id).version
    entered = threading.Event()
    release = threading.Event()

    def hold() -> None:
        with other.exclusive(instance_id):
            entered.set()
            release.wait(5)
            # A write of our own, inside the lock: the runner's write must wait for it.
            current = other.get_instance(instance_id)
            runner_b = FormRunner(other, registry=_registry(), subject="s")
            runner_b.fill({"f1": "first"}, instance_id=instance_id)
            assert other.get_instance(instance_id).version == current.version + 1

    holder = threading.Thread(target=hold)
    holder.start()
    entered.wait(5)
    done = threading.Event()
    waiter = threading.Thread(target=lambda: (runner.fill({"f0": "second"}, instance_id=instance_id), done.set()))
    waiter.start()
    until_queued(waiter, lambda: flock_waiters(str(tmp_path / "store" / "lock")) > 0)
    assert waiter.is_alive() and not done.is_set()  # queued on the lock, not failing and not retrying
    release.set()
    holder.join(10)
    waiter.join(10)
    assert done.is_set() and runner.conflict_retries == 0 and adapter.conflicts == 0
    stored = JsonFileAdapter(tmp_path / "store").get_instance(instance_id)
    assert stored.version == before + 2 and stored.in_force_values() == {"f1": "first", "f0": "second"}
