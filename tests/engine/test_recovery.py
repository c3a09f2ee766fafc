"""At-least-once dispatch (docs/engine.md, "Commit then run"): a dispatch record left
``running`` by a process that died mid-executor is re-run, under the same idempotency key,
when a runner recovers the instance (``runner.recover``, which the chat calls when a
conversation opens) or writes to it; reads never do. A record that is ``ok`` never runs again."""

from __future__ import annotations

import os
import socket

import pytest

from example_forms import HookLog, lab, register
from formctl import FormRunner, Patch
from formctl.forms.instance import DispatchState, Provenance, now_iso
from helpers.processes import dead_pid


@pytest.fixture
def filled(adapter, registry, log):
    """(instance id, a fresh-runner factory) after ``trigger = "watch"`` ran every hook once."""
    register(registry, lab(log))
    FormRunner(adapter, registry=registry, subject="s1").start("lab", seed={"trigger": "watch"})
    log.clear()

    def fresh():
        return FormRunner(adapter, registry=registry, subject="s1")

    return fresh().open_instance().id, fresh


def leave_running(adapter, key, hook_id, owner, attempts=1):
    prov = Provenance("test", "crashed-process", now_iso())
    adapter.record_dispatch(
        key.split(":", 1)[0], key, DispatchState(hook_id, "running", attempts, now_iso(), owner=owner), prov
    )


@pytest.mark.parametrize("hook", ["field:trigger", "step:one", "checkpoint:watch"])
def test_a_dispatch_left_running_by_a_dead_process_is_re_run_under_the_same_key(adapter, filled, log, hook):
    iid, fresh = filled
    key = f"{iid}:{hook}:1"
    leave_running(adapter, key, hook, f"{socket.gethostname()}:{dead_pid()}")

    result = fresh().recover()

    assert [ctx.idempotency_key for ctx in log.contexts] == [key]
    assert result.rerun == [key]
    record = fresh().open_instance().dispatches[key]
    assert (record.status, record.attempts) == ("ok", 2)


def test_the_re_run_effects_are_applied(adapter, filled, log):
    iid, fresh = filled
    key = f"{iid}:field:trigger:1"
    log.behaviours["field:trigger"] = Patch({"derived": "recovered"})
    leave_running(adapter, key, "field:trigger", f"{socket.gethostname()}:{dead_pid()}")

    fresh().recover(iid)

    assert fresh().open_instance().in_force_values()["derived"] == "recovered"


def test_a_re_run_that_fails_is_recorded_as_a_failure(adapter, filled, log):
    iid, fresh = filled
    key = f"{iid}:field:trigger:1"
    log.behaviours["field:trigger"] = lambda ctx: 1 / 0
    leave_running(adapter, key, "field:trigger", f"{socket.gethostname()}:{dead_pid()}")

    view = fresh().recover().view.to_dict()

    record = fresh().open_instance().dispatches[key]
    assert (record.status, record.attempts) == ("failed", 2)
    assert [f["hook"] for f in view["failures"]] == ["field:trigger"]


@pytest.mark.parametrize(
    "open_it",
    [lambda r: r.recover(), lambda r: r.fill({"derived": "d"}), lambda r: r.undo()],
    ids=["recover", "fill", "undo"],
)
def test_recovering_or_writing_re_runs_it_once(adapter, filled, log, open_it):
    iid, fresh = filled
    key = f"{iid}:field:trigger:1"
    leave_running(adapter, key, "field:trigger", f"{socket.gethostname()}:{dead_pid()}")

    open_it(fresh())
    fresh().recover()
    fresh().fill({"derived": "d2"})

    assert [ctx.idempotency_key for ctx in log.contexts].count(key) == 1


@pytest.mark.parametrize(
    "read",
    [
        lambda r: r.status(),
        lambda r: r.inspect("outline"),
        lambda r: r.history("trigger"),
        lambda r: r.evaluation(),
        lambda r: r.view(),
        lambda r: r.tier0(),
        lambda r: r.instances(),
    ],
    ids=["status", "inspect", "history", "evaluation", "view", "tier0", "instances"],
)
def test_no_read_re_runs_anything(adapter, filled, log, read):
    iid, fresh = filled
    key = f"{iid}:field:trigger:1"
    leave_running(adapter, key, "field:trigger", f"{socket.gethostname()}:{dead_pid()}")
    version = fresh().open_instance().version

    read(fresh())

    assert log.contexts == []
    stored = fresh().open_instance()
    assert (stored.version, stored.dispatches[key].status) == (version, "running")


