"""Every rejection reads like a person wrote it (forms/messages.py; docs/engine.md, 'Validation').

Each test builds a real field, validates a real value through the engine's validator and
reads the sentence: built from the field's label, hint and examples, never a regex, a
pydantic phrase or an exception's text.
"""

from __future__ import annotations

import datetime
import re
import uuid
from typing import Annotated, Any, Literal

import pytest
from pydantic import AfterValidator, AnyUrl, BaseModel, EmailStr, Field

from formctl import define_form
from formctl.forms.compile import compile_form
from formctl.forms.messages import field_error, pattern_words, plain, rejection, said_by

STAFF_ID = Annotated[str, Field(pattern=r"^[A-Z]{2}\d{4}$")]

# What pydantic (or email-validator, or Python) says, which a person must never read.
_MACHINE = re.compile(
    r"String should|Input should|should match pattern|valid integer|valid number|valid boolean|valid date|"
    r"value is not a valid|Value error|\^|\$|\\d|\[A-Z\]|List should|after validation|"
    r"expected range|input is too short|relative URL|ZeroDivision|division by zero|Traceback",
)


def _field(annotation: Any, *, label: str = "Staff ID", hint: str | None = None, ask: str | None = None):
    builder = define_form("f", name="F").step("s", title="S").field("x", annotation, label=label, hint=hint, ask=ask)
    return compile_form(builder.definition).field_by_id["x"]


def _said(annotation: Any, raw: Any, **kw: Any) -> tuple[str, str]:
    field = _field(annotation, **kw)
    outcome = field.validator.validate(raw)
    assert not outcome.ok, f"{raw!r} was accepted"
    sentence, code = plain(field, outcome.issues[0])
    assert not _MACHINE.search(sentence), sentence
    assert sentence.endswith((".", "?", "!")) and sentence[0].isupper()
    return sentence, code


# --------------------------------------------------------------------------- patterns


def test_a_pattern_with_a_hint_is_said_from_the_hint():
    said = _said(STAFF_ID, "ab12345", hint="Two capital letters and four digits, like AB1234.")
    assert said == ("A Staff ID is two capital letters and four digits, like AB1234.", "pattern")


def test_a_label_with_its_own_determiner_takes_no_article():
    said = _said(STAFF_ID, "x", label="Your staff ID", hint="Two capital letters and four digits, like AB1234.")
    assert said[0] == "Your staff ID is two capital letters and four digits, like AB1234."


def test_a_hint_that_is_an_instruction_is_said_after_the_rejection_not_bent_into_a_phrase():
    said = _said(STAFF_ID, "x", hint="Use the ID printed on your badge.")
    assert said == ("That isn't a Staff ID. Use the ID printed on your badge.", "pattern")


def test_a_pattern_without_a_hint_is_said_in_words_with_the_fields_example():
    said = _said(Annotated[str, Field(pattern=r"^[A-Z]{2}\d{4}$", examples=["QX9001"])], "x")
    assert said == ("Staff ID should be two capital letters and four digits, like QX9001.", "pattern")
    said = _said(STAFF_ID, "x", ask="Your Staff ID, for example AB1234")
    assert said[0] == "Staff ID should be two capital letters and four digits, like AB1234."


def test_a_pattern_it_cannot_say_in_words_never_shows_the_regex():
    assert _said(Annotated[str, Field(pattern=r"^(?:foo|bar)+$")], "x") == (
        "That isn't in the form Staff ID takes.",
        "pattern",
    )
    assert _said(Annotated[str, Field(pattern=r"^(?:foo|bar)+$", examples=["foobar"])], "x")[0] == (
        "Staff ID should look like foobar."
    )


@pytest.mark.parametrize(
    ("pattern", "words"),
    [
        (r"^[A-Z]{2}\d{4}$", "two capital letters and four digits"),
        (r"^\d{5}$", "five digits"),
        (r"^[a-z]+$", "one or more small letters"),
        (r"^[A-Z]\d{2,3}$", "one capital letter and two to three digits"),
        (r"^\d{3}-\d{4}$", "three digits, a hyphen and four digits"),
        (r"^[A-Za-z0-9]{8,}$", "at least eight letters or digits"),
        (r"^C\d{5}$", "the letter C and five digits"),
        (r"^(a|b)$", None),
        (r"[A-Z]{2}", None),  # not anchored: "contains", which this does not try to say
    ],
)
def test_simple_patterns_in_words(pattern, words):
    assert pattern_words(pattern) == words


# --------------------------------------------------------------------------- lengths


def test_text_lengths_are_said_from_the_constraint():
    assert _said(Annotated[str, Field(max_length=15)], "x" * 16) == (
        "Staff ID should be at most 15 characters.",
        "too_long",
    )
    assert _said(Annotated[str, Field(min_length=3)], "ab", label="Purpose of trip") == (
        "Purpose of trip should be at least 3 characters.",
        "too_short",
    )
    assert _said(Annotated[str, Field(min_length=1)], "", label="Name")[0] == "Name can't be empty."


def test_a_hint_that_already_states_the_limit_is_used_as_it_is():
    said = _said(Annotated[str, Field(max_length=15)], "x" * 16, hint="At most 15 letters, as on the badge.")
    assert said == ("At most 15 letters, as on the badge.", "too_long")


def test_list_lengths_count_items():
    assert _said(Annotated[list[str], Field(min_length=2)], ["a"], label="Travellers") == (
        "Travellers needs at least 2 items.",
        "too_short",
    )
    assert _said(Annotated[list[str], Field(max_length=1)], ["a", "b"], label="Travellers") == (
        "Travellers can have at most 1 item.",
        "too_long",
    )


# --------------------------------------------------------------------------- numbers


