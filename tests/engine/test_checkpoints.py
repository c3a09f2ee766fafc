"""Blocking checkpoints, waits for the host, and resolve_checkpoint (docs/engine.md,
'Checkpoints and waits'; failures that clear: 'Commit then run').

The form is ``cap-lab``: a total over 100 hits two blocking checkpoints, "cap" (waiting
message "Checking with Finance.") then "second"; total and a signature are required.
"""

from __future__ import annotations

import pytest

from example_forms import cap_lab, register
from formctl import (
    Complete,
    ConflictError,
    Fail,
    FormBlockedError,
    FormError,
    FormRegistry,
    FormRunner,
    MemoryAdapter,
    Patch,
    define_form,
)


def make(runner, registry, log, **options):
    register(registry, cap_lab(log, **options))
    r = runner()
    r.start("cap-lab")
    return r


@pytest.fixture
def waiting(runner, registry, log):
    """A runner whose "cap" checkpoint has no run: it waits for the host."""
    return make(runner, registry, log, with_run=False)


def failures_of(view_or_result):
    return [(f["hook"], f["message"]) for f in view_or_result.to_dict().get("failures", [])]


def form_runs(log):
    return [k for k in log.keys if k.startswith("form")]


# --------------------------------------------------------------------------- a run that returns unblocks


def test_a_blocking_checkpoint_whose_run_returns_is_awaiting_only_while_it_runs(runner, registry, log, adapter):
    seen = []
    log.behaviours["checkpoint:cap"] = lambda ctx: seen.append(adapter.get_instance(ctx.instance.id).status)
    r = make(runner, registry, log)

    r.fill({"total": 500})

    assert seen == ["awaiting"]
    stored = r.open_instance()
    assert (stored.status, stored.blocked_on) == ("active", None)
    assert log.keys[-2:] == ["checkpoint:cap:1", "checkpoint:second:1"]  # the rest of the round still runs


def test_blocked_on_names_the_first_blocking_checkpoint_in_queue_order(runner, registry, log):
    seen = []
    log.behaviours["checkpoint:second"] = lambda ctx: seen.append(ctx.instance.blocked_on)
    r = make(runner, registry, log)

    r.fill({"total": 500})

    assert seen == ["cap"]


def test_a_failed_blocking_run_unblocks_with_an_open_failure(runner, registry, log):
    log.behaviours["checkpoint:cap"] = Fail("Over the limit: needs pre-approval.")
    r = make(runner, registry, log)

    result = r.fill({"total": 500})

    assert result.view.status == "active"
    assert failures_of(result) == [("checkpoint:cap", "Over the limit: needs pre-approval.")]


# --------------------------------------------------------------------------- waiting for a person


def test_a_blocking_checkpoint_with_no_run_leaves_the_instance_awaiting(waiting):
    view = waiting.fill({"total": 500}).view.to_dict()

    assert view["status"] == "awaiting"
    assert view["blocked_on"] == "cap"
    assert view["waiting"] == "Checking with Finance."
    assert waiting.status().to_dict()["blocked_on"] == "cap"  # reads still work
    assert waiting.inspect("outline").status == "awaiting"
    assert waiting.tier0() == '[form: cap-lab] awaiting the "cap" check — Checking with Finance.'


@pytest.mark.parametrize(
    "write",
    [
        lambda r: r.fill({"note": "n"}),
        lambda r: r.revise("total", 50),
        lambda r: r.retract("total"),
        lambda r: r.undo(),
        lambda r: r.redo("total"),
    ],
    ids=["fill", "revise", "retract", "undo", "redo"],
)
def test_writes_while_awaiting_raise_form_blocked_with_the_wait_message(waiting, write):
    waiting.fill({"total": 500})
    version = waiting.open_instance().version

    with pytest.raises(FormBlockedError) as err:
        write(waiting)

    assert err.value.code == "form_blocked"
    assert err.value.checkpoint_id == "cap"
    assert "Checking with Finance." in str(err.value)
    assert waiting.open_instance().version == version


def test_a_run_that_returns_none_waits_when_declared_wait_for_host(runner, registry, log):
    r = make(runner, registry, log, wait_for_host=True)

    r.fill({"total": 500})

    assert log.keys.count("checkpoint:cap:1") == 1
    assert (r.open_instance().status, r.open_instance().blocked_on) == ("awaiting", "cap")


