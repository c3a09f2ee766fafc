"""Evaluation (docs/engine.md, 'Liveness and applicability', 'Completion and the open step'): parse,
the liveness fixpoint, per-field status, completion, the open step, gate defects."""

from __future__ import annotations

import pytest

import example_forms
from example_forms import RETRACT, build_instance
from formctl import FormDefinitionError, define_form
from formctl.forms.evaluate import evaluate


def _status(form, ev) -> dict[str, str]:
    return {f.id: ev.status[f.order] for f in form.fields}


def _applicable(form, ev) -> dict[str, bool]:
    return {f.id: ev.applicable[f.order] for f in form.fields}


def _open_step_id(form, ev):
    return None if ev.open_step is None else form.steps[ev.open_step].id


# --------------------------------------------------------------------------- parse


def test_only_the_revision_in_force_is_parsed():
    form = example_forms.basic()
    ev = evaluate(form, build_instance(form, {"age": ["forty", 40]}))
    assert _status(form, ev)["age"] == "filled"
    assert ev.values["age"] == 40


def test_a_retracted_answer_is_empty_whatever_came_before():
    form = example_forms.basic()
    ev = evaluate(form, build_instance(form, {"age": [40, RETRACT]}))
    assert _status(form, ev)["age"] == "empty"
    assert "age" not in ev.values


def test_a_cursor_of_minus_one_means_no_answer():
    form = example_forms.basic()
    ev = evaluate(form, build_instance(form, {"age": [40]}, cursors={"age": -1}))
    assert _status(form, ev)["age"] == "empty"


def test_values_hold_the_parsed_output_not_the_raw_value():
    from datetime import date

    form = define_form("p", name="P").step("s", title="S").field("when", date, label="When").build()
    ev = evaluate(form, build_instance(form, {"when": "2026-03-04"}))
    assert ev.values["when"] == date(2026, 3, 4)


# --------------------------------------------------------------------------- per-field status


def test_each_field_status_follows_the_table():
    form = example_forms.pi_intake()
    ev = evaluate(
        form,
        build_instance(
            form,
            {
                "fullName": "Dana Reeve",  # filled
                "email": "not an email",  # invalid
                "incidentType": "premises",
                "vehicleCount": "two",  # held (gate false), and invalid too
            },
        ),
    )
    assert _status(form, ev) == {
        "fullName": "filled",
        "email": "invalid",
        "phone": "empty",
        "incidentType": "filled",
        "incidentDate": "empty",
        "vehicleCount": "held",
        "treated": "empty",
    }
    assert ev.values == {"fullName": "Dana Reeve", "incidentType": "premises"}
    assert ev.held == {"vehicleCount": "two"}
    assert set(ev.errors) == {"email"}
    assert ev.live == {"fullName", "incidentType"}


def test_a_field_with_no_answer_still_has_an_applicability():
    form = example_forms.pi_intake()
    ev = evaluate(form, build_instance(form, {"incidentType": "vehicle"}))
    assert _applicable(form, ev)["vehicleCount"] is True
    ev = evaluate(form, build_instance(form, {"incidentType": "medical"}))
    assert _applicable(form, ev)["vehicleCount"] is False


def test_invalid_answers_are_invisible_to_gates():
    form = example_forms.pi_intake()
    ev = evaluate(form, build_instance(form, {"incidentType": "car", "vehicleCount": 2}))
    assert _status(form, ev)["incidentType"] == "invalid"
    assert _status(form, ev)["vehicleCount"] == "held"


# --------------------------------------------------------------------------- liveness fixpoint


def test_nothing_excluded_takes_one_pass():
    form = example_forms.chain()
    ev = evaluate(form, build_instance(form, {"a": "yes", "b": "yes", "c": "yes"}))
    assert ev.passes == 1
    assert ev.held == {}


def test_the_verified_multi_pass_example_holds_b_and_c_and_opens_d():
    # a=yes, b=yes, c=yes, then a revised to no: 3 passes; b and c held, d applicable.
    form = example_forms.chain()
    ev = evaluate(form, build_instance(form, {"a": ["yes", "no"], "b": "yes", "c": "yes"}))
    assert ev.passes == 3
    assert _status(form, ev) == {"a": "filled", "b": "held", "c": "held", "d": "empty"}
    assert _applicable(form, ev)["d"] is True


