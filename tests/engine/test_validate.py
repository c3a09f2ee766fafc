"""Strict per-field validation and the issue and hint rules (docs/engine.md, 'Validation')."""

from __future__ import annotations

import datetime
import enum
from typing import Annotated, Literal, Optional

import pytest
from pydantic import BaseModel, Field, field_validator

from formctl.forms import validate as validate_module
from formctl.forms.validate import (
    FieldValidator,
    Issue,
    Outcome,
    describe_field,
    shape_hint,
    to_jsonable,
)
from helpers.pydantic_words import pydantic_says

NUMBER_HINT = 'Send it as a JSON number, unquoted \u2014 410, not "410".'
BOOLEAN_HINT = 'Send it as a JSON boolean, unquoted \u2014 true or false, not "yes".'


class Inner(BaseModel):
    b: int


class Outer(BaseModel):
    a: Inner


class Positive(BaseModel):
    n: int

    @field_validator("n")
    @classmethod
    def _positive(cls, value: int) -> int:
        if value <= 0:
            raise ValueError("must be positive")
        return value


def only_issue(outcome: Outcome) -> Issue:
    assert not outcome.ok
    assert len(outcome.issues) == 1
    return outcome.issues[0]


# --------------------------------------------------------------------------- strictness


def test_a_quoted_number_is_rejected_for_an_int():
    issue = only_issue(FieldValidator(int).validate("2"))
    assert issue.kind == "int_type"


def test_a_quoted_number_is_rejected_for_a_float():
    issue = only_issue(FieldValidator(float).validate("1.5"))
    assert issue.kind == "float_type"


def test_yes_is_rejected_for_a_bool():
    issue = only_issue(FieldValidator(bool).validate("yes"))
    assert issue.kind == "bool_type"


def test_quoted_true_is_rejected_for_a_bool():
    assert not FieldValidator(bool).validate("true").ok


def test_true_is_not_an_integer():
    assert not FieldValidator(int).validate(True).ok


def test_an_int_is_accepted_for_a_float():
    outcome = FieldValidator(float).validate(3)
    assert outcome.ok
    assert outcome.value == 3.0 and isinstance(outcome.value, float)


def test_an_iso_date_string_is_accepted_for_a_date():
    outcome = FieldValidator(datetime.date).validate("2024-03-05")
    assert outcome.ok
    assert outcome.value == datetime.date(2024, 3, 5)


def test_an_impossible_date_is_rejected():
    assert not FieldValidator(datetime.date).validate("2024-13-01").ok


def test_a_valid_value_parses_with_no_issues_and_no_error():
    outcome = FieldValidator(Annotated[int, Field(ge=1)]).validate(410)
    assert outcome == Outcome(ok=True, value=410, issues=())
    assert outcome.error is None


def test_a_bound_violation_is_rejected():
    issue = only_issue(FieldValidator(Annotated[int, Field(ge=1)]).validate(0))
    assert issue.kind == "greater_than_equal"


def test_an_optional_field_accepts_none():
    outcome = FieldValidator(Annotated[int, Field(ge=1)] | None).validate(None)
    assert outcome.ok and outcome.value is None


def test_a_required_field_rejects_none():
    assert not FieldValidator(int).validate(None).ok


def test_a_literal_rejects_other_values():
    issue = only_issue(FieldValidator(Literal["vehicle", "premises"]).validate("boat"))
    assert issue.kind == "literal_error"


def test_a_value_that_is_not_json_is_an_issue_not_a_crash():
    issue = only_issue(FieldValidator(list[int]).validate({1, 2}))
    assert issue.kind == "not_json"
    assert issue.message.startswith("Value is not JSON data")


def test_nan_is_not_json():
    assert only_issue(FieldValidator(float).validate(float("nan"))).kind == "not_json"


def test_a_nested_model_validates_from_a_dict():
    outcome = FieldValidator(Outer).validate({"a": {"b": 1}})
    assert outcome.ok and outcome.value == Outer(a=Inner(b=1))


def test_the_adapter_is_built_lazily_and_once(monkeypatch):
    built: list[object] = []
    real = validate_module.adapter_for

    def counting(annotation):
        built.append(annotation)
        return real(annotation)

    monkeypatch.setattr(validate_module, "adapter_for", counting)
    validators = [FieldValidator(Annotated[int, Field(ge=i)]) for i in range(300)]
    assert built == []
    validators[0].validate(1)
    validators[0].validate(2)
    assert len(built) == 1


# --------------------------------------------------------------------------- error text


def test_an_issue_without_a_path_is_just_its_message():
    outcome = FieldValidator(int).validate("x")
    assert outcome.error == outcome.issues[0].message == pydantic_says(int, "x")


def test_a_nested_field_issue_is_prefixed_with_its_dotted_path():
    outcome = FieldValidator(Outer).validate({"a": {"b": "1"}})
    issue = only_issue(outcome)
    assert issue.path == ("a", "b")
    assert outcome.error == f"a.b: {pydantic_says(int, '1')}"