def test_an_ok_dispatch_is_never_run_again(filled, log):
    iid, fresh = filled

    fresh().recover()
    fresh().fill({"derived": "d"})
    fresh().recover()

    assert log.keys == ["field:derived:1"]


def test_tier0_never_re_runs_anything(adapter, filled, log):
    iid, fresh = filled
    leave_running(adapter, f"{iid}:field:trigger:1", "field:trigger", f"{socket.gethostname()}:{dead_pid()}")

    fresh().tier0()

    assert log.contexts == []


@pytest.mark.parametrize(
    "owner",
    [lambda: f"{socket.gethostname()}:{os.getppid()}", lambda: "another-machine:4242"],
    ids=["live-process", "other-host"],
)
def test_a_dispatch_running_in_a_live_process_is_left_alone(adapter, filled, log, owner):
    iid, fresh = filled
    key = f"{iid}:field:trigger:1"
    leave_running(adapter, key, "field:trigger", owner())

    assert fresh().recover().rerun == []

    assert log.contexts == []
    assert fresh().open_instance().dispatches[key].status == "running"


class ProcessDied(BaseException):
    """Stands in for the process dying mid-executor: nothing in the engine catches it."""


def test_an_executor_that_never_finished_is_re_run_by_the_next_runner(adapter, registry, log):
    register(registry, lab(log))
    crashing = FormRunner(adapter, registry=registry, subject="s1")
    crashing.start("lab")

    def die(ctx):
        raise ProcessDied()

    log.behaviours["field:trigger"] = die
    with pytest.raises(ProcessDied):
        crashing.fill({"trigger": "t"})
    iid = crashing.open_instance().id
    key = f"{iid}:field:trigger:1"
    assert crashing.open_instance().in_force_values() == {"trigger": "t"}  # committed before the hook ran
    assert crashing.open_instance().dispatches[key].status == "running"

    log.behaviours["field:trigger"] = Patch({"derived": "second time lucky"})
    FormRunner(adapter, registry=registry, subject="s1").recover()

    stored = crashing.open_instance()
    assert [ctx.idempotency_key for ctx in log.contexts if ctx.hook_id == "field:trigger"] == [key, key]
    assert (stored.dispatches[key].status, stored.dispatches[key].attempts) == ("ok", 2)
    assert stored.in_force_values()["derived"] == "second time lucky"


def test_a_blocking_checkpoint_whose_run_died_is_re_run_and_unblocks(adapter, registry):
    from example_forms import cap_lab

    log = HookLog()
    register(registry, cap_lab(log))
    crashing = FormRunner(adapter, registry=registry, subject="s1")
    crashing.start("cap-lab")

    def die(ctx):
        raise ProcessDied()

    log.behaviours["checkpoint:cap"] = die
    with pytest.raises(ProcessDied):
        crashing.fill({"total": 500})
    assert (crashing.open_instance().status, crashing.open_instance().blocked_on) == ("awaiting", "cap")

    log.behaviours["checkpoint:cap"] = None
    view = FormRunner(adapter, registry=registry, subject="s1").recover().view.to_dict()

    assert view["status"] == "active"
    assert "blocked_on" not in view
    assert [ctx.hook_id for ctx in log.contexts].count("checkpoint:cap") == 2


def test_recovering_another_hook_leaves_a_host_wait_in_place(adapter, registry):
    from example_forms import cap_lab

    log = HookLog()
    register(registry, cap_lab(log, with_run=False))
    r = FormRunner(adapter, registry=registry, subject="s1")
    iid = r.start("cap-lab", seed={"total": 500}).instance_id
    assert r.open_instance().status == "awaiting"
    leave_running(adapter, f"{iid}:field:total:1", "field:total", f"{socket.gethostname()}:{dead_pid()}")

    view = FormRunner(adapter, registry=registry, subject="s1").recover().view.to_dict()

    assert [ctx.hook_id for ctx in log.contexts].count("field:total") == 2
    assert (view["status"], view["blocked_on"]) == ("awaiting", "cap")
