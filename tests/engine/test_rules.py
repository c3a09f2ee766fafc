"""Rules that always hold (docs/engine.md, "Checks", "Derived values", "Executors that follow
corrections"): a check holds the form while the live values break it, a derived field follows its
inputs, and an executor declared ``rerun="on_change"`` runs again when what it covers changes."""

from __future__ import annotations

from datetime import date

import pytest

from example_forms import HookLog
from formctl import (
    FormDefinitionError,
    FormError,
    FormRegistry,
    FormRunner,
    MemoryAdapter,
    Patch,
    define_form,
)
from formctl.forms.acts import acts


def runner_for(*forms, actor: str = "agent") -> FormRunner:
    registry = FormRegistry()
    for form in forms:
        registry.register(form.id, name=form.name, description="", load=lambda form=form: form)
    return FormRunner(MemoryAdapter(), registry=registry, subject="s", actor=actor)


def trip(*, review: bool = False, form_check: bool = False):
    """Dates in order (a step's check), a cost derived from miles, a budget check on the form."""
    builder = (
        define_form("trip", name="Trip", review=review)
        .step("dates", title="Dates")
        .field("out", date, label="Out")
        .field("back", date, label="Back")
        .field("note", str | None, label="Note")
        .check(
            "in-order", lambda v: v["back"] >= v["out"], "The return is before the departure.", fields=("out", "back")
        )
        .step("travel", title="Travel")
        .field("mode", str, label="Mode")
        .field("miles", int | None, label="Miles", when=lambda v, s: v["mode"] == "car")
        .field("cost", float | None, label="Cost", derive=lambda v: round(v["miles"] * 0.45, 2))
        .field("budget", float, label="Budget")
    )
    if form_check:
        builder = builder.on_complete(lambda ctx: None).check(
            "within-budget", lambda v: (v["cost"] or 0) <= v["budget"], "Over budget.", fields=("budget", "cost")
        )
    return builder.build()


DONE = {"out": "2026-03-02", "back": "2026-03-04", "mode": "car", "miles": 120, "budget": 500.0}


# --------------------------------------------------------------------------- checks


def test_a_failing_check_holds_its_step_and_says_its_message_where_the_form_is_read():
    runner = runner_for(trip())
    started = runner.start("trip", {**DONE, "back": "2026-03-01"})

    compiled, instance, ev = runner.evaluation()
    view = started.to_dict()
    assert not ev.step_complete[0] and ev.open_step == 0 and instance.status == "active"
    assert view["checks_failed"] == [
        {"check": "in-order", "message": "The return is before the departure.", "fields": ["out", "back"]}
    ]
    rows = {row["id"]: row for row in view["fields"]}
    assert rows["back"]["failed_check"] == "The return is before the departure." and rows["back"]["ask"] is True
    assert "failed_check" not in rows["note"]
    assert "held: The return is before the departure. · ask again: Out, Back" in runner.tier0()


def test_a_correction_that_makes_a_check_pass_clears_it_at_once_and_one_that_breaks_it_holds_again():
    runner = runner_for(trip())
    runner.start("trip", DONE)
    assert runner.status().status == "complete"

    broken = runner.fill({"back": "2026-03-01"})
    assert broken.view.status == "active" and broken.view.checks_failed
    mended = runner.fill({"back": "2026-03-05"})
    assert mended.view.status == "complete" and not mended.view.checks_failed
    assert [a.act for a in acts(runner.open_instance(mended.instance_id))].count("reopen") == 1


def test_a_check_waits_for_the_required_answers_it_reads():
    runner = runner_for(trip())
    runner.start("trip", {"back": "2026-03-01"})
    assert runner.evaluation()[2].failed_checks == []  # "out" not given yet: nothing to compare
    runner.fill({"out": "2026-03-02"})
    assert [c.id for c in runner.evaluation()[2].failed_checks] == ["in-order"]


