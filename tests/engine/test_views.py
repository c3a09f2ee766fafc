"""Views and fill results as the model reads them (docs/engine.md, 'Views')."""

from __future__ import annotations

import json

import pytest

from formctl import FormError, InvalidArgumentError

NUMBER_HINT = 'Send it as a JSON number, unquoted — 410, not "410".'
BOOLEAN_HINT = 'Send it as a JSON boolean, unquoted — true or false, not "yes".'


def _nulls(obj, path="$"):
    """Every JSON path whose value is None."""
    if obj is None:
        return [path]
    if isinstance(obj, dict):
        return [p for k, v in obj.items() for p in _nulls(v, f"{path}.{k}")]
    if isinstance(obj, list):
        return [p for i, v in enumerate(obj) for p in _nulls(v, f"{path}[{i}]")]
    return []


def _rows(view) -> dict[str, dict]:
    return {row["id"]: row for row in view.to_dict()["fields"]}


# --------------------------------------------------------------------------- header


def test_a_fresh_step_view_has_exactly_the_header_step_and_fields(runner):
    r = runner()
    result = r.start("pi-intake")
    out = result.to_dict()
    assert list(out) == ["instance_id", "form", "name", "status", "complete", "step", "fields"]
    assert out["instance_id"] == result.instance_id
    assert (out["form"], out["name"], out["status"], out["complete"]) == (
        "pi-intake",
        "Personal injury intake",
        "active",
        False,
    )
    assert out["step"] == {"id": "claimant", "title": "Claimant", "position": "1/2"}


def test_views_never_carry_conduct_it_lives_in_the_system_prompt(runner):
    r = runner()
    r.start("pi-intake")
    for view in (r.status(), r.inspect("outline"), r.inspect("field", "email"), r.inspect("step", "incident")):
        assert "conduct" not in view.to_dict()


def test_views_write_no_nulls_and_serialise_as_json(runner):
    r = runner()
    r.start("basic", {"name": "Dana", "age": "x", "nick": "D"})
    for view in (r.status(), r.inspect("outline"), r.inspect("step", "two")):
        out = view.to_dict()
        assert _nulls(out) == []
        json.dumps(out, ensure_ascii=False)


def test_the_complete_flag_is_the_evaluation_or_the_stored_status(runner):
    r = runner()
    result = r.start("basic", {"name": "Dana", "age": 40, "colour": "red", "agree": True})
    out = result.to_dict()
    assert (out["status"], out["complete"]) == ("complete", True)


def test_an_abandoned_instance_reads_closed_and_incomplete_and_asks_nothing(runner):
    r = runner()
    iid = r.start("basic", {"name": "Dana"}).instance_id
    r.abandon("The caller hung up.")
    out = r.status(instance_id=iid).to_dict()
    assert out["status"] == "abandoned"
    assert out["complete"] is False
    assert out["closed_reason"] == "The caller hung up."
    assert "don't ask for the remaining fields" in out["closed_note"]
    assert all(row["ask"] is False for row in out["fields"])


def test_closed_keys_are_absent_while_collecting(runner):
    r = runner()
    out = r.start("basic").to_dict()
    assert "closed_reason" not in out and "closed_note" not in out


def test_a_waiting_checkpoint_shows_blocked_on_and_the_wait_message(runner):
    r = runner()
    out = r.start("blk", {"x": "hit"}).to_dict()
    assert out["status"] == "awaiting"
    assert out["blocked_on"] == "cp"
    assert out["waiting"] == "Hold on."
    assert r.status().to_dict()["blocked_on"] == "cp"


def test_an_open_failure_is_listed_as_hook_and_message(runner):
    r = runner()
    out = r.start("f", {"x": "bad"}).to_dict()
    assert out["failures"] == [{"hook": "field:x", "message": "boom"}]


def test_revisiting_is_true_only_after_a_jump_back(runner):
    r = runner()
    out = r.start("rv", {"name": "Ann"}).to_dict()
    assert "revisiting" not in out
    out = r.fill({"detail": "changed"}).to_dict()
    assert out["revisiting"] is True
    assert out["step"]["id"] == "claimant"


# --------------------------------------------------------------------------- field rows