def test_list_indexes_appear_in_the_path():
    outcome = FieldValidator(list[int]).validate([1, "2"])
    assert outcome.error == f"1: {pydantic_says(int, '2')}"


def test_several_issues_are_joined_with_a_semicolon():
    class Two(BaseModel):
        x: int
        y: int

    outcome = FieldValidator(Two).validate({"x": "1", "y": "2"})
    assert outcome.error == f"x: {pydantic_says(int, '1')}; y: {pydantic_says(int, '2')}"


def test_custom_validator_messages_lose_the_value_error_prefix():
    issue = only_issue(FieldValidator(Positive).validate({"n": -1}))
    assert issue.message == "must be positive"
    assert issue.kind == "value_error"


# --------------------------------------------------------------------------- shape hints


def test_a_quoted_number_gets_the_number_hint():
    issue = only_issue(FieldValidator(int).validate("410"))
    assert shape_hint(issue, "410") == NUMBER_HINT


def test_a_quoted_number_for_an_optional_int_gets_the_number_hint():
    issue = only_issue(FieldValidator(Optional[Annotated[int, Field(ge=1)]]).validate("410"))
    assert shape_hint(issue, "410") == NUMBER_HINT


def test_a_quoted_number_for_a_float_gets_the_number_hint():
    issue = only_issue(FieldValidator(float).validate("0.5"))
    assert shape_hint(issue, "0.5") == NUMBER_HINT


def test_a_string_for_a_bool_gets_the_boolean_hint():
    issue = only_issue(FieldValidator(bool).validate("yes"))
    assert shape_hint(issue, "yes") == BOOLEAN_HINT


def test_each_union_branch_gets_its_own_shape_hint():
    outcome = FieldValidator(bool | int).validate("yes")
    assert [shape_hint(issue, "yes") for issue in outcome.issues] == [BOOLEAN_HINT, NUMBER_HINT]


def test_parsing_kinds_also_get_shape_hints():
    assert shape_hint(Issue((), "m", "int_parsing"), "x") == NUMBER_HINT
    assert shape_hint(Issue((), "m", "float_parsing"), "x") == NUMBER_HINT
    assert shape_hint(Issue((), "m", "bool_parsing"), "x") == BOOLEAN_HINT


def test_an_int_literal_given_a_string_gets_no_shape_hint():
    issue = only_issue(FieldValidator(Literal[5]).validate("5"))
    assert shape_hint(issue, "5") is None


def test_a_non_string_value_gets_no_shape_hint():
    issue = only_issue(FieldValidator(int).validate([1]))
    assert issue.kind == "int_type"
    assert shape_hint(issue, [1]) is None


def test_other_issue_kinds_get_no_shape_hint():
    issue = only_issue(FieldValidator(Annotated[str, Field(min_length=2)]).validate("a"))
    assert shape_hint(issue, "a") is None


# --------------------------------------------------------------------------- description (ask and hint)


def test_description_joins_ask_and_hint_with_a_space():
    assert describe_field("How old are you?", "In years.") == "How old are you? In years."


def test_description_is_the_ask_when_there_is_no_hint():
    assert describe_field("How old are you?", None) == "How old are you?"


def test_description_is_the_hint_when_there_is_no_ask():
    assert describe_field(None, "In years.") == "In years."


def test_an_empty_ask_with_a_hint_gives_an_empty_description():
    assert describe_field("", "In years.") == ""


def test_description_is_none_when_neither_is_given():
    assert describe_field(None, None) is None


# --------------------------------------------------------------------------- jsonable


def test_to_jsonable_turns_parsed_values_into_json_data():
    assert to_jsonable(datetime.date(2024, 3, 5)) == "2024-03-05"
    assert to_jsonable(Outer(a=Inner(b=1))) == {"a": {"b": 1}}


@pytest.mark.parametrize("raw", ["caf\u00e9 \u2028", 12, 1.5, None, True, [1, "x"], {"k": [None]}])
def test_fast_json_encoding_matches_the_json_module(raw):
    import json

    assert validate_module._json_text(raw) == json.dumps(raw, ensure_ascii=False, separators=(",", ":"))


# --------------------------------------------------------------------------- strictness: true is not 1


def test_a_boolean_is_not_a_number_literal_and_a_number_is_not_a_boolean_literal():
    from typing import Literal

    from formctl.forms.validate import FieldValidator

    class Rating(enum.IntEnum):
        one = 1
        two = 2

    for annotation, raw in [
        (Literal[1, 2, 3], True),
        (Literal[0], False),
        (Literal[1] | None, True),
        (Rating, True),
        (Literal[True], 1),
        (Literal[False, "no"], 0),
    ]:
        outcome = FieldValidator(annotation).validate(raw)
        assert not outcome.ok, (annotation, raw, outcome.value)
    assert FieldValidator(Literal[1, 2]).validate(1).ok
    assert FieldValidator(Literal[True]).validate(True).ok
    assert FieldValidator(Literal[1, True]).validate(True).value is True
