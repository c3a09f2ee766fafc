"""The lifecycle's one home (docs/engine.md, "Completion and closing"): the named predicates,
which instance a conversation continues, the change stamp a status bar polls, what the store
lost of an instance, and the time of every write coming from the runner's clock."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pytest

from example_forms import drift, register
from formctl import FormRunner, MemoryAdapter, Status, StoreError
from formctl.forms import lifecycle


def _with(status: str):
    class Row:
        pass

    row = Row()
    row.status = status
    return row


@pytest.mark.parametrize(
    "status, is_open, is_continuable, is_closed, is_awaiting, is_in_progress, is_ended",
    [
        ("active", True, True, False, False, True, False),
        ("ready", True, True, False, False, False, False),  # every answer in: only sending is left
        ("awaiting", True, True, False, True, True, False),
        ("complete", False, False, False, False, False, True),
        ("abandoned", False, False, True, False, False, True),
        # stored by an older formctl: carried on with, after migrating
        ("stale", False, True, False, False, False, False),
    ],
)
def test_each_status_answers_the_named_questions(
    status, is_open, is_continuable, is_closed, is_awaiting, is_in_progress, is_ended
):
    row = _with(Status(status))

    assert lifecycle.is_open(row) is is_open
    assert lifecycle.is_open_status(status) is is_open
    assert lifecycle.is_continuable(row) is is_continuable
    assert lifecycle.is_closed(row) is is_closed
    assert lifecycle.is_awaiting(row) is is_awaiting
    assert lifecycle.is_in_progress(row) is is_in_progress
    assert lifecycle.is_ended(row) is is_ended


def test_every_stored_status_is_in_the_table_above():
    # A new status must be placed in every named question; the table is where that is decided.
    assert {s.value for s in Status} == {"active", "ready", "awaiting", "complete", "abandoned", "stale"}


def test_the_runs_an_instance_keeps_are_what_each_records_predicates_answer():
    # Every write asks which runs are running and which hooks failed; the instance keeps the
    # answer (Instance.runs) and put_dispatches keeps it current. It must keep answering exactly
    # what DispatchState.failed and .running say of the records, whatever is put over what.
    from formctl.forms.instance import DispatchState, DispatchStatus, Instance, failed_hook_ids, running_runs

    def record(hook: str, status: DispatchStatus) -> DispatchState:
        return DispatchState(hook, status.value, 1, "2026-01-01T00:00:00Z")

    def walk(instance: Instance) -> tuple[set[str], list[tuple[str, DispatchState]]]:
        runs = instance.dispatches
        return {r.hook_id for r in runs.values() if r.failed}, [(k, r) for k, r in runs.items() if r.running]

    runs = {
        f"{hook}#{status.value}": record(hook, status) for hook, status in itertools.product(("a", "b"), DispatchStatus)
    }
    runs["c#ok"] = record("c", DispatchStatus.OK)
    instance = Instance(id="i", def_id="f", def_version=1, subject="s", dispatches=runs)
    assert failed_hook_ids(instance) == {"a", "b"} and (failed_hook_ids(instance), running_runs(instance)) == walk(
        instance
    )
    assert [key for key, _ in running_runs(instance)] == ["a#running", "b#running"]
    empty = Instance(id="j", def_id="f", def_version=1, subject="s")
    assert failed_hook_ids(empty) == set() and running_runs(empty) == []

    # Every kind of record over every kind (and over no record), on a copy that carries the
    # answer: the kept answer stays the walk's, and the original is untouched.
    before = walk(instance)
    for key in (*runs, "new"):
        for status in DispatchStatus:
            for hook in ("a", "c", "d"):
                changed = instance.copy()
                assert changed.runs() is instance.runs()  # carried, not walked again
                changed.put_dispatches({key: record(hook, status)})
                assert (failed_hook_ids(changed), running_runs(changed)) == walk(changed), (key, status, hook)
                assert walk(instance) == before and (failed_hook_ids(instance), running_runs(instance)) == before
    # A run that ended well over one that ended well, or under a new key, keeps the answer as it was.
    kept = instance.copy()
    kept.put_dispatches({"c#ok": record("c", DispatchStatus.OK), "act:1": record("act:undo", DispatchStatus.OK)})
    assert kept.runs() is instance.runs()


def test_no_module_below_the_runner_reads_the_clock_itself():
    # The time of a transition is passed in (the runner's clock), so a test or a replay can fix it.
    forms = Path(lifecycle.__file__).parent
    for name in ("staging.py", "lifecycle.py", "failures.py", "recovery.py", "executors.py"):
        assert "now_iso()" not in (forms / name).read_text(encoding="utf-8"), name


# --------------------------------------------------------------------------- continuation


def test_a_subject_with_nothing_started_starts_new(runner):
    decision = runner().continuation("basic")

    assert decision.starts_new and decision.note is None and decision.instance_id is None


COMPLETE_SEED = {"name": "Dana", "age": 40, "colour": "red", "agree": True}


def test_the_most_recent_open_instance_is_continued(runner, clock):
    r = runner()
    r.start("basic", seed=COMPLETE_SEED)  # an older complete one does not decide
    latest = r.start("basic").instance_id

    decision = r.continuation("basic")

    assert (decision.instance_id, decision.stale, decision.note) == (latest, False, None)


def test_a_complete_most_recent_instance_means_a_new_one_and_says_so(runner, clock):
    r = runner()
    r.start("basic")
    r.abandon("started by mistake")
    done = r.start("basic", seed=COMPLETE_SEED).instance_id
    assert r.view(done).status == "complete"

    decision = r.continuation("basic")

    assert decision.starts_new and decision.complete_id == done
    assert decision.note == (
        f"Your last basic ({done}) is complete, so this is a new one; to change that one: formctl resume {done}"
    )


def test_closed_instances_are_passed_over(runner, clock):
    r = runner()
    older = r.start("basic").instance_id
    r.fill({"name": "Dana"})
    r.abandon("duplicate")
    # A closed one never decides: the one before it does (here, a new start's own instance).
    newest = r.start("basic").instance_id
    r.abandon("duplicate", instance_id=newest)

    assert r.continuation("basic").starts_new
    assert r.continuation("basic").complete_id is None
    assert older != newest


def test_an_open_instance_behind_a_closed_one_is_continued(runner, clock, adapter):
    r = runner()
    opened = r.start("basic").instance_id
    # Another writer's instance of the same form, closed later than the open one was touched.
    from formctl.forms.instance import Provenance

    other = adapter.create_instance("basic", 1, "s1", Provenance("test", "host", clock()))
    r.abandon("not this one", instance_id=other.id)

    assert r.continuation("basic").instance_id == opened


def test_another_subjects_or_forms_instances_are_not_continued(runner, clock):
    runner("someone-else").start("basic")
    runner().start("trio")

    assert runner().continuation("basic").starts_new


def test_a_stale_instance_is_continued_flagged_stale_with_the_way_out(runner, registry, log, clock):
    register(registry, drift(1, log=log))
    r = runner()
    iid = r.start("drift").instance_id
    register(registry, drift(2, log=log))  # no migrate: the instance is now stale

    decision = r.continuation("drift")

    assert decision.instance_id == iid and decision.stale
    assert f"formctl migrate {iid}" in decision.note and "/abandon REASON" in decision.note


def test_an_open_instance_the_store_cannot_read_stops_a_new_start(tmp_path, registry):
    from formctl import JsonFileAdapter

    store = tmp_path / "store"
    r = FormRunner(JsonFileAdapter(store), registry=registry, subject="s1")
    iid = r.start("basic").instance_id
    snapshot = store / "instances" / f"{iid}.json"
    data = snapshot.read_bytes()
    snapshot.write_bytes(data[: len(data) // 2])

    fresh = FormRunner(JsonFileAdapter(store), registry=registry, subject="s1")
    with pytest.raises(StoreError) as caught:
        fresh.continuation("basic")

    assert caught.value.code == "store_error" and iid in caught.value.message
    assert os.path.exists(snapshot)


# --------------------------------------------------------------------------- stamp and damage


def test_the_stamp_moves_on_every_commit_and_is_none_for_no_instance(runner, clock):
    r = runner()
    iid = r.start("basic").instance_id
    before = r.stamp(iid)

    assert r.stamp(iid) == before  # a read does not move it
    r.fill({"name": "Dana"}, instance_id=iid)

    after = r.stamp(iid)
    assert after[0] == iid and after[1] == before[1] + 1 and after != before
    assert r.stamp("form_zzzzzzzz_aaaaaa") is None


def test_damage_is_none_on_a_store_that_cannot_lose_commits(registry):
    r = FormRunner(MemoryAdapter(), registry=registry, subject="s1")
    iid = r.start("basic").instance_id

    assert r.damage(iid) is None


def test_damage_names_what_a_file_store_lost(tmp_path, registry):
    from formctl import JsonFileAdapter

    store = tmp_path / "store"
    r = FormRunner(JsonFileAdapter(store), registry=registry, subject="s1")
    iid = r.start("basic").instance_id
    assert r.damage(iid) is None
    journal = store / "instances" / f"{iid}.journal"
    r.fill({"name": "Dana"}, instance_id=iid)
    r.fill({"age": 40}, instance_id=iid)
    lines = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(b"".join(lines[:-1]))  # the last acknowledged commit is gone

    damage = FormRunner(JsonFileAdapter(store), registry=registry, subject="s1").damage(iid)

    assert damage is not None and "version 4 is missing" in damage.describe()
    assert damage.to_dict()


# --------------------------------------------------------------------------- the clock


def test_every_time_a_write_records_comes_from_the_runners_clock(registry, log):
    ticks = itertools.count(1)
    stamps: list[str] = []

    def clock() -> str:
        stamps.append(f"2030-01-01T00:00:{next(ticks):02d}.000000Z")
        return stamps[-1]

    r = FormRunner(MemoryAdapter(), registry=registry, subject="s1", clock=clock)
    iid = r.start("f").instance_id
    r.fill({"x": "bad"}, instance_id=iid)  # its on_fill fails: a dispatch record with its own times
    instance = r.open_instance(iid)

    recorded = {rev.provenance.timestamp for log_ in instance.entries.values() for rev in log_.revisions}
    recorded |= {d.at for d in instance.dispatches.values()}
    assert instance.dispatches and recorded and recorded <= set(stamps)
    done = r.start("basic", seed={"name": "Dana", "age": 40, "colour": "red", "agree": True}).instance_id
    assert r.open_instance(done).completed_at in stamps