def test_numeric_ranges():
    assert _said(Annotated[int, Field(ge=1)], 0, label="Miles driven") == ("Miles driven should be 1 or more.", "range")
    assert _said(Annotated[float, Field(ge=0)], -1, label="Total") == ("Total can't be negative.", "range")
    assert _said(Annotated[float, Field(gt=0)], 0, label="Total") == ("Total should be more than 0.", "range")
    assert _said(Annotated[int, Field(le=5)], 6, label="Nights") == ("Nights should be 5 or less.", "range")
    assert _said(Annotated[int, Field(lt=5)], 5, label="Nights") == ("Nights should be less than 5.", "range")
    assert _said(Annotated[int, Field(ge=1, le=10)], 11, label="Score") == (
        "Score should be between 1 and 10.",
        "range",
    )
    assert _said(Annotated[int, Field(ge=1, le=20000)], 0, label="Miles") == (
        "Miles should be between 1 and 20,000.",
        "range",
    )
    assert _said(Annotated[int, Field(multiple_of=5)], 3, label="Step") == ("Step should be a multiple of 5.", "range")


def test_wrong_kinds_of_number():
    assert _said(int, "4", label="Nights") == ("Nights should be a whole number, like 40.", "number")
    assert _said(int, 4.5, label="Nights") == ("Nights should be a whole number, like 40.", "number")
    assert _said(float, "x", label="Total") == ("Total should be a number, like 12.50.", "number")


def test_a_quoted_number_gets_the_shape_hint_for_the_model_and_the_sentence_for_the_person():
    field = _field(int, label="Nights")
    outcome = field.validator.validate("4")
    assert rejection(field, outcome.issues[0], "4") == (
        "Nights should be a whole number, like 40.",
        'Send it as a JSON number, unquoted — 410, not "410".',
        "number",
    )
    # an ordinary rejection repeats nothing as a hint
    field = _field(STAFF_ID, hint="Two capital letters and four digits, like AB1234.")
    assert rejection(field, field.validator.validate("x").issues[0], "x")[1] is None


def test_booleans_and_text():
    assert _said(bool, "yes", label="Receipts attached") == ("Receipts attached should be yes or no.", "boolean")
    assert _said(str, 3, label="Name") == ("Name should be text.", "type")


# --------------------------------------------------------------------------- formats and choices


def test_email_url_uuid():
    assert _said(EmailStr, "dana@foo", label="Work email") == (
        "Work email should be an email address, like name@example.com.",
        "email",
    )
    assert _said(AnyUrl, "nope", label="Website") == (
        "Website should be a web address, like https://example.com.",
        "url",
    )
    assert _said(uuid.UUID, "x", label="Ref")[1] == "uuid"


def test_literal_choices_are_listed_in_words():
    assert _said(Literal["car", "rail", "air"], "bus", label="Mode") == ("Mode should be car, rail or air.", "choice")
    assert _said(Literal[1, 2, 3], True, label="Class") == ("Class should be 1, 2 or 3.", "choice")
    assert _said(Literal["car", "rail"] | None, "bus", label="Mode") == ("Mode should be car or rail.", "choice")


def test_dates_and_times():
    assert _said(datetime.date, "2026-13-01", label="Departure date") == (
        "Departure date should be a real date, written like 2026-11-03.",
        "date",
    )
    assert _said(datetime.date, "next week", label="Departure date")[1] == "date"
    assert _said(datetime.date, "2026-01-01T10:00:00", label="Departure date")[1] == "date"
    assert _said(datetime.datetime, "x", label="Arrived")[1] == "datetime"
    assert _said(datetime.time, "x", label="Start")[1] == "time"


# --------------------------------------------------------------------------- structured values and validators


class Address(BaseModel):
    street: Annotated[str, Field(min_length=2)]
    postcode: str


def _positive(value: int) -> int:
    if value <= 0:
        raise ValueError("must be positive")
    return value


def test_a_nested_issue_says_where():
    assert _said(Address, {"street": "x", "postcode": "AB1"}, label="Address") == (
        "Address (street) should be at least 2 characters.",
        "too_short",
    )
    assert _said(Address, {"street": "High St"}, label="Address") == ('Address needs "postcode".', "missing")
    assert _said(list[int], [1, "x"], label="Counts") == (
        "Counts (item 2) should be a whole number, like 40.",
        "number",
    )


def test_choices_and_emails_inside_a_structure_are_said_in_words_too():
    assert _said(list[Literal["car", "rail"]], ["car", "bus"], label="Modes") == (
        "Modes (item 2) should be car or rail.",
        "choice",
    )
    assert _said(list[EmailStr], ["a@example.com", "nope"], label="Emails") == (
        "Emails (item 2) should be an email address, like name@example.com.",
        "email",
    )


def test_a_custom_validators_own_words_are_kept_without_pydantics_prefix():
    assert _said(Annotated[int, AfterValidator(_positive)], 0, label="Count") == ("Must be positive.", "invalid")


def test_our_own_size_and_text_issues_keep_their_words():
    from formctl.forms.validate import size_issue

    field = _field(str, label="Notes")
    issue = size_issue("x" * 20, 10)
    assert plain(field, issue) == ("Too long: 20 characters; at most 10.", "too_long")


def test_a_view_joins_the_sentences_of_an_invalid_answer_once_each():
    field = _field(STAFF_ID, hint="Two capital letters and four digits, like AB1234.")
    assert field_error(field, field.validator.validate("ab")) == (
        "A Staff ID is two capital letters and four digits, like AB1234."
    )


def test_said_by_knows_a_hint_already_said():
    sentence = "A Staff ID is two capital letters and four digits, like AB1234."
    assert said_by(sentence, "Two capital letters and four digits, like AB1234.")
    assert not said_by(sentence, "Their full legal name.")
    assert not said_by(sentence, None)