def test_a_check_with_a_when_gate_applies_only_while_it_holds():
    form = (
        define_form("gated", name="Gated")
        .step("s", title="S")
        .field("kind", str, label="Kind")
        .field("n", int, label="N")
        .check(
            "small",
            lambda v: v["n"] < 10,
            "Too big for a small one.",
            fields=("n",),
            when=lambda v, s: v["kind"] == "small",
        )
        .build()
    )
    runner = runner_for(form)
    runner.start("gated", {"kind": "big", "n": 50})
    assert runner.status().status == "complete"
    runner.fill({"kind": "small"})
    assert runner.status().checks_failed[0].message == "Too big for a small one."


def test_a_check_of_the_form_holds_only_the_form_and_opens_the_step_of_what_it_reads():
    runner = runner_for(trip(form_check=True))
    runner.start("trip", {**DONE, "miles": 2000, "budget": 100.0})

    compiled, instance, ev = runner.evaluation()
    assert all(ev.step_complete) and not ev.complete and instance.status == "active"
    assert ev.open_step == 1  # budget's step: the conversation asks there
    assert runner.tier0().splitlines()[-1] == "held: Over budget. · ask again: Budget, Cost"


def test_submit_is_refused_with_the_checks_message_while_a_check_fails():
    runner = runner_for(trip(review=True))
    runner.start("trip", DONE)
    assert runner.status().status == "ready"
    runner.fill({"out": "2026-03-09"})

    with pytest.raises(FormError) as refused:
        runner.submit()
    assert refused.value.code == "check_failed"
    assert refused.value.message == "Not ready to send: The return is before the departure."


def test_a_host_correction_that_breaks_a_complete_form_needs_reopen_and_is_recorded():
    runner = runner_for(trip(), actor="host")
    runner.start("trip", DONE)
    runner.reopening = False  # a host command without --reopen

    with pytest.raises(FormError) as refused:
        runner.fill({"back": "2026-03-01"})
    assert refused.value.code == "needs_reopen"
    assert runner.status().status == "complete"
    runner.reopening = True
    runner.fill({"back": "2026-03-01"})
    instance = runner.open_instance()
    assert instance.status == "active"
    assert [a.detail for a in acts(instance) if a.act == "reopen"] == ["complete → active (a change)"]


def test_a_check_whose_test_raises_is_a_defect_and_the_write_is_refused():
    form = (
        define_form("buggy", name="Buggy")
        .step("s", title="S")
        .field("n", int, label="N")
        .check("boom", lambda v: 1 / 0, "Never said.", fields=("n",))
        .build()
    )
    runner = runner_for(form)
    with pytest.raises(FormDefinitionError, match='check "boom" threw'):
        runner.start("buggy", {"n": 1})


def test_a_message_worded_from_the_values_says_them():
    form = (
        define_form("worded", name="Worded")
        .step("s", title="S")
        .field("n", int, label="N")
        .check("small", lambda v: v["n"] < 10, lambda v: f"{v['n']} is 10 or more.", fields=("n",))
        .build()
    )
    runner = runner_for(form)
    assert runner.start("worded", {"n": 12}).view.checks_failed[0].message == "12 is 10 or more."


@pytest.mark.parametrize(
    ("build", "words"),
    [
        (lambda b: b.check("c", lambda v: True, "m"), "before any step"),
        (
            lambda b: b.step("s", title="S").field("n", int, label="N").check("c", lambda v: True, "m", fields=("m",)),
            "does not declare",
        ),
        (
            lambda b: b.step("s", title="S").field("n", int, label="N").check("c", lambda v: True, " "),
            "needs a message",
        ),
        (
            lambda b: (
                b.step("s", title="S")
                .field("n", int, label="N")
                .check("c", lambda v: True, "m")
                .check("c", lambda v: True, "m")
            ),
            "duplicate check ids",
        ),
        (
            lambda b: b.step("s", title="S").field("n", int, label="N", derive=lambda v: 1, source="person"),
            "cannot also have",
        ),
        (lambda b: b.step("s", title="S").field("n", int, label="N", rerun="on_change"), "no executor"),
        (
            lambda b: b.step("s", title="S", on_complete=lambda c: None, rerun="always").field("n", int, label="N"),
            "on_change",
        ),
    ],
)
def test_a_malformed_rule_is_a_definition_error(build, words):
    with pytest.raises(FormDefinitionError, match=words):
        build(define_form("bad", name="Bad")).build()


