"""Values have a size (docs/engine.md, "Validation"): a string over the field's text limit, a
value too large in all, or one nested too deep is refused and not stored; tool results carry
at most ECHO_LIMIT characters of any long string, with its length."""

from __future__ import annotations

import json
from typing import Annotated

import pytest
from pydantic import Field

from formctl import FormRegistry, FormRunner, MemoryAdapter, define_form
from formctl.agent.tools import ECHO_LIMIT, FormTools
from formctl.errors import FormDefinitionError
from formctl.forms.validate import size_issue

CLAIMANT = {"full_name": "Dana Reeve", "staff_id": "AB1234", "email": "dana@example.com"}


def notes_form(max_text: int = 10_000):
    return (
        define_form("notes", name="Notes", max_text=max_text)
        .step("s", title="S")
        .field("note", str, label="Note")
        .field("essay", Annotated[str, Field(max_length=50_000)] | None, label="Essay")
        .field("code", Annotated[str, Field(max_length=6)] | None, label="Code")
        .field("tags", list[str] | None, label="Tags")
        .field("data", dict | None, label="Data")
        .build()
    )


def notes_runner(max_text: int = 10_000) -> FormRunner:
    registry = FormRegistry()
    registry.register("notes", name="Notes", load=lambda: notes_form(max_text))
    return FormRunner(MemoryAdapter(), registry=registry, subject="s1")


def nested(depth: int):
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value


def test_a_text_over_the_default_cap_is_refused_for_that_field_alone_and_not_stored():
    r = notes_runner()
    r.start("notes")

    result = r.fill({"note": "x" * 10_001, "tags": ["a", "b"]})

    assert [(x.field, x.message, x.hint) for x in result.rejected] == [
        ("note", "Too long: 10,001 characters; at most 10,000.", "Send at most 10,000 characters.")
    ]
    assert result.captured == ["tags"]
    assert "note" not in r.open_instance().entries  # refused, not kept as an invalid answer
    assert r.fill({"note": "x" * 10_000}).captured == ["note"]


def test_the_cap_is_per_form_and_a_fields_own_larger_max_length_lifts_it():
    r = notes_runner(max_text=100)
    r.start("notes")

    assert r.fill({"note": "y" * 101}).rejected[0].message == "Too long: 101 characters; at most 100."
    assert r.fill({"essay": "z" * 40_000}).captured == ["essay"]
    assert r.fill({"essay": "z" * 50_001}).rejected[0].message == "Too long: 50,001 characters; at most 50,000."
    # Under the cap, the field's own smaller max_length rejects as any invalid answer does (kept, marked invalid).
    result = r.fill({"code": "1234567"})
    assert (result.rejected[0].message, result.rejected[0].code) == ("Code should be at most 6 characters.", "too_long")
    assert r.open_instance().entries["code"].in_force.error


def test_strings_inside_a_value_and_the_value_in_all_are_measured():
    r = notes_runner(max_text=100)
    r.start("notes")

    assert r.fill({"tags": ["ok", "w" * 101]}).rejected[0].message == "Too long: 101 characters; at most 100."
    assert r.fill({"tags": ["v" * 90] * 20}).rejected[0].message == "Too large: more than 1,000 characters in all."
    assert r.fill({"data": {"k" * 101: 1}}).rejected[0].message == "Too long: 101 characters; at most 100."
    assert r.fill({"tags": ["v" * 90] * 5}).captured == ["tags"]


def test_values_nested_deeper_than_32_levels_are_refused():
    r = notes_runner()
    r.start("notes")

    assert r.fill({"data": {"a": nested(31)}}).captured == ["data"]
    result = r.fill({"data": {"a": nested(32)}})
    assert [(x.field, x.message) for x in result.rejected] == [("data", "Nested deeper than 32 levels.")]
    assert size_issue(nested(100_000)).kind == "too_deep"  # measured without recursing


@pytest.mark.parametrize("max_text", [0, -5, True, "100"])
def test_max_text_must_be_a_positive_count(max_text):
    with pytest.raises(FormDefinitionError):
        define_form("x", name="X", max_text=max_text)


def test_a_two_million_character_name_is_refused_through_the_tools_and_nothing_echoes_it(claim_runner):
    tools = FormTools(claim_runner)
    tools.call("form_start", {"form": "travel-claim", "values": {"staff_id": "AB1234"}})

    envelope = tools.call("form_fill", {"values": {"full_name": "x" * 2_000_000}})

    data = envelope["data"]
    assert data["rejected"] == [
        {
            "field": "full_name",
            "message": "Too long: 2,000,000 characters; at most 10,000.",
            "hint": "Send at most 10,000 characters.",
            "code": "too_long",
        }
    ]
    assert "full_name" not in claim_runner.open_instance().entries
    assert len(json.dumps(envelope)) < 5_000
    assert len(json.dumps(tools.call("form_status", {}))) < 5_000


def test_tool_results_carry_a_bounded_part_of_a_long_value_and_its_length(claim_runner):
    tools = FormTools(claim_runner)
    long_name = "Dana " + "q" * 4_995
    tools.call("form_start", {"form": "travel-claim", "values": {**CLAIMANT, "full_name": long_name}})
    assert claim_runner.open_instance().in_force_values()["full_name"] == long_name  # stored whole

    for name, args in [
        ("form_inspect", {"scope": "step", "id": "claimant"}),
        ("form_inspect", {"scope": "field", "id": "full_name"}),
        ("form_history", {"instance_id": claim_runner.open_instance().id}),
    ]:
        text = json.dumps(tools.call(name, args))
        assert long_name not in text
        assert json.dumps(f"{long_name[:ECHO_LIMIT]}… (5,000 characters)")[1:-1] in text, name

    unknown = tools.call("form_fill", {"values": {"k" * 300: 1}})
    assert unknown["data"]["unknown_fields"][0]["field"] == "k" * ECHO_LIMIT + "… (300 characters)"
