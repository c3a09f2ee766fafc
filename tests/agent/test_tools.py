"""The ten form tools, called the way a model calls them: a name and a JSON object of arguments."""

from __future__ import annotations

import json

import pytest

from formctl.agent.tools import TOOL_NAMES, FormTools, select_tools, tool_definitions
from formctl.errors import ToolSelectionError

CLAIMANT = {"full_name": "Dana Reeve", "staff_id": "AB1234", "email": "dana@example.com"}
TRIP = {
    "destination": "Leeds",
    "departure_date": "2026-03-02",
    "return_date": "2026-03-04",
    "purpose": "Client workshop",
}


@pytest.fixture
def tools(claim_runner) -> FormTools:
    return FormTools(claim_runner)


def ok(envelope: dict) -> dict:
    assert envelope["status"] == "success", envelope
    return envelope["data"]


def error_code(envelope: dict) -> str:
    assert envelope["status"] == "error", envelope
    assert isinstance(envelope["message"], str) and envelope["message"]
    return envelope["data"]["code"]


def started(tools: FormTools, values: dict | None = None) -> dict:
    args = {"form": "travel-claim"}
    if values is not None:
        args["values"] = values
    return ok(tools.call("form_start", args))


# --------------------------------------------------------------------------- definitions


def test_the_surface_is_the_ten_tools_in_spec_order():
    assert [d["name"] for d in tool_definitions()] == [
        "form_list",
        "form_start",
        "form_status",
        "form_inspect",
        "form_fill",
        "form_revise",
        "form_submit",
        "form_abandon",
        "form_withdraw",
        "form_history",
    ]
    assert list(TOOL_NAMES) == [d["name"] for d in tool_definitions()]


def test_the_ten_definitions_as_sent_fit_the_context_budget():
    as_sent = json.dumps(tool_definitions())  # the SDK's own separators
    assert len(as_sent) <= 3500, len(as_sent)


def test_definitions_carry_no_pydantic_titles_or_null_branches():
    text = json.dumps(tool_definitions())
    assert '"title"' not in text
    assert '"null"' not in text
    assert "anyOf" not in text


def test_each_schema_requires_exactly_what_validation_requires(tools):
    required = {d["name"]: set(d["input_schema"].get("required", [])) for d in tool_definitions()}
    assert required["form_start"] == {"form"}
    assert required["form_fill"] == {"values"}
    assert required["form_abandon"] == {"reason"}
    for name in ("form_list", "form_status", "form_inspect", "form_revise", "form_withdraw", "form_history"):
        assert required[name] == set(), name
    for definition in tool_definitions():
        assert definition["input_schema"]["additionalProperties"] is False


def test_definitions_are_copies_a_caller_may_mark_for_caching():
    first = tool_definitions()
    first[-1]["cache_control"] = {"type": "ephemeral"}
    assert "cache_control" not in tool_definitions()[-1]


# --------------------------------------------------------------------------- happy paths


def test_form_list_names_registered_forms(tools):
    forms = ok(tools.call("form_list", {}))["forms"]
    assert {f["id"] for f in forms} == {"travel-claim", "client-intake"}
    assert all(set(f) == {"id", "name", "description"} for f in forms)


def test_form_start_seeds_values_and_opens_the_next_step(tools):
    data = started(tools, CLAIMANT)
    assert data["captured"] == ["full_name", "staff_id", "email"]
    assert data["step"]["id"] == "trip"
    assert data["instance_id"].startswith("form_")


def test_form_status_shows_the_open_step_with_asks(tools):
    started(tools)
    data = ok(tools.call("form_status", {}))
    assert data["step"]["id"] == "claimant"
    assert [f["id"] for f in data["fields"] if f["ask"]] == ["full_name", "staff_id", "email"]


def test_form_inspect_outline_step_and_field(tools):
    started(tools)
    outline = ok(tools.call("form_inspect", {}))
    assert [s["id"] for s in outline["steps"]] == ["claimant", "trip", "travel", "costs"]
    step = ok(tools.call("form_inspect", {"scope": "step", "id": "Trip"}))
    assert step["step"]["id"] == "trip"
    field = ok(tools.call("form_inspect", {"scope": "field", "id": "total"}))
    assert [f["id"] for f in field["fields"]] == ["total"]