def test_the_negation_gate_hazard_holds_d_once_it_is_written():
    # In the first pass c is still live, so d's gate (not c) is false and d is excluded for good.
    form = example_forms.chain()
    ev = evaluate(form, build_instance(form, {"a": ["yes", "no"], "b": "yes", "c": "yes", "d": "dd"}))
    assert _status(form, ev)["d"] == "held"
    assert ev.held == {"b": "yes", "c": "yes", "d": "dd"}


def test_orphaned_answers_come_back_when_their_gate_holds_again():
    form = example_forms.chain()
    ev = evaluate(form, build_instance(form, {"a": ["yes", "no", "yes"], "b": "yes", "c": "yes"}))
    assert _status(form, ev) == {"a": "filled", "b": "filled", "c": "filled", "d": "empty"}
    assert _applicable(form, ev)["d"] is False


def test_held_answers_come_back_through_the_runner(runner):
    r = runner()
    r.start("chain", {"a": "yes", "b": "yes", "c": "yes"})
    result = r.revise("a", "no")
    assert r.evaluation()[2].held == {"b": "yes", "c": "yes"}
    assert result.captured == ["a"]
    result = r.revise("a", "yes")
    assert r.evaluation()[2].held == {}
    # b and c went live because of another field: that is not "captured".
    assert result.captured == ["a"]


def test_an_answer_given_before_it_applies_is_held(runner):
    r = runner()
    r.start("chain")
    result = r.fill({"b": "yes"})
    assert result.held == ["b"]
    assert result.captured == []
    assert "held_note" in result.to_dict()


# --------------------------------------------------------------------------- completion and optionality


def test_a_step_is_complete_when_its_required_applicable_fields_are_filled():
    form = example_forms.basic()
    ev = evaluate(form, build_instance(form, {"name": "Dana", "age": 40}))
    assert ev.step_complete == [True, False]
    assert ev.complete is False


def test_an_invalid_required_answer_leaves_its_step_incomplete():
    form = example_forms.basic()
    ev = evaluate(form, build_instance(form, {"name": "Dana", "age": -1}))
    assert ev.step_complete[0] is False


def test_optional_fields_never_hold_up_a_step_or_the_form():
    form = example_forms.optionality()
    ev = evaluate(form, build_instance(form, {"req_int": 2}))
    assert ev.step_complete == [True, True, True]
    assert ev.complete is True


def test_all_optional_and_fieldless_steps_are_complete_from_the_start():
    form = example_forms.optionality()
    ev = evaluate(form, build_instance(form))
    assert ev.step_complete == [False, True, True]


def test_an_optional_field_with_no_entry_never_appears_in_values():
    form = example_forms.optionality()
    ev = evaluate(form, build_instance(form, {"req_int": 2}))
    assert ev.values == {"req_int": 2}


def test_an_optional_field_accepts_an_explicit_null_only_through_stored_data():
    # Blanks never reach the log through the runner (they mean "leave it alone"); a stored null still parses.
    form = example_forms.optionality()
    ev = evaluate(form, build_instance(form, {"opt_int": None}))
    assert _status(form, ev)["opt_int"] == "filled"


def test_requiredness_comes_only_from_whether_the_schema_accepts_none():
    form = example_forms.optionality()
    assert {f.id: f.required for f in form.fields} == {
        "req_int": True,
        "opt_int": False,
        "opt_text": False,
        "opt_bool": False,
        "maybe": False,
    }
    assert form.field_by_id["opt_int"].type == "integer >= 1"


def test_a_step_whose_last_required_field_becomes_inapplicable_is_complete():
    form = example_forms.pi_intake()
    answers = {"incidentType": "vehicle", "incidentDate": "2026-01-01", "treated": True}
    ev = evaluate(form, build_instance(form, answers))
    assert ev.step_complete[1] is False
    ev = evaluate(form, build_instance(form, {**answers, "incidentType": "medical"}))
    assert ev.step_complete[1] is True


def test_form_completion_ignores_step_gates():
    form = example_forms.gated_steps()
    ev = evaluate(form, build_instance(form, {"k": "shut"}))
    assert ev.step_open == [False, False]
    assert ev.complete is False  # step one's x still counts, although its step is gated off
    ev = evaluate(form, build_instance(form, {"k": "shut", "x": "1"}))
    assert ev.complete is True


def test_a_step_gate_does_not_affect_completion():
    form = example_forms.opt()
    ev = evaluate(form, build_instance(form, {"q": "no", "r": "written anyway"}))
    assert ev.step_open[2] is False
    assert ev.step_complete[2] is True