def test_a_field_row_carries_the_required_keys_and_only_truthy_extras(runner):
    r = runner()
    r.start("basic", {"name": "Dana", "age": "forty"})
    rows = _rows(r.status())
    assert rows["nick"] == {
        "id": "nick",
        "label": "Nickname",
        "type": "text",
        "required": False,
        "status": "empty",
        "ask": True,
    }
    assert rows["name"] == {
        "id": "name",
        "label": "Name",
        "type": "text (min 2 chars)",
        "required": True,
        "status": "filled",
        "ask": False,
        "description": "Their name. At least two letters.",
        "value": "Dana",
    }
    assert rows["age"]["status"] == "invalid"
    assert rows["age"]["error"] == "Age should be a whole number, like 40."  # the sentence a rejection said
    assert "value" not in rows["age"]


def test_a_filled_row_shows_the_parsed_value_as_json(runner):
    r = runner()
    r.start("validation", {"ratio": 3})
    assert _rows(r.status())["ratio"]["value"] == 3.0


def test_a_held_row_shows_the_raw_value_and_never_asks(runner):
    r = runner()
    r.start("pi-intake", {"incidentType": "medical", "vehicleCount": "two"})
    row = _rows(r.inspect("step", "incident"))["vehicleCount"]
    assert (row["status"], row["value"], row["ask"]) == ("held", "two", False)


def test_empty_and_invalid_applicable_fields_of_the_open_step_ask(runner):
    r = runner()
    r.start("basic", {"name": "Dana", "age": -3})
    assert {k: v["ask"] for k, v in _rows(r.status()).items()} == {"name": False, "age": True, "nick": True}


def test_an_inapplicable_empty_field_does_not_ask(runner):
    r = runner()
    r.start(
        "pi-intake", {"fullName": "Dana Reeve", "email": "d@example.com", "phone": "555", "incidentType": "medical"}
    )
    rows = _rows(r.status())
    assert rows["vehicleCount"]["ask"] is False
    assert rows["incidentDate"]["ask"] is True


def test_fields_outside_the_open_step_never_ask(runner):
    r = runner()
    r.start("basic")
    rows = _rows(r.inspect("outline"))
    assert [k for k, v in rows.items() if v["ask"]] == ["name", "age", "nick"]
    assert all(row["ask"] is False for row in r.inspect("step", "two").to_dict()["fields"])


def test_on_a_revisit_filled_fields_of_the_revisited_step_ask_again(runner):
    r = runner()
    r.start("rv", {"name": "Ann", "detail": "changed"})
    rows = _rows(r.status())
    assert rows["name"]["status"] == "filled"
    assert rows["name"]["ask"] is True


# --------------------------------------------------------------------------- scopes


def test_status_shows_the_open_step(runner):
    r = runner()
    r.start("basic", {"name": "Dana", "age": 4})
    view = r.status()
    assert view.scope == "step"
    assert view.to_dict()["step"] == {
        "id": "two",
        "title": "Two",
        "position": "2/2",
        "ask": "Ask about their preferences.",
    }
    assert [row.id for row in view.fields] == ["colour", "agree"]


def test_a_finished_form_shows_its_last_step(runner):
    r = runner()
    r.start("basic", {"name": "Dana", "age": 40, "colour": "red", "agree": True})
    view = r.status()
    assert view.step.id == "two"
    assert [row["value"] for row in view.to_dict()["fields"]] == ["red", True]


def test_step_scope_without_an_id_gives_the_open_step(runner):
    r = runner()
    r.start("basic")
    assert r.inspect("step").step.id == "one"


def test_step_scope_with_an_unknown_id_gives_the_header_only(runner):
    r = runner()
    r.start("basic")
    out = r.inspect("step", "nowhere").to_dict()
    assert out["fields"] == []
    assert "step" not in out and "steps" not in out
    assert out["form"] == "basic"


def test_field_scope_gives_one_row_and_its_step(runner):
    r = runner()
    r.start("basic")
    view = r.inspect("field", "agree")
    assert view.scope == "field"
    out = view.to_dict()
    assert [row["id"] for row in out["fields"]] == ["agree"]
    assert out["step"]["id"] == "two"
    assert out["fields"][0]["ask"] is False


def test_field_scope_with_an_unknown_id_gives_the_header_only(runner):
    r = runner()
    r.start("basic")
    out = r.inspect("field", "nonsense").to_dict()
    assert out["fields"] == [] and "step" not in out


def test_field_scope_without_an_id_is_an_argument_error(runner):
    r = runner()
    r.start("basic")
    with pytest.raises(InvalidArgumentError) as caught:
        r.inspect("field")
    assert caught.value.message == "scope=field needs an id."


