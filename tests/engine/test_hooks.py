"""Executors: dispatch, effect precedence, hook order and occurrences, failures that clear,
Terminate and Complete (docs/engine.md, 'Commit then run' and 'Completion and closing')."""

from __future__ import annotations

import asyncio

import pytest

from example_forms import async_hooks, lab, occurrence_seq, register
from formctl import Complete, Fail, FormError, Jump, Patch, Terminate
from formctl.forms.executors import COULD_NOT_CHECK
from formctl.forms.instance import DispatchState, Provenance, now_iso


@pytest.fixture
def lab_runner(runner, registry, log):
    register(registry, lab(log))
    r = runner()
    r.start("lab")
    return r


def values_of(runner):
    return {f["id"]: f.get("value") for f in runner.inspect("outline").to_dict()["fields"] if "value" in f}


def failures_of(view_or_result):
    return [(f["hook"], f["message"]) for f in view_or_result.to_dict().get("failures", [])]


def fault_of(runner, hook_id: str) -> str:
    """What the host reads about a hook's last failed run: the fault itself (the person reads COULD_NOT_CHECK)."""
    records = [r for r in runner.open_instance().dispatches.values() if r.hook_id == hook_id and r.status == "failed"]
    assert records[-1].error == COULD_NOT_CHECK
    return records[-1].detail


# --------------------------------------------------------------------------- hook order and occurrences


def test_hooks_run_fields_then_steps_then_checkpoints_then_form_each_in_declaration_order(lab_runner, log):
    lab_runner.fill({"extra": "ok", "trigger": "watch"})

    assert log.keys == [
        "field:trigger:1",
        "field:extra:1",
        "step:one:1",
        "step:two:1",
        "checkpoint:watch:1",
        "checkpoint:also:1",
        "form:1",
    ]


def test_the_verified_occurrence_sequence_of_a_checkpoint_and_the_form(runner, registry, log):
    register(registry, occurrence_seq(log))
    fired_before = []
    log.behaviours["checkpoint:cp"] = lambda ctx: fired_before.append(ctx.state.checkpoint_fired("cp"))
    r = runner()
    r.start("seq")

    r.fill({"x": "hit"})
    assert log.keys == ["checkpoint:cp:1", "form:1"]
    r.revise("x", "miss")  # a falling edge fires nothing
    assert log.keys == ["checkpoint:cp:1", "form:1"]
    r.revise("x", "hit")
    assert log.keys[-1] == "checkpoint:cp:2"
    r.retract("x")  # falling again; the form is no longer complete
    assert len(log.keys) == 3
    assert r.status().status == "active"
    r.undo()
    assert log.keys[3:] == ["checkpoint:cp:3", "form:2"]

    assert fired_before == [False, True, True]
    assert r.open_instance().occurrences == {"field:x": 2, "step:a": 2, "checkpoint:cp": 3, "form": 2}


def test_restating_or_changing_a_live_answer_fires_nothing(lab_runner, log):
    lab_runner.fill({"trigger": "a"})
    lab_runner.fill({"trigger": "a"})
    lab_runner.revise("trigger", "b")

    assert log.keys == ["field:trigger:1", "step:one:1"]


def test_fixing_an_invalid_answer_is_a_rising_edge(lab_runner, log):
    lab_runner.fill({"extra": "x"})  # too short: stored, invalid, not live
    assert log.keys == []

    lab_runner.revise("extra", "xy")

    assert log.keys == ["field:extra:1", "step:two:1"]


# --------------------------------------------------------------------------- dispatch


def test_an_executor_is_told_when_the_runner_is_replaying(runner, registry, log):
    register(registry, lab(log))

    runner(replaying=True).start("lab", seed={"trigger": "t"})

    assert [ctx.replaying for ctx in log.contexts] == [True, True]


def test_an_executor_gets_its_hook_id_form_and_idempotency_key(lab_runner, log):
    result = lab_runner.fill({"trigger": "t"})

    ctx = log.contexts[0]
    assert ctx.hook_id == "field:trigger"
    assert ctx.idempotency_key == f"{result.instance_id}:field:trigger:1"
    assert ctx.form_id == "lab"
    assert ctx.replaying is False
    assert ctx.instance.id == result.instance_id