def test_a_checkpoint_is_active_while_its_gate_holds():
    form = example_forms.blk()
    assert evaluate(form, build_instance(form, {"x": "hit"})).checkpoint_active == [True]
    assert evaluate(form, build_instance(form, {"x": "miss"})).checkpoint_active == [False]


# --------------------------------------------------------------------------- the open step


def test_the_open_step_is_the_first_open_incomplete_step():
    form = example_forms.opt()
    assert _open_step_id(form, evaluate(form, build_instance(form))) == "b"
    assert _open_step_id(form, evaluate(form, build_instance(form, {"q": "go"}))) == "c"


def test_a_gated_off_step_is_skipped_for_a_later_open_one():
    form = example_forms.opt()
    assert _open_step_id(form, evaluate(form, build_instance(form, {"q": "no"}))) == "d"


def test_when_every_incomplete_step_is_gated_off_the_first_incomplete_one_opens():
    form = example_forms.opt()
    ev = evaluate(form, build_instance(form, {"q": "no", "t": "done"}))
    assert _open_step_id(form, ev) == "c"
    form = example_forms.gated_steps()
    assert _open_step_id(form, evaluate(form, build_instance(form, {"k": "shut"}))) == "one"


def test_no_step_is_open_when_every_step_is_complete():
    form = example_forms.basic()
    ev = evaluate(form, build_instance(form, {"name": "Dana", "age": 4, "colour": "red", "agree": True}))
    assert ev.open_step is None
    assert ev.complete is True


def test_an_override_opens_its_step_even_when_complete_and_marks_a_revisit():
    form = example_forms.basic()
    answers = {"name": "Dana", "age": 4}
    ev = evaluate(form, build_instance(form, answers, open_step_override="one"))
    assert _open_step_id(form, ev) == "one"
    assert ev.revisiting is True


def test_an_override_of_an_incomplete_step_is_not_a_revisit():
    form = example_forms.basic()
    ev = evaluate(form, build_instance(form, {"name": "Dana", "age": 4}, open_step_override="two"))
    assert _open_step_id(form, ev) == "two"
    assert ev.revisiting is False


def test_an_override_naming_no_step_is_ignored():
    form = example_forms.basic()
    ev = evaluate(form, build_instance(form, {"name": "Dana", "age": 4}, open_step_override="gone"))
    assert _open_step_id(form, ev) == "two"
    assert ev.revisiting is False


# --------------------------------------------------------------------------- gate values and state


def test_a_gate_reading_a_declared_field_with_no_answer_gets_none():
    seen = []
    form = (
        define_form("g", name="G")
        .step("s", title="S")
        .field("x", str, label="X")
        .field("y", str, label="Y", when=lambda v, s: seen.append((v["x"], v.get("x"))) or True)
        .build()
    )
    ev = evaluate(form, build_instance(form))
    assert seen and set(seen) == {(None, None)}
    assert ev.defects == []


def test_gate_values_are_read_only():
    attempts = []

    def gate(v, s):
        try:
            v["x"] = "sneaky"
        except TypeError:
            attempts.append("refused")
        return True

    form = (
        define_form("ro", name="Ro")
        .step("s", title="S")
        .field("x", str, label="X")
        .field("y", str, label="Y", when=gate)
        .build()
    )
    ev = evaluate(form, build_instance(form, {"x": "real"}))
    assert attempts and ev.values["x"] == "real"


def test_a_gate_sees_step_completion_and_form_completion():
    form = (
        define_form("st", name="St")
        .step("a", title="A")
        .field("x", str, label="X")
        .step("b", title="B")
        .field("y", str | None, label="Y", when=lambda v, s: s.step_complete("a"))
        .field("z", str | None, label="Z", when=lambda v, s: s.step_complete("nowhere"))
        .build()
    )
    assert _applicable(form, evaluate(form, build_instance(form)))["y"] is False
    ev = evaluate(form, build_instance(form, {"x": "1"}))
    assert _applicable(form, ev) == {"x": True, "y": True, "z": False}


def test_checkpoint_fired_reads_the_stored_occurrence_counters():
    form = (
        define_form("cf", name="Cf")
        .step("s", title="S")
        .field("x", str, label="X")
        .field("y", str | None, label="Y", when=lambda v, s: s.checkpoint_fired("cp"))
        .checkpoint("cp", when=lambda v, s: v["x"] == "hit")
        .build()
    )
    assert _applicable(form, evaluate(form, build_instance(form, {"x": "hit"})))["y"] is False
    ev = evaluate(form, build_instance(form, {"x": "hit"}, occurrences={"checkpoint:cp": 1}))
    assert _applicable(form, ev)["y"] is True