@pytest.mark.parametrize("behaviour", [Patch({"note": "auto-approved"}), Fail("rejected by rule")])
def test_a_wait_for_host_run_that_returns_an_effect_unblocks(runner, registry, log, behaviour):
    log.behaviours["checkpoint:cap"] = behaviour
    r = make(runner, registry, log, wait_for_host=True)

    r.fill({"total": 500})

    assert (r.open_instance().status, r.open_instance().blocked_on) == ("active", None)


def test_a_wait_for_host_run_that_raises_unblocks_with_a_failure(runner, registry, log):
    def down(ctx):
        raise ConnectionError("finance system down")

    log.behaviours["checkpoint:cap"] = down
    r = make(runner, registry, log, wait_for_host=True)

    result = r.fill({"total": 500})

    assert result.view.status == "active"
    assert failures_of(result) == [("checkpoint:cap", "That couldn't be checked just now.")]


# --------------------------------------------------------------------------- resolve_checkpoint


def test_resolving_ok_unblocks_and_the_form_completes_and_announces_it_then(waiting, log):
    waiting.fill({"total": 500, "sign": "Dana"})
    assert waiting.open_instance().status == "awaiting"
    assert form_runs(log) == []  # on_complete waits for the checkpoint

    result = waiting.resolve_checkpoint()

    assert result.view.status == "complete"
    assert form_runs(log) == ["form:1"]
    stored = waiting.open_instance()
    assert stored.blocked_on is None
    record = stored.dispatches[f"{stored.id}:checkpoint:cap:1:resolved:1"]  # occurrence 1, its first resolution
    assert (record.hook_id, record.status, record.attempts, record.actor) == ("checkpoint:cap", "ok", 1, "agent")


def test_every_resolution_records_who_when_the_outcome_and_why_and_none_overwrites_another(waiting, clock):
    from formctl.forms.resolutions import resolutions

    waiting.fill({"total": 500, "sign": "Dana"})
    waiting.resolve_checkpoint(fail="Needs pre-approval.", actor="sam")
    waiting.resolve_checkpoint(checkpoint="cap", actor="  kim  ", reason="Pre-approved by email.")

    got = [r.to_dict() for r in resolutions(waiting.open_instance())]
    assert [(r["checkpoint"], r["occurrence"], r["outcome"], r["actor"], r.get("reason")) for r in got] == [
        ("cap", 1, "rejected", "sam", "Needs pre-approval."),
        ("cap", 1, "approved", "kim", "Pre-approved by email."),
    ]
    assert got[0]["at"] < got[1]["at"]
    assert waiting.open_instance().status == "complete"
    assert resolutions(waiting.open_instance())[1].text().startswith("cap approved by kim at 2026-")


@pytest.mark.parametrize("actor", ["", "   ", 5])
def test_a_resolution_names_someone(waiting, actor):
    waiting.fill({"total": 500})
    with pytest.raises(FormError) as raised:
        waiting.resolve_checkpoint(actor=actor)
    assert raised.value.code == "invalid_arguments"
    assert waiting.open_instance().status == "awaiting"


def test_resolutions_of_a_store_written_before_actors_were_recorded_still_read():
    from formctl.forms.instance import DispatchState, Instance
    from formctl.forms.resolutions import resolutions

    instance = Instance(
        id="form_a",
        def_id="f",
        def_version=1,
        subject="s",
        dispatches={
            "form_a:checkpoint:cap:resolved": DispatchState(
                "checkpoint:cap", "failed", 2, "2026-01-01T00:00:01Z", "No."
            )
        },
    )
    assert [r.to_dict() for r in resolutions(instance)] == [
        {"checkpoint": "cap", "outcome": "rejected", "at": "2026-01-01T00:00:01Z", "actor": None, "reason": "No."}
    ]


def test_patches_from_an_on_complete_announced_on_resolve_are_written(waiting, log):
    log.behaviours["form"] = Patch({"note": "filed with Finance"})
    waiting.fill({"total": 500, "sign": "Dana"})

    waiting.resolve_checkpoint()

    assert waiting.open_instance().in_force_values()["note"] == "filed with Finance"