def test_an_unknown_scope_is_an_argument_error(runner):
    r = runner()
    r.start("basic")
    with pytest.raises(FormError):
        r.inspect("everything")


def test_the_outline_summarises_every_step_and_lists_every_field(runner):
    r = runner()
    r.start("pi-intake", {"fullName": "Dana Reeve", "incidentType": "medical"})
    view = r.inspect("outline")
    assert view.scope == "outline"
    out = view.to_dict()
    assert "step" not in out
    assert out["steps"] == [
        {
            "id": "claimant",
            "title": "Claimant",
            "position": "1/2",
            "collects": "name, email, phone",
            "progress": "1/3",
            "complete": False,
            "open": True,
        },
        {
            "id": "incident",
            "title": "Incident",
            "position": "2/2",
            "collects": "date, type, what happened",
            "progress": "1/3",
            "complete": False,
            "open": True,
        },
    ]
    assert [row["id"] for row in out["fields"]] == [
        f for f in ("fullName", "email", "phone", "incidentType", "incidentDate", "vehicleCount", "treated")
    ]


def test_step_summaries_count_only_applicable_required_fields(runner):
    r = runner()
    r.start("pi-intake", {"incidentType": "vehicle"})
    incident = r.inspect("outline").to_dict()["steps"][1]
    assert incident["progress"] == "1/4"


def test_a_summary_omits_collects_without_a_preview_and_reports_the_gate(runner):
    r = runner()
    r.start("opt", {"q": "no"})
    steps = {s["id"]: s for s in r.inspect("outline").to_dict()["steps"]}
    assert "collects" not in steps["c"]
    assert (steps["c"]["open"], steps["c"]["complete"], steps["c"]["progress"]) == (False, False, "0/1")
    assert (steps["a"]["complete"], steps["a"]["progress"]) == (True, "0/0")


# --------------------------------------------------------------------------- fill results


def test_a_fill_result_reports_each_outcome_under_its_own_key(runner):
    r = runner()
    r.start("pi-intake")
    result = r.fill(
        {
            "Full name": "Dana Reeve",  # captured, renamed
            "vehicles": 2,  # unknown, with a suggestion
            "incidentType": "medical",  # captured
            "vehicleCount": 2,  # held: its gate is false
            "treated": "yes",  # rejected, with the boolean hint
            "phone": "  ",  # ignored
        }
    )
    out = result.to_dict()
    assert out["captured"] == ["fullName", "incidentType"]
    assert out["held"] == ["vehicleCount"]
    assert "don't count toward completion" in out["held_note"]
    assert out["renamed"] == ["Full name → fullName"]
    assert out["unknown_fields"] == [{"field": "vehicles", "did_you_mean": ["vehicleCount"]}]
    assert out["unknown_note"]
    assert out["rejected"] == [
        {
            "field": "treated",
            "message": "Sought treatment should be yes or no.",
            "hint": BOOLEAN_HINT,
            "code": "boolean",
        }
    ]
    assert out["ignored"] == ["phone"]
    assert out["ignored_note"]


def test_empty_outcome_lists_are_left_out_of_the_result(runner):
    r = runner()
    out = r.start("basic").to_dict()
    for key in (
        "captured",
        "held",
        "held_note",
        "renamed",
        "unknown_fields",
        "unknown_note",
        "rejected",
        "ignored",
        "ignored_note",
        "failures",
        "undo_would",
        "redo_would",
    ):
        assert key not in out


def test_an_invalid_value_is_in_neither_captured_nor_held(runner):
    r = runner()
    r.start("basic")
    result = r.fill({"age": "40"})
    assert result.captured == [] and result.held == []
    assert result.to_dict()["rejected"] == [
        {"field": "age", "message": "Age should be a whole number, like 40.", "hint": NUMBER_HINT, "code": "number"},
    ]