def test_form_inspect_field_scope_without_an_id_is_an_error(tools):
    started(tools)
    assert error_code(tools.call("form_inspect", {"scope": "field"})) == "invalid_arguments"


def test_form_fill_captures_values_from_several_steps(tools, claim_runner):
    started(tools)
    data = ok(tools.call("form_fill", {"values": {**CLAIMANT, **TRIP}}))
    assert data["captured"] == [*CLAIMANT, *TRIP]
    assert data["step"]["id"] == "travel"
    assert claim_runner.tier0().startswith('[form: travel-claim] step 3/4 "Travel"')


def test_form_fill_reports_rejects_with_hints_and_keeps_the_good_values(tools):
    started(tools)
    data = ok(tools.call("form_fill", {"values": {"full_name": "Dana Reeve", "staff_id": "ab12"}}))
    assert data["captured"] == ["full_name"]
    assert [r["field"] for r in data["rejected"]] == ["staff_id"]


def test_form_fill_holds_a_value_that_does_not_apply_yet(tools):
    started(tools, CLAIMANT | TRIP)
    data = ok(tools.call("form_fill", {"values": {"mode": "rail", "mileage": 120}}))
    assert data["held"] == ["mileage"]
    assert "held_note" in data


def test_blank_values_are_ignored_never_written(tools, claim_runner):
    started(tools, {"full_name": "Dana Reeve"})
    data = ok(tools.call("form_fill", {"values": {"full_name": "", "email": None, "staff_id": "AB1234"}}))
    assert sorted(data["ignored"]) == ["email", "full_name"]
    assert data["captured"] == ["staff_id"]
    assert len(claim_runner.open_instance().entries["full_name"].revisions) == 1
    status = ok(tools.call("form_status", {}))
    assert {f["id"]: f.get("value") for f in status["fields"]}["full_name"] == "Dana Reeve"


def test_a_guessed_field_id_is_resolved_and_reported_as_renamed(tools):
    started(tools)
    data = ok(tools.call("form_fill", {"values": {"Full Name": "Dana Reeve", "staffId": "AB1234"}}))
    assert data["captured"] == ["full_name", "staff_id"]
    assert data["renamed"] == ["Full Name → full_name", "staffId → staff_id"]


def test_an_unknown_field_id_is_reported_with_suggestions_and_nothing_stored(tools):
    started(tools)
    data = ok(tools.call("form_fill", {"values": {"emial": "dana@example.com"}}))
    assert data["unknown_fields"][0]["field"] == "emial"
    assert "captured" not in data


def test_form_revise_set_retract_undo_redo(tools, claim_runner):
    started(tools, {"full_name": "Dana Reeve"})
    data = ok(tools.call("form_revise", {"field": "full_name", "value": "Dana M. Reeve", "reason": "middle initial"}))
    assert data["captured"] == ["full_name"]
    ok(tools.call("form_revise", {"action": "retract", "field": "full_name"}))
    assert "Full name" in claim_runner.tier0()
    ok(tools.call("form_revise", {"action": "undo"}))
    assert _value(tools, "full_name") == "Dana M. Reeve"
    ok(tools.call("form_revise", {"action": "undo", "field": "full_name"}))
    assert _value(tools, "full_name") == "Dana Reeve"
    ok(tools.call("form_revise", {"action": "redo"}))
    assert _value(tools, "full_name") == "Dana M. Reeve"


def test_form_revise_set_or_retract_without_a_field_is_an_error(tools):
    started(tools)
    set_error = tools.call("form_revise", {"value": "x"})
    assert error_code(set_error) == "invalid_arguments"
    assert set_error["message"] == "action=set needs a field."
    retract_error = tools.call("form_revise", {"action": "retract"})
    assert retract_error["message"] == "action=retract needs a field."


def test_form_revise_undo_with_nothing_to_undo_is_an_engine_error(tools):
    started(tools)
    assert error_code(tools.call("form_revise", {"action": "undo"})) == "nothing_to_move"


def test_form_abandon_closes_the_form_and_keeps_its_answers(tools, claim_runner):
    instance_id = started(tools, {"full_name": "Dana Reeve"})["instance_id"]
    data = ok(tools.call("form_abandon", {"reason": "Claim filed on paper instead"}))
    assert data == {"instance_id": instance_id, "status": "abandoned"}
    assert claim_runner.tier0() == ""
    assert claim_runner.open_instance(instance_id).in_force_values()["full_name"] == "Dana Reeve"