# --------------------------------------------------------------------------- derived values


def test_a_derived_value_follows_its_inputs_as_an_engine_revision_naming_them():
    runner = runner_for(trip())
    iid = runner.start("trip", DONE).instance_id
    runner.fill({"miles": 200})

    assert runner.evaluation()[2].values["cost"] == 90.0
    history = runner.history("cost").to_dict()["revisions"]
    assert [r["value"] for r in history] == [54.0, 90.0]
    assert [r["provenance"]["kind"] for r in history] == ["derived", "derived"]
    miles = runner.open_instance(iid).entries["miles"].revisions
    assert history[-1]["provenance"]["inputs"] == f"miles@{miles[-1].seq}"


def test_undo_and_redo_move_the_input_and_the_derived_value_follows():
    runner = runner_for(trip())
    runner.start("trip", DONE)
    runner.fill({"miles": 200})

    undone = runner.undo()  # the miles, not the cost the engine wrote after them
    assert undone.moved.id == "miles" and runner.evaluation()[2].values["cost"] == 54.0
    runner.redo()
    assert runner.evaluation()[2].values["cost"] == 90.0
    assert runner.status().to_dict().get("undo_would") == "miles → 120"


def test_a_derived_value_is_held_while_an_input_is_not_live_and_comes_back_with_it():
    runner = runner_for(trip())
    runner.start("trip", DONE)
    runner.fill({"mode": "rail"})  # miles no longer apply
    ev = runner.evaluation()[2]
    assert ev.field_status("cost") == "held" and "cost" not in ev.values
    runner.fill({"mode": "car"})
    assert runner.evaluation()[2].values["cost"] == 54.0
    assert len(runner.history("cost").revisions) == 1  # the same value: nothing new written


@pytest.mark.parametrize(
    "act",
    [
        lambda r: r.fill({"cost": 3.0}),
        lambda r: r.revise("cost", 3.0),
        lambda r: r.retract("cost"),
        lambda r: r.undo("cost"),
        lambda r: r.redo("Cost"),
    ],
)
def test_nobody_writes_a_derived_field(act):
    runner = runner_for(trip())
    runner.start("trip", DONE)
    with pytest.raises(FormError) as refused:
        act(runner)
    assert refused.value.code == "derived_field"
    assert refused.value.message == "Cost is worked out from other answers; it can't be set, it follows them."
    assert runner.evaluation()[2].values["cost"] == 54.0


def test_a_fill_with_other_values_keeps_them_and_lists_the_derived_one_as_refused():
    runner = runner_for(trip())
    runner.start("trip", DONE)
    result = runner.fill({"cost": 3.0, "note": "by car"}).to_dict()
    assert result["captured"] == ["note"]
    assert result["rejected"] == [
        {
            "field": "cost",
            "message": "Cost is worked out from other answers; it can't be set, it follows them.",
            "code": "derived_field",
        }
    ]


def test_an_executor_patching_a_derived_field_fails_and_patches_nothing():
    log = HookLog({"field:note": Patch({"cost": 1.0})})
    form = (
        define_form("patchy", name="Patchy")
        .step("s", title="S")
        .field("n", int, label="N")
        .field("note", str | None, label="Note", on_fill=log.hook("field:note"))
        .field("cost", float | None, label="Cost", derive=lambda v: v["n"] * 2.0)
        .build()
    )
    runner = runner_for(form)
    result = runner.start("patchy", {"n": 2, "note": "x"})
    assert runner.evaluation()[2].values["cost"] == 4.0
    assert [f.hook_id for f in result.failures] == ["field:note"]  # the person reads "couldn't be checked"
    (record,) = [r for r in runner.open_instance().dispatches.values() if r.hook_id == "field:note"]
    assert record.detail == 'Patch names "cost", which the form derives from other answers: nobody sets it.'