# --------------------------------------------------------------------------- gate defects


def test_a_throwing_gate_counts_as_true_and_is_recorded_as_a_defect():
    form = example_forms.throwing_gate()
    ev = evaluate(form, build_instance(form, {"x": "boom", "y": "v"}))
    assert ev.defects == ['gate "y" threw: kaboom']
    assert _status(form, ev)["y"] == "filled"


def test_a_gate_reading_an_undeclared_id_is_a_defect():
    form = example_forms.undeclared_gate()
    ev = evaluate(form, build_instance(form))
    assert len(ev.defects) == 1
    assert ev.defects[0].startswith('gate "y" threw:')
    assert "nope" in ev.defects[0]


def test_step_and_checkpoint_gate_defects_name_their_gate():
    def boom(v, s):
        raise ValueError("bad gate")

    form = (
        define_form("sg", name="Sg")
        .step("s", title="S", when=boom)
        .field("x", str, label="X")
        .checkpoint("cp", when=boom)
        .build()
    )
    ev = evaluate(form, build_instance(form))
    assert ev.defects == ['gate "step-gate:s" threw: bad gate', 'gate "cp" threw: bad gate']
    assert ev.step_open == [True]
    assert ev.checkpoint_active == [True]


def test_a_throwing_gate_makes_writes_raise_while_reads_still_work(runner):
    r = runner()
    r.start("throwing-gate", {"y": "fine"})
    _, before, _ = r.evaluation()
    with pytest.raises(FormDefinitionError) as caught:
        r.fill({"x": "boom"})
    assert caught.value.code == "form_definition_error"
    assert caught.value.message == 'Form "throwing-gate" cannot be evaluated: gate "y" threw: kaboom.'
    assert caught.value.ids == ['gate "y" threw: kaboom']
    _, after, _ = r.evaluation()
    assert after.version == before.version
    assert "x" not in after.entries
    view = r.status()
    assert [row.status for row in view.fields] == ["empty", "filled"]
    assert r.tier0().startswith("[form: throwing-gate] step 1/1")


def test_a_defect_in_the_stored_instance_does_not_block_reads(runner):
    # Every evaluation of this form has the defect, so even start's first commit refuses;
    # the created (empty) instance can still be read.
    r = runner()
    with pytest.raises(FormDefinitionError):
        r.start("undeclared-gate")
    assert [row.id for row in r.status().fields] == ["x", "y"]
    assert r.inspect("outline").steps[0].id == "s"
    with pytest.raises(FormDefinitionError):
        r.fill({"x": "anything"})


# --------------------------------------------------------------------------- re-entrant gates


def test_a_gate_asking_for_its_own_step_gets_the_optimistic_answer():
    # y's gate asks whether its own step is complete. Inside that question y itself is
    # optimistically applicable, so the step reads incomplete until y is answered.
    form = example_forms.reentrant_gate()
    ev = evaluate(form, build_instance(form, {"x": "1", "y": "2"}))
    assert ev.defects == []
    assert _status(form, ev) == {"x": "filled", "y": "filled", "z": "empty"}
    assert ev.step_complete == [True, False]
    assert _open_step_id(form, ev) == "t"


def test_a_fallback_is_not_remembered_as_the_final_step_completion():
    # With only x answered, y's gate (asked with y optimistically applicable) says no, so y
    # is inapplicable; the step is then complete, and the conversation moves on to t.
    form = example_forms.reentrant_gate()
    ev = evaluate(form, build_instance(form, {"x": "1"}))
    assert ev.defects == []
    assert _applicable(form, ev)["y"] is False
    assert ev.step_complete == [True, False]
    assert _open_step_id(form, ev) == "t"


def test_a_gate_reading_form_completion_of_its_own_form_terminates():
    form = (
        define_form("fc", name="Fc")
        .step("s", title="S")
        .field("x", str, label="X")
        .field("y", str, label="Y", when=lambda v, s: s.complete)
        .build()
    )
    ev = evaluate(form, build_instance(form, {"x": "1", "y": "2"}))
    assert ev.defects == []
    assert _status(form, ev) == {"x": "filled", "y": "filled"}
    assert ev.complete is True


def test_writes_to_a_form_with_a_reentrant_gate_succeed(runner):
    r = runner()
    r.start("reentrant", {"x": "1"})
    result = r.fill({"y": "2"})
    assert result.view.step.id == "t"