def test_a_dispatch_is_recorded_running_while_the_executor_runs_then_ok(lab_runner, log, adapter):
    seen = {}

    def look(ctx):
        seen["record"] = adapter.get_instance(ctx.instance.id).dispatches[ctx.idempotency_key]

    log.behaviours["field:trigger"] = look
    result = lab_runner.fill({"trigger": "t"})

    running = seen["record"]
    assert (running.hook_id, running.status, running.attempts) == ("field:trigger", "running", 1)
    done = lab_runner.open_instance().dispatches[f"{result.instance_id}:field:trigger:1"]
    assert (done.status, done.attempts, done.error) == ("ok", 1, None)


def test_a_hook_whose_key_is_already_ok_is_skipped(lab_runner, log, adapter):
    iid = lab_runner.open_instance().id
    prov = Provenance("test", "host", now_iso())
    adapter.record_dispatch(iid, f"{iid}:field:trigger:1", DispatchState("field:trigger", "ok", 1, now_iso()), prov)

    lab_runner.fill({"trigger": "t"})

    assert "field:trigger:1" not in log.keys
    assert log.keys == ["step:one:1"]


def test_an_exception_becomes_a_failure_and_the_later_hooks_still_run(lab_runner, log):
    def explode(ctx):
        raise ValueError("card declined")

    log.behaviours["field:trigger"] = explode
    result = lab_runner.fill({"trigger": "t", "extra": "ok"})

    # the person and the model read that it could not be checked; the host reads the exception
    assert failures_of(result) == [("field:trigger", COULD_NOT_CHECK)]
    assert log.keys[1:] == ["field:extra:1", "step:one:1", "step:two:1", "form:1"]
    record = lab_runner.open_instance().dispatches[f"{result.instance_id}:field:trigger:1"]
    assert (record.status, record.error) == ("failed", COULD_NOT_CHECK)
    assert record.detail.startswith("ValueError: card declined (test_hooks.py:") and record.detail.endswith(
        "in explode)"
    )


def test_an_exception_with_no_message_is_reported_by_its_class_name(lab_runner, log):
    def explode(ctx):
        raise KeyError

    log.behaviours["field:trigger"] = explode

    assert failures_of(lab_runner.fill({"trigger": "t"})) == [("field:trigger", COULD_NOT_CHECK)]
    assert fault_of(lab_runner, "field:trigger").startswith("KeyError (test_hooks.py:")


def test_a_fail_in_a_list_discards_every_other_effect_of_that_hook(lab_runner, log):
    log.behaviours["field:trigger"] = [Patch({"derived": "p"}), Jump("two"), Fail("not allowed")]

    result = lab_runner.fill({"trigger": "t"})

    assert failures_of(result) == [("field:trigger", "not allowed")]
    assert "derived" not in values_of(lab_runner)
    assert lab_runner.open_instance().open_step_override is None


@pytest.mark.parametrize("returned", ["done", {"patch": {"derived": "p"}}, [Patch({"derived": "p"}), 42]])
def test_an_executor_returning_something_that_is_not_an_effect_fails_with_a_clear_message(lab_runner, log, returned):
    log.behaviours["field:trigger"] = lambda ctx: returned

    result = lab_runner.fill({"trigger": "t"})

    [(hook, message)] = failures_of(result)
    assert (hook, message) == ("field:trigger", COULD_NOT_CHECK)
    assert "not an effect" in fault_of(lab_runner, "field:trigger")
    assert "derived" not in values_of(lab_runner)


def test_async_executors_are_awaited_and_their_effects_apply(runner, registry, log):
    register(registry, async_hooks(log))
    r = runner()
    r.start("async-hooks")

    r.fill({"x": "sun"})
    result = r.fill({"z": "zz"})

    assert values_of(r)["y"] == "derived from sun"
    assert failures_of(result) == [("field:z", COULD_NOT_CHECK)]
    assert fault_of(r, "field:z").startswith("RuntimeError: async boom (")


def test_async_executors_run_when_the_runner_is_called_from_inside_an_event_loop(runner, registry, log):
    register(registry, async_hooks(log))
    r = runner()

    async def host():
        r.start("async-hooks", seed={"x": "moon"})

    asyncio.run(host())

    assert values_of(r)["y"] == "derived from moon"