def test_a_migration_recomputes_a_derived_value_with_the_new_function():
    adapter = MemoryAdapter()
    v1 = trip()
    registry = FormRegistry().register("trip", name="Trip", description="", load=lambda: v1)
    under_way = {k: v for k, v in DONE.items() if k != "budget"}  # open: a complete one keeps its version
    iid = FormRunner(adapter, registry=registry, subject="s").start("trip", under_way).instance_id

    v2 = (
        define_form("trip", name="Trip", version=2, migrate=lambda values, version: values)
        .step("dates", title="Dates")
        .field("out", date, label="Out")
        .field("back", date, label="Back")
        .step("travel", title="Travel")
        .field("mode", str, label="Mode")
        .field("miles", int | None, label="Miles")
        .field("cost", float | None, label="Cost", derive=lambda v: round(v["miles"] * 0.5, 2))
        .field("budget", float, label="Budget")
        .build()
    )
    registry = FormRegistry().register("trip", name="Trip", description="", load=lambda: v2)
    moved = FormRunner(adapter, registry=registry, subject="s").migrate(iid)
    assert moved.to_dict()["migrated"] == {"from": 1, "to": 2}
    assert "cost" not in moved.to_dict().get("dropped", {})
    history = FormRunner(adapter, registry=registry, subject="s").history("cost", iid).to_dict()["revisions"]
    assert [r["value"] for r in history] == [54.0, 60.0]


def test_values_given_with_a_resolution_recompute_a_derived_value():
    form = (
        define_form("approved", name="Approved")
        .step("s", title="S")
        .field("miles", int, label="Miles")
        .field("cost", float | None, label="Cost", derive=lambda v: v["miles"] * 1.0)
        .checkpoint("far", when=lambda v, s: v["miles"] > 100, blocking=True)
        .build()
    )
    runner = runner_for(form)
    runner.start("approved", {"miles": 300})
    assert runner.status().status == "awaiting"
    runner.resolve_checkpoint(values={"miles": 90}, reason="shorter route")
    assert runner.evaluation()[2].values["cost"] == 90.0


# --------------------------------------------------------------------------- executors that follow corrections


def lookup_form(log: HookLog, rerun: str | None, step_rerun: str | None = None):
    return (
        define_form("lookup", name="Lookup")
        .step("s", title="S", on_complete=log.hook("step:s"), rerun=step_rerun)
        .field("nights", int, label="Nights", on_fill=log.hook("field:nights"), rerun=rerun)
        .field("quote", int | None, label="Quote")
        .build()
    )


def test_an_executor_declared_rerun_on_change_runs_again_with_a_new_occurrence_when_its_value_changes():
    log = HookLog({"field:nights": lambda ctx: Patch({"quote": ctx.values["nights"] * 80})})
    runner = runner_for(lookup_form(log, "on_change"))
    runner.start("lookup", {"nights": 2})
    runner.fill({"nights": 3})
    runner.fill({"nights": 3})  # the same value again: no change, no run

    assert log.keys == ["field:nights:1", "step:s:1", "field:nights:2"]  # the step stays complete: no rerun
    assert runner.evaluation()[2].values["quote"] == 240


def test_by_default_an_executor_runs_on_its_rising_edge_only():
    log = HookLog({"field:nights": lambda ctx: Patch({"quote": ctx.values["nights"] * 80})})
    runner = runner_for(lookup_form(log, None))
    runner.start("lookup", {"nights": 2})
    runner.fill({"nights": 3})

    assert log.keys == ["field:nights:1", "step:s:1"]
    assert runner.evaluation()[2].values["quote"] == 160  # the effect of the first run stands


def test_a_steps_on_complete_declared_rerun_on_change_runs_again_when_an_answer_of_the_step_changes():
    log = HookLog()
    runner = runner_for(lookup_form(log, None, "on_change"))
    runner.start("lookup", {"nights": 2})
    runner.fill({"quote": 100})  # an optional answer of the step, given: a change while complete
    runner.fill({"nights": 2})  # the same value: no change
    runner.fill({"nights": 4})

    assert [k for k in log.keys if k.startswith("step:")] == ["step:s:1", "step:s:2", "step:s:3"]
    assert len({ctx.idempotency_key for ctx in log.contexts}) == len(log.contexts)