def test_a_completion_forced_while_waiting_for_the_host_lands_when_resolved(waiting, log):
    log.behaviours["field:total"] = Complete()
    waiting.fill({"total": 500})  # the signature is still missing
    assert waiting.open_instance().status == "awaiting"

    result = waiting.resolve_checkpoint()

    assert result.view.status == "complete"
    assert form_runs(log) == ["form:1"]


def test_a_patch_from_the_round_that_starts_a_wait_is_written_and_the_wait_holds(waiting, log):
    log.behaviours["field:total"] = Patch({"note": "flagged for Finance"})

    result = waiting.fill({"total": 500})

    stored = waiting.open_instance()
    assert (stored.status, stored.blocked_on) == ("awaiting", "cap")
    assert result.view.status == "awaiting"
    assert stored.in_force_values() == {"total": 500, "note": "flagged for Finance"}
    with pytest.raises(FormBlockedError):
        waiting.fill({"sign": "Dana"})


def test_resolving_ok_with_fields_still_missing_leaves_the_form_active(waiting):
    waiting.fill({"total": 500})

    result = waiting.resolve_checkpoint()

    assert result.view.status == "active"
    assert waiting.fill({"note": "now writable"}).captured == ["note"]


def test_resolving_with_fail_records_an_open_failure_and_the_form_does_not_read_complete(waiting, log):
    waiting.fill({"total": 500, "sign": "Dana"})

    result = waiting.resolve_checkpoint(fail="Over the limit: needs Finance pre-approval.")

    expected = [("checkpoint:cap", "Over the limit: needs Finance pre-approval.")]
    assert failures_of(result) == expected
    view = waiting.status().to_dict()
    assert failures_of(waiting.status()) == expected
    assert (view["status"], view["complete"]) == ("active", False)
    assert 'blocked: The "cap" check: Over the limit: needs Finance pre-approval.' in waiting.tier0()
    assert form_runs(log) == []
    stored = waiting.open_instance()
    record = stored.dispatches[f"{stored.id}:checkpoint:cap:1:resolved:1"]
    assert (record.status, record.error) == ("failed", "Over the limit: needs Finance pre-approval.")


def test_a_rejected_checkpoint_failure_closes_once_its_condition_no_longer_holds(waiting, log):
    waiting.fill({"total": 500, "sign": "Dana"})
    waiting.resolve_checkpoint(fail="Over the limit.")

    result = waiting.revise("total", 90)

    assert failures_of(result) == []
    assert result.failures == []
    assert result.view.status == "complete"
    assert form_runs(log) == ["form:1"]
    assert any(d.status == "failed" for d in waiting.open_instance().dispatches.values())  # kept in the log


def test_resolving_ok_after_a_rejection_clears_the_failure(waiting, log):
    waiting.fill({"total": 500, "sign": "Dana"})
    waiting.resolve_checkpoint(fail="Over the limit.")

    result = waiting.resolve_checkpoint(checkpoint="cap")

    assert failures_of(result) == []
    assert result.view.status == "complete"
    assert form_runs(log) == ["form:1"]


def test_a_failed_blocking_run_whose_condition_still_holds_keeps_the_form_from_completing(runner, registry, log):
    log.behaviours["checkpoint:cap"] = Fail("needs approval")
    r = make(runner, registry, log)

    view = r.fill({"total": 500, "sign": "Dana"}).view.to_dict()

    assert (view["status"], view["complete"]) == ("active", False)
    assert r.status().to_dict()["complete"] is False
    assert form_runs(log) == []


def test_a_rejected_non_blocking_checkpoint_does_not_hold_completion(runner, registry, log):
    log.behaviours["checkpoint:cap"] = Fail("worth a look")
    r = make(runner, registry, log, blocking=False)

    result = r.fill({"total": 500, "sign": "Dana"})

    assert (result.view.status, result.view.complete) == ("complete", True)
    assert failures_of(result) == [("checkpoint:cap", "worth a look")]
    assert form_runs(log) == ["form:1"]


def test_values_passed_to_resolve_are_written_through_the_cycle(waiting, log):
    waiting.fill({"total": 500})

    result = waiting.resolve_checkpoint(values={"sign": "Finance", "Note": "approved"})

    assert result.captured == ["sign", "note"]
    assert result.renamed == [("Note", "note")]
    assert "field:sign:1" in log.keys and "field:note:1" in log.keys
    assert result.view.status == "complete"
    assert form_runs(log) == ["form:1"]
    stored = waiting.open_instance()
    assert stored.in_force_values() == {"total": 500, "sign": "Finance", "note": "approved"}