def test_every_hook_of_a_round_sees_the_values_and_state_of_the_evaluation_that_fired_it(lab_runner, log):
    log.behaviours["field:trigger"] = Patch({"derived": "from trigger"})
    lab_runner.fill({"trigger": "t", "extra": "ok"})

    trigger_ctx, extra_ctx = log.contexts[0], log.contexts[1]
    assert dict(extra_ctx.values) == {"trigger": "t", "extra": "ok"}  # the patch lands in a later round
    assert extra_ctx.state.step_complete("one") and extra_ctx.state.step_complete("two")
    assert extra_ctx.state.complete is True
    assert trigger_ctx.values is extra_ctx.values or dict(trigger_ctx.values) == dict(extra_ctx.values)


def test_executors_see_only_live_valid_values(lab_runner, log):
    lab_runner.fill({"trigger": "t", "amount": "three"})  # amount is stored, but invalid

    assert dict(log.contexts[0].values) == {"trigger": "t"}


def test_each_hook_gets_the_instance_re_read_after_the_hook_before_it(lab_runner, log):
    result = lab_runner.fill({"trigger": "t", "extra": "ok"})

    extra_ctx = log.contexts[1]
    assert extra_ctx.instance.dispatches[f"{result.instance_id}:field:trigger:1"].status == "ok"


# --------------------------------------------------------------------------- failures clear


def test_a_failure_stays_open_until_the_same_hook_later_runs_without_failing(lab_runner, log):
    log.behaviours["field:trigger"] = lambda ctx: Fail("no such code") if ctx.values["trigger"] == "bad" else None
    lab_runner.fill({"trigger": "bad"})

    later = lab_runner.fill({"extra": "ok"})  # another hook succeeding does not clear it
    assert failures_of(later) == [("field:trigger", "no such code")]
    assert failures_of(lab_runner.status()) == [("field:trigger", "no such code")]

    lab_runner.retract("trigger")
    fixed = lab_runner.fill({"trigger": "good"})

    assert failures_of(fixed) == []
    assert failures_of(lab_runner.status()) == []
    dispatches = lab_runner.open_instance().dispatches
    assert [d.status for k, d in dispatches.items() if d.hook_id == "field:trigger"] == ["failed", "ok"]


def test_for_each_hook_the_latest_finished_record_decides_and_the_later_one_wins_a_tie():
    from formctl.forms.failures import open_failures
    from formctl.forms.instance import DispatchState, Instance

    def failures(*records: tuple[str, str, str, str | None]) -> list[tuple[str, str]]:
        dispatches = {
            f"k{i}": DispatchState(hook, status, 1, at, error=error)
            for i, (hook, status, at, error) in enumerate(records)
        }
        instance = Instance(id="i", def_id="f", def_version=1, subject="s", dispatches=dispatches)
        return [(f.hook_id, f.message) for f in open_failures(instance)]

    assert failures(("field:a", "ok", "t1", None), ("field:b", "running", "t1", None)) == []
    assert failures(("field:a", "failed", "t1", "no"), ("field:a", "ok", "t2", None)) == []
    assert failures(("field:a", "ok", "t1", None), ("field:a", "failed", "t2", "no")) == [("field:a", "no")]
    assert failures(("field:a", "failed", "t1", "no"), ("field:a", "ok", "t1", None)) == []  # a tie: written later
    assert failures(("field:a", "ok", "t1", None), ("field:a", "failed", "t1", "no")) == [("field:a", "no")]
    assert failures(("field:a", "failed", "t2", "no"), ("field:a", "ok", "t1", None)) == [("field:a", "no")]
    assert failures(("field:a", "failed", "t1", "no"), ("field:a", "running", "t2", None)) == [("field:a", "no")]
    assert failures(
        ("field:b", "failed", "t2", "late"), ("field:a", "failed", "t1", "early"), ("field:c", "ok", "t3", None)
    ) == [("field:a", "early"), ("field:b", "late")]


def test_an_open_failure_is_listed_in_tier0(lab_runner, log):
    log.behaviours["field:trigger"] = Fail("no such code")
    lab_runner.fill({"trigger": "bad"})

    assert lab_runner.tier0().splitlines()[-1] == "blocked: Trigger: no such code"


# --------------------------------------------------------------------------- effects and precedence


def test_patches_of_one_round_merge_and_a_later_hook_overwrites_an_earlier_one(lab_runner, log):
    log.behaviours["field:trigger"] = Patch({"derived": "from trigger", "auto": "from trigger"})
    log.behaviours["field:extra"] = Patch({"derived": "from extra"})

    lab_runner.fill({"trigger": "t", "extra": "ok"})

    values = values_of(lab_runner)
    assert values["derived"] == "from extra"
    assert values["auto"] == "from trigger"