def test_form_history_lists_the_subjects_instances(tools):
    first = started(tools, {"full_name": "Dana Reeve"})["instance_id"]
    ok(tools.call("form_abandon", {"reason": "wrong form"}))
    second = ok(tools.call("form_start", {"form": "client-intake"}))["instance_id"]
    rows = {r["instance_id"]: r for r in ok(tools.call("form_history", {}))["instances"]}
    assert set(rows) == {first, second}
    assert rows[first]["status"] == "abandoned" and rows[first]["closed_reason"] == "wrong form"
    assert rows[first]["answered"] == 1 and rows[first]["form"] == "travel-claim"
    assert "closed_reason" not in rows[second]
    only_abandoned = ok(tools.call("form_history", {"status": "abandoned"}))["instances"]
    assert [r["instance_id"] for r in only_abandoned] == [first]
    only_intake = ok(tools.call("form_history", {"form": "client-intake"}))["instances"]
    assert [r["instance_id"] for r in only_intake] == [second]
    assert len(ok(tools.call("form_history", {"limit": 1}))["instances"]) == 1
    assert ok(tools.call("form_history", {"subject": "someone-else"}))["instances"] == []


def test_form_history_of_one_instance_is_the_outline_with_values_and_held(tools):
    instance_id = started(tools, CLAIMANT | {"mileage": 80})["instance_id"]
    data = ok(tools.call("form_history", {"instance_id": instance_id}))
    assert data["values"]["full_name"] == "Dana Reeve"
    assert data["held"] == {"mileage": 80}
    assert [s["id"] for s in data["steps"]] == ["claimant", "trip", "travel", "costs"]


def test_form_history_of_a_missing_instance_is_not_found(tools):
    envelope = tools.call("form_history", {"instance_id": "form_nope_000000"})
    assert error_code(envelope) == "not_found"
    assert envelope["message"] == 'No form instance "form_nope_000000".'


def test_starting_a_form_that_is_already_open_is_refused(tools, claim_runner):
    first = started(tools)["instance_id"]
    assert error_code(tools.call("form_start", {"form": "travel-claim"})) == "form_open"
    assert claim_runner.open_instance().id == first


def test_starting_an_unregistered_form_is_not_found(tools):
    assert error_code(tools.call("form_start", {"form": "tax-return"})) == "not_found"


def test_writing_without_an_open_form_is_not_found(tools):
    assert error_code(tools.call("form_fill", {"values": {"full_name": "Dana"}})) == "not_found"


# --------------------------------------------------------------------------- a form waiting for approval

OVER_THE_CAP = CLAIMANT | TRIP | {"mode": "rail", "ticket_reference": "TR1234", "meals": 24.5, "total": 900}


def test_a_change_while_the_form_waits_is_refused_and_names_form_withdraw(tools, claim_runner):
    assert started(tools, OVER_THE_CAP)["status"] == "awaiting"
    refused = tools.call("form_fill", {"values": {"total": 700}})
    assert error_code(refused) == "form_blocked"
    assert "unless the person asks to withdraw the request (form_withdraw)" in refused["message"]
    assert refused["message"].endswith("Over the 750 cap: waiting for Finance to approve.")  # the form's own words
    assert claim_runner.open_instance().in_force_values()["total"] == 900


def test_without_form_withdraw_in_the_selection_the_refusal_does_not_name_it(claim_runner):
    tools = FormTools(claim_runner, deny=["withdraw"])
    started(tools, OVER_THE_CAP)
    refused = tools.call("form_revise", {"field": "total", "value": 700})
    assert error_code(refused) == "form_blocked" and "withdraw" not in refused["message"]


def test_form_withdraw_ends_the_wait_is_recorded_and_approval_is_asked_again(tools, claim_runner):
    from formctl.forms.acts import acts
    from formctl.forms.resolutions import resolutions

    instance_id = started(tools, OVER_THE_CAP)["instance_id"]
    data = ok(tools.call("form_withdraw", {"reason": "the total was wrong"}))
    assert data["status"] == "active" and "blocked_on" not in data
    assert ok(tools.call("form_fill", {"values": {"total": 950}}))["status"] == "awaiting"  # over the cap: asked again

    instance = claim_runner.open_instance(instance_id)
    assert instance.in_force_values()["total"] == 950
    (withdrawal,) = resolutions(instance)
    assert (withdrawal.checkpoint, withdrawal.outcome, withdrawal.actor, withdrawal.reason) == (
        "policy-cap",
        "withdrawn",
        claim_runner.actor,
        "the total was wrong",
    )
    assert [(a.act, a.reason) for a in acts(instance) if a.act == "withdraw"] == [("withdraw", "the total was wrong")]