@pytest.mark.parametrize(
    "field, value, message, hint, code",
    [
        ("count", "2", "Count should be a whole number, like 40.", NUMBER_HINT, "number"),
        ("ratio", "0.5", "Ratio should be a number, like 12.50.", NUMBER_HINT, "number"),
        ("opt_count", "7", "Optional count should be a whole number, like 40.", NUMBER_HINT, "number"),
        ("flag", "yes", "Flag should be yes or no.", BOOLEAN_HINT, "boolean"),
        ("flag", "true", "Flag should be yes or no.", BOOLEAN_HINT, "boolean"),
        ("code", "x", "Code should be at least 2 characters.", None, "too_short"),
        ("kind", "car", "Kind should be vehicle or premises.", None, "choice"),
        ("mail", "not-an-email", "Mail should be an email address, like name@example.com.", None, "email"),
        ("exact", "5", "Exact five should be 5.", None, "choice"),
        ("count", True, "Count should be a whole number, like 40.", None, "number"),
    ],
)
def test_every_rejected_row_says_what_the_field_takes_with_a_hint_only_for_how_to_resend(
    runner, field, value, message, hint, code
):
    r = runner()
    r.start("validation")
    rows = r.fill({field: value}).to_dict()["rejected"]
    assert [row["field"] for row in rows] == [field]
    assert (rows[0]["message"], rows[0].get("hint"), rows[0]["code"]) == (message, hint, code)


def test_one_rejected_row_per_validator_issue(runner):
    r = runner()
    r.start("validation")
    rows = r.fill({"address": {"street": 1, "town": 2}}).to_dict()["rejected"]
    assert [(row["field"], row["message"]) for row in rows] == [
        ("address", "Address (street) should be text."),
        ("address", "Address (town) should be text."),
    ]


def test_a_fill_result_view_is_the_open_step(runner):
    r = runner()
    r.start("basic")
    assert r.fill({"colour": "red"}).view.step.id == "one"
    assert r.fill({"name": "Dana", "age": 3}).view.step.id == "two"


def test_a_correction_on_a_finished_form_shows_the_step_just_changed(runner):
    r = runner()
    r.start("basic", {"name": "Dana", "age": 40, "colour": "red", "agree": True})
    result = r.revise("name", "Dana Reeve")
    assert result.view.step.id == "one"
    assert result.view.to_dict()["fields"][0]["value"] == "Dana Reeve"


def test_a_finished_form_with_nothing_staged_shows_its_last_step(runner):
    r = runner()
    r.start("basic", {"name": "Dana", "age": 40, "colour": "red", "agree": True})
    result = r.fill({"nonsense": 1})
    assert result.view.step.id == "two"


def test_retract_returns_empty_captured_and_held(runner):
    r = runner()
    r.start("chain", {"a": "no", "b": "yes"})
    for field in ("a", "b"):
        result = r.retract(field)
        assert result.captured == [] and result.held == []


# --------------------------------------------------------------------------- read-time details (pure)


def test_the_view_error_is_recomputed_at_read_time_not_copied_from_the_log():
    import example_forms
    from formctl.forms.evaluate import evaluate
    from formctl.forms.instance import Entry, FieldLog, Instance, Provenance
    from formctl.forms.project import step_view

    form = example_forms.basic()
    prov = Provenance("tests", "agent", "2026-01-01T00:00:00.000Z")
    instance = Instance(
        id="form_x",
        def_id="basic",
        def_version=1,
        subject="s",
        entries={"age": FieldLog((Entry(1, "forty", prov, error="an old message"),), 0)},
        revision_seq=1,
    )
    row = _rows(step_view(form, evaluate(form, instance), instance))["age"]
    assert row["error"] == "Age should be a whole number, like 40."


def test_a_marked_complete_instance_can_still_show_asking_rows():
    import example_forms
    from example_forms import build_instance
    from formctl.forms.evaluate import evaluate
    from formctl.forms.project import step_view

    form = example_forms.basic()
    instance = build_instance(form, {"name": "Dana"}, status="complete")
    out = step_view(form, evaluate(form, instance), instance).to_dict()
    assert out["complete"] is True
    assert {row["id"]: row["ask"] for row in out["fields"]} == {"name": False, "age": True, "nick": True}


def test_undo_would_names_a_field_the_definition_no_longer_has_by_its_id():
    import example_forms
    from example_forms import build_instance
    from formctl.forms.evaluate import evaluate
    from formctl.forms.project import step_view

    form = example_forms.trio()
    instance = build_instance(form, {"a": "x", "gone": "old"})
    view = step_view(form, evaluate(form, instance), instance)
    assert (view.undo.field, view.undo.label) == ("gone", "gone")
    assert view.to_dict()["undo_would"] == "gone → empty"


def test_undo_would_keeps_non_ascii_text_readable(runner):
    r = runner()
    r.start("trio", {"a": "Zoë"})
    r.revise("a", "Zoe")
    assert r.status().to_dict()["undo_would"] == 'a → "Zoë"'