def test_patch_keys_resolve_through_labels_and_case(lab_runner, log):
    log.behaviours["field:trigger"] = Patch({"Derived value": "by label", "AUTO": "by case"})

    lab_runner.fill({"trigger": "t"})

    assert values_of(lab_runner) == {"trigger": "t", "derived": "by label", "auto": "by case"}


def test_a_patch_naming_an_unknown_field_fails_the_hook_and_writes_none_of_it(lab_runner, log):
    log.behaviours["field:trigger"] = Patch({"derived": "kept?", "nope": 1})

    result = lab_runner.fill({"trigger": "t"})

    assert failures_of(result) == [("field:trigger", COULD_NOT_CHECK)]
    assert fault_of(lab_runner, "field:trigger") == 'Patch names unknown field "nope".'
    assert values_of(lab_runner) == {"trigger": "t"}


def test_the_last_jump_of_a_list_wins(lab_runner, log):
    log.behaviours["field:trigger"] = [Jump("two"), Jump("one")]

    view = lab_runner.fill({"trigger": "t"}).view.to_dict()

    assert view["step"]["id"] == "one"
    assert view["revisiting"] is True


def test_a_jump_resolves_a_step_title(lab_runner, log):
    log.behaviours["field:extra"] = Jump("follow up")  # the title of step "two", loosely

    lab_runner.fill({"extra": "ok"})

    assert lab_runner.open_instance().open_step_override == "two"
    assert lab_runner.status().to_dict()["step"]["id"] == "two"


def test_a_jump_to_an_unknown_step_fails_its_hook_and_keeps_an_earlier_valid_jump(lab_runner, log):
    log.behaviours["field:trigger"] = Jump("one")
    log.behaviours["field:extra"] = Jump("nowhere")

    result = lab_runner.fill({"trigger": "t", "extra": "ok"})

    assert failures_of(result) == [("field:extra", COULD_NOT_CHECK)]
    assert fault_of(lab_runner, "field:extra") == 'Jump to unknown step "nowhere".'
    assert lab_runner.open_instance().open_step_override == "one"


def test_a_patch_into_the_step_jumped_to_releases_the_jump(lab_runner, log):
    log.behaviours["field:trigger"] = [Patch({"derived": "z"}), Jump("one")]

    lab_runner.fill({"trigger": "t"})

    assert lab_runner.open_instance().open_step_override is None
    assert lab_runner.status().to_dict()["step"]["id"] == "two"


def test_a_patch_into_another_step_keeps_the_jump(lab_runner, log):
    log.behaviours["field:trigger"] = [Patch({"auto": "z"}), Jump("one")]

    lab_runner.fill({"trigger": "t"})

    assert lab_runner.open_instance().open_step_override == "one"
    assert lab_runner.status().to_dict()["revisiting"] is True


# --------------------------------------------------------------------------- Terminate wins outright


def test_terminate_stops_the_round_drops_its_patches_and_the_form_never_completes(lab_runner, log):
    log.behaviours["field:trigger"] = Patch({"derived": "p"})
    log.behaviours["field:extra"] = Terminate("Not eligible: outside the scheme.")

    result = lab_runner.fill({"trigger": "t", "extra": "ok"})

    assert log.hook_ids == ["field:trigger", "field:extra"]  # no step, checkpoint or form on_complete
    view = result.view.to_dict()
    assert view["status"] == "abandoned"
    assert view["complete"] is False
    assert view["closed_reason"] == "Not eligible: outside the scheme."
    stored = lab_runner.open_instance(result.instance_id)
    assert stored.completed_at is None
    assert stored.closed_reason == "Not eligible: outside the scheme."
    assert "derived" not in stored.entries
    assert lab_runner.status(instance_id=result.instance_id).to_dict()["complete"] is False


def test_a_terminated_instance_keeps_its_answers_and_takes_no_more(lab_runner, log):
    log.behaviours["field:extra"] = Terminate("Stop.")
    result = lab_runner.fill({"trigger": "t", "extra": "ok"})

    with pytest.raises(FormError) as err:
        lab_runner.fill({"derived": "late"}, instance_id=result.instance_id)

    assert err.value.code == "form_closed"
    assert lab_runner.open_instance() is None  # no longer the subject's open form
    assert lab_runner.open_instance(result.instance_id).in_force_values() == {"trigger": "t", "extra": "ok"}
    assert lab_runner.tier0() == ""