def test_resolve_on_an_instance_that_is_not_waiting_is_an_error(runner, registry, log):
    r = make(runner, registry, log)
    r.fill({"total": 5})

    with pytest.raises(FormError) as err:
        r.resolve_checkpoint()

    assert err.value.code == "not_waiting"


def test_resolve_on_an_abandoned_instance_is_refused(waiting):
    waiting.fill({"total": 500})
    iid = waiting.abandon("withdrawn").id

    with pytest.raises(FormError) as err:
        waiting.resolve_checkpoint(instance_id=iid)

    assert err.value.code == "form_closed"


def test_a_checkpoint_rising_again_blocks_again_under_a_new_occurrence(waiting):
    waiting.fill({"total": 500})
    waiting.resolve_checkpoint()
    waiting.revise("total", 50)

    waiting.revise("total", 600)

    stored = waiting.open_instance()
    assert (stored.status, stored.blocked_on) == ("awaiting", "cap")
    assert stored.occurrences["checkpoint:cap"] == 2


def test_abandon_while_awaiting_clears_blocked_on(waiting):
    waiting.fill({"total": 500})

    stored = waiting.abandon("claimant withdrew")

    assert (stored.status, stored.blocked_on, stored.closed_reason) == ("abandoned", None, "claimant withdrew")


def test_resolve_retries_conflicts(adapter, registry, log):
    from test_cycle import FlakyAdapter

    register(registry, cap_lab(log, with_run=False))
    flaky = FlakyAdapter(adapter)
    r = FormRunner(flaky, registry=registry, subject="s1")
    r.start("cap-lab", seed={"total": 500})
    flaky.conflicts = 4

    r.resolve_checkpoint()

    assert r.open_instance().status == "active"
    assert r.conflict_retries == 4


def test_resolve_gives_up_when_conflicts_outlast_its_patience_and_the_instance_still_waits(adapter, registry, log):
    from test_cycle import FlakyAdapter

    register(registry, cap_lab(log, with_run=False))
    flaky = FlakyAdapter(adapter)
    r = FormRunner(flaky, registry=registry, subject="s1")
    r.start("cap-lab", seed={"total": 500})
    flaky.conflicts = 10**6

    with pytest.raises(ConflictError):
        r.resolve_checkpoint()

    assert r.open_instance().status == "awaiting"


def test_a_non_blocking_checkpoint_never_blocks(runner, registry, log):
    r = make(runner, registry, log, with_run=True, blocking=False)
    seen = []
    log.behaviours["checkpoint:cap"] = lambda ctx: seen.append(ctx.instance.status)

    r.fill({"total": 500})

    assert seen == ["active"]
    assert r.open_instance().status == "active"


def test_a_patch_round_does_not_end_a_wait_for_the_host():
    """An on_fill's patch, written while a blocking checkpoint waits for the host, leaves it waiting."""
    form = (
        define_form("waits", name="Waits")
        .step("s", title="S")
        .field("a", str, label="A")
        .field("b", str, label="B")
        .field("e", str, label="E", on_fill=lambda ctx: [Complete(), Patch({"a": "z"})])
        .checkpoint("cp", when=lambda v, s: v["a"] == "y", blocking=True)  # no run: waits for the host
        .build()
    )
    registry = FormRegistry().register(form.id, name=form.name, description="", load=lambda: form)
    runner = FormRunner(MemoryAdapter(), registry=registry, subject="qa")
    runner.start("waits")
    result = runner.fill({"e": "x", "a": "y"})
    _, instance, ev = runner.evaluation(result.instance_id)
    assert ev.values["a"] == "z"  # the patch was written
    assert (instance.status, instance.blocked_on) == ("awaiting", "cp")  # used to read complete, still blocked on cp
    assert instance.occurrences.get("form", 0) == 0
    runner.resolve_checkpoint(instance.id)
    _, instance, _ = runner.evaluation(result.instance_id)
    assert (instance.status, instance.blocked_on) == ("complete", None)  # the forced completion lands now
    assert instance.occurrences["form"] == 1