def test_form_withdraw_of_a_form_that_does_not_wait_changes_nothing(tools, claim_runner):
    started(tools, CLAIMANT)
    version = claim_runner.open_instance().version
    assert error_code(tools.call("form_withdraw", {})) == "not_waiting"
    assert claim_runner.open_instance().version == version


# --------------------------------------------------------------------------- malformed calls


@pytest.mark.parametrize(
    "name, arguments",
    [
        ("form_fill", "full_name=Dana"),  # not an object
        ("form_fill", ["full_name", "Dana"]),  # not an object
        ("form_fill", None),  # no arguments at all
        ("form_fill", {}),  # missing values
        ("form_fill", {"values": "full_name=Dana"}),  # wrong type
        ("form_fill", {"values": {"full_name": "Dana"}, "extra": 1}),  # extra parameter
        ("form_fill", {"full_name": "Dana"}),  # values not wrapped
        ("form_revise", {"action": "delete", "field": "full_name"}),  # not an action
        ("form_revise", {"field": 3, "value": "x"}),  # wrong type
        ("form_abandon", {}),  # missing reason
        ("form_abandon", {"reason": 42}),  # wrong type
        ("form_history", {"limit": "5"}),  # no coercion
        ("form_history", {"limit": 0}),  # out of range
        ("form_history", {"status": "open"}),  # not a status
        ("form_inspect", {"scope": "everything"}),
        ("form_start", {"form": ""}),
    ],
)
def test_malformed_arguments_are_a_coded_error_and_nothing_is_applied(tools, claim_runner, name, arguments):
    before = started(tools, {"full_name": "Dana Reeve"})
    version = claim_runner.open_instance().version
    envelope = tools.call(name, arguments)
    assert error_code(envelope) == "invalid_arguments"
    assert "\n" not in envelope["message"]
    assert claim_runner.open_instance().version == version
    assert claim_runner.open_instance().id == before["instance_id"]
    assert claim_runner.open_instance().status == "active"


def test_an_extra_parameter_is_named_in_the_error(tools):
    started(tools)
    envelope = tools.call("form_status", {"instance": "x"})
    assert "instance" in envelope["message"] and "not a parameter" in envelope["message"]


def test_blank_optional_parameters_mean_omitted(tools):
    started(tools)
    data = ok(tools.call("form_status", {"instance_id": ""}))
    assert data["step"]["id"] == "claimant"
    data = ok(tools.call("form_inspect", {"scope": "step", "id": None, "instance_id": None}))
    assert data["step"]["id"] == "claimant"


def test_an_unknown_tool_is_a_coded_error(tools):
    assert error_code(tools.call("form_delete", {})) == "unknown_tool"


# --------------------------------------------------------------------------- selection


def test_allow_narrows_and_deny_subtracts_by_name_or_suffix():
    assert select_tools(allow=["fill", "status"]) == ["form_status", "form_fill"]
    assert select_tools(deny=["start", "form_abandon"]) == [
        n for n in TOOL_NAMES if n not in ("form_start", "form_abandon")
    ]
    assert select_tools(allow=["fill", "history", "status"], deny=["history"]) == ["form_status", "form_fill"]


def test_a_selector_matching_no_tool_is_an_unknown_tool_error():
    with pytest.raises(ToolSelectionError) as raised:
        select_tools(deny=["delete"])
    assert raised.value.code == "unknown_tool"


def test_a_denied_tool_cannot_be_called(claim_runner):
    tools = FormTools(claim_runner, deny=["start"])
    assert "form_start" not in [d["name"] for d in tools.definitions]
    assert error_code(tools.call("form_start", {"form": "travel-claim"})) == "unknown_tool"
    assert claim_runner.open_instance() is None


def _value(tools: FormTools, field: str):
    data = ok(tools.call("form_inspect", {"scope": "field", "id": field}))
    return data["fields"][0].get("value")