@pytest.mark.parametrize("how", ["answers", "Complete()"])
def test_a_form_on_complete_that_terminates_leaves_the_form_never_completed(lab_runner, log, how):
    log.behaviours["form"] = Terminate("Ineligible after review.")
    if how == "Complete()":
        log.behaviours["field:trigger"] = Complete()
        result = lab_runner.fill({"trigger": "t"})
    else:
        result = lab_runner.fill({"trigger": "t", "extra": "ok"})

    stored = lab_runner.open_instance(result.instance_id)
    assert (stored.status, stored.closed_reason, stored.completed_at) == ("abandoned", "Ineligible after review.", None)
    assert result.view.to_dict()["complete"] is False


def test_the_last_terminate_of_a_list_gives_the_reason(lab_runner, log):
    log.behaviours["field:trigger"] = [Terminate("first"), Terminate("second")]

    result = lab_runner.fill({"trigger": "t"})

    assert result.view.to_dict()["closed_reason"] == "second"


def test_terminate_beats_a_forced_completion_and_clears_a_jump(lab_runner, log):
    log.behaviours["field:trigger"] = [Complete(), Jump("one"), Terminate("done here")]

    result = lab_runner.fill({"trigger": "t"})

    stored = lab_runner.open_instance(result.instance_id)
    assert (stored.status, stored.completed_at, stored.open_step_override) == ("abandoned", None, None)
    assert result.view.to_dict()["complete"] is False


# --------------------------------------------------------------------------- Complete() is sticky


def test_complete_forces_the_form_complete_and_announces_it_once(lab_runner, log):
    log.behaviours["field:trigger"] = Complete()

    view = lab_runner.fill({"trigger": "t"}).view.to_dict()  # extra, a required field, is still empty

    assert (view["status"], view["complete"]) == ("complete", True)
    assert log.keys.count("form:1") == 1 and "form:2" not in log.keys
    assert lab_runner.open_instance().completed_at is not None
    assert lab_runner.tier0() == ""


def test_a_forced_completion_stays_complete_through_later_corrections(lab_runner, log):
    log.behaviours["field:trigger"] = Complete()
    lab_runner.fill({"trigger": "t"})

    lab_runner.fill({"derived": "d", "amount": "three"})  # an invalid *optional* answer
    lab_runner.revise("trigger", "u")
    lab_runner.retract("derived")

    assert lab_runner.status().status == "complete"
    assert [k for k in log.keys if k.startswith("form")] == ["form:1"]


def test_a_correction_that_makes_a_required_field_invalid_reopens_a_forced_completion(lab_runner, log):
    log.behaviours["field:trigger"] = Complete()
    lab_runner.fill({"trigger": "t"})

    lab_runner.fill({"extra": "x"})  # required, and too short

    assert lab_runner.status().status == "active"
    assert lab_runner.status().to_dict()["complete"] is False

    lab_runner.revise("extra", "xy")  # now genuinely complete: a new rising edge, announced again

    assert lab_runner.status().status == "complete"
    assert [k for k in log.keys if k.startswith("form")] == ["form:1", "form:2"]


def test_retracting_a_required_answer_keeps_a_forced_completion(lab_runner, log):
    log.behaviours["field:trigger"] = Complete()
    lab_runner.fill({"trigger": "t"})

    lab_runner.retract("trigger")  # empty is not invalid: only reopen or an invalid answer undo it

    assert lab_runner.status().status == "complete"


@pytest.mark.parametrize("how", ["answers", "Complete()"])
def test_patches_from_the_form_on_complete_are_written(lab_runner, log, how):
    log.behaviours["form"] = Patch({"auto": "filed"})
    if how == "Complete()":
        log.behaviours["field:trigger"] = Complete()
        lab_runner.fill({"trigger": "t"})
    else:
        lab_runner.fill({"trigger": "t", "extra": "ok"})

    assert lab_runner.open_instance().in_force_values()["auto"] == "filed"
    assert lab_runner.status().status == "complete"


def test_reopen_returns_a_forced_completion_to_active(lab_runner, log):
    log.behaviours["field:trigger"] = Complete()
    lab_runner.fill({"trigger": "t"})

    view = lab_runner.reopen().to_dict()

    assert (view["status"], view["complete"]) == ("active", False)
    assert lab_runner.fill({"derived": "d"}).view.status == "active"
