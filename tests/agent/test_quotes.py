"""The quote checker on its own: real phrasings people type, classified said / reading / assumed."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from enum import Enum
from typing import Annotated, Literal

import pytest
from pydantic import EmailStr, Field

from formctl.forms.quotes import ASSUMED, READING, SAID, PersonMessage, check_quote, find_quote, value_kind

AT = "2026-11-30T23:50:00Z"  # a Monday


def person(*texts: str, at: str = AT) -> list[PersonMessage]:
    return [PersonMessage(t, turn=i + 1, at=at) for i, t in enumerate(texts)]


def kind_of(text: str, quote: str | None, value, annotation, at: str = AT) -> str:
    return check_quote(person(text, at=at), quote, value, annotation).kind


class Cabin(Enum):
    ECONOMY = "Y"
    BUSINESS = "J"


# --------------------------------------------------------------------------- finding the quote


@pytest.mark.parametrize(
    "message, quote",
    [
        ("My email is jo@example.com", "my email is jo@example.com"),
        ("My   email is\njo@example.com", "email is jo@example.com"),
        ("I'm off to PARIS.", "off to paris"),
        ("I said “next Tuesday”, didn’t I?", '"next Tuesday", didn\'t I'),
        ("Zoë Smith", "Zoe Smith"),
        ("it's £1,204.50 all in", "£1,204.50"),
        ("it's £1,204.50 all in", "1,204.50 all in"),
    ],
)
def test_a_quote_is_found_whatever_its_case_spacing_punctuation_and_quote_marks(message, quote):
    places = find_quote(person(message), quote)
    assert len(places) == 1
    msg, (start, end) = places[0]
    assert msg.turn == 1 and 0 <= start < end <= len(message)


@pytest.mark.parametrize("quote", ["", "   ", "?!", None])
def test_no_quote_is_assumed(quote):
    assert kind_of("jo@example.com", quote, "jo@example.com", EmailStr) == ASSUMED


@pytest.mark.parametrize("quote", ["joanna@example.com", "my email", "jo@exam", "example com jo"])
def test_a_quote_the_person_never_wrote_is_assumed(quote):
    assert kind_of("jo@example.com is my email? no wait", quote, "jo@example.com", EmailStr) in (ASSUMED, READING)
    assert kind_of("hello there", quote, "jo@example.com", EmailStr) == ASSUMED


def test_words_are_matched_whole_not_inside_other_words():
    assert kind_of("I live in Parisville", "Paris", "Paris", str) == ASSUMED
    assert kind_of("cab 12345", "ab 1234", "AB1234", str) == ASSUMED


def test_the_quote_comes_back_as_the_person_wrote_it_with_its_turn_and_span():
    msgs = person("hi", "Call me, my e-mail is Jo.Smith@Example.com thanks")
    check = check_quote(msgs, "MY E-MAIL IS jo.smith@example.com", "jo.smith@example.com", EmailStr)
    assert check.kind == SAID
    assert check.quote == "my e-mail is Jo.Smith@Example.com"
    assert check.turn == 2
    assert check.message[check.span[0] : check.span[1]] == check.quote


@pytest.mark.parametrize(
    "message, quote, shown",
    [
        ("it's “£1,204.50”.", "1,204.50", "£1,204.50"),
        ("It's -3 out", "3", "-3"),
        ("(jo@example.com)", "jo", "jo@example.com"),
    ],
)
def test_the_quote_shown_takes_in_the_signs_written_against_it(message, quote, shown):
    assert check_quote(person(message), quote, "x", str).quote == shown


def test_when_the_quote_occurs_twice_the_message_holding_the_value_wins_then_the_latest():
    msgs = [PersonMessage("the 3rd of March", 1, "2029-01-01"), PersonMessage("the 3rd of March", 2, AT)]
    assert (check_quote(msgs, "3rd of march", "2029-03-03", date).turn) == 1
    assert (check_quote(msgs, "3rd of march", "2027-03-03", date).turn) == 2
    check = check_quote(msgs, "3rd of March", "2027-03-05", date)
    assert (check.kind, check.turn) == (READING, 2)
    twice = person("Paris", "I said Paris")
    assert (check_quote(twice, "paris", "Paris", str).turn) == 2


# --------------------------------------------------------------------------- text


@pytest.mark.parametrize(
    "message, quote, value, expected",
    [
        ("my name is jo smith", "jo smith", "Jo Smith", SAID),
        ("My name is JO   SMITH.", "my name is jo smith", "Jo Smith", SAID),
        ("it's AB 1234", "AB 1234", "AB1234", SAID),
        ("staff number ab-1234", "ab-1234", "AB1234", SAID),
        ("staff number ab1234", "ab1234", "AB 1234", SAID),
        ("I went for the sales conference", "for the sales conference", "sales conference", SAID),
        ("I went for the sales conference", "for the sales conference", "Conference in Paris", READING),
        ("Off to Zürich next week", "Off to Zürich", "Zurich", SAID),
        ("Smith, Jo", "Smith, Jo", "Jo Smith", READING),
    ],
)
def test_text(message, quote, value, expected):
    assert kind_of(message, quote, value, Annotated[str, Field(min_length=2)]) == expected


# --------------------------------------------------------------------------- email


@pytest.mark.parametrize(
    "message, quote, value, expected",
    [
        ("it's jo@example.com", "jo@example.com", "jo@example.com", SAID),
        ("it's JO@Example.COM", "jo@example.com", "jo@example.com", SAID),
        ("it's “jo@example.com”.", "jo@example.com", "jo@example.com", SAID),
        ("jo @ example.com", "jo @ example.com", "jo@example.com", SAID),
        ("jo at example dot com", "jo at example dot com", "jo@example.com", READING),
        ("it's jo@example.com", "jo@example.com", "jo@example.co", READING),
        ("it's jo@example.co", "jo@example.co", "jo@example.com", READING),
        ("it's bo@example.com", "example.com", "jo@example.com", READING),
    ],
)
def test_email(message, quote, value, expected):
    assert kind_of(message, quote, value, EmailStr) == expected


# --------------------------------------------------------------------------- numbers


@pytest.mark.parametrize(
    "message, value, expected",
    [
        ("it came to £1,204.50 in the end", 1204.5, SAID),
        ("it came to £1,204.50 in the end", 1204.50, SAID),
        ("about 1204.5 quid", 1204.5, SAID),
        ("it was 1 204,50 €", 1204.5, SAID),
        ("it was 1.204,50 €", 1204.5, SAID),
        ("€12,50 for lunch", 12.5, SAID),
        ("$1,200", 1200, SAID),
        ("I'm 34", 34, SAID),
        ("I'm 34 years old", 34.0, SAID),
        ("twelve hundred", 1200, READING),
        ("1.2k", 1200, READING),
        ("120 and 80", 200, READING),
        ("£1,204.50", 1204, READING),
        ("I drove 412 miles", 412, SAID),
        ("-3 degrees", -3, SAID),
    ],
)
def test_numbers(message, value, expected):
    assert kind_of(message, message, value, Annotated[float, Field(ge=0)] | None) == expected


def test_a_number_is_never_a_boolean():
    assert kind_of("1", "1", True, int) == READING
    assert kind_of("1", "1", Decimal("1"), int) == SAID


# --------------------------------------------------------------------------- choices


@pytest.mark.parametrize(
    "message, value, expected",
    [
        ("I'm a returning client", "returning", SAID),
        ("RETURNING", "returning", SAID),
        ("I've been before", "returning", READING),
        ("I came by car", "car", SAID),
        ("I drove", "car", READING),
        ("not car, rail", "rail", SAID),
    ],
)
def test_literal_choices(message, value, expected):
    assert kind_of(message, message, value, Literal["car", "rail", "air", "returning"]) == expected


def test_an_enum_choice_is_said_by_its_value_or_its_label():
    assert kind_of("business please", "business", "J", Cabin) == SAID
    assert kind_of("cabin J", "cabin J", "J", Cabin) == SAID
    assert kind_of("the cheap seats", "the cheap seats", "Y", Cabin) == READING


# --------------------------------------------------------------------------- dates


@pytest.mark.parametrize(
    "message, value, expected",
    [
        ("I leave on the 3rd of March", "2027-03-03", SAID),
        ("3rd of March", "2026-03-03", SAID),
        ("March 3rd, 2027", "2027-03-03", SAID),
        ("8 December 2026", "2026-12-08", SAID),
        ("8 Dec", "2026-12-08", SAID),
        ("Tuesday 8 Dec.", "2026-12-08", SAID),
        ("2026-12-08", "2026-12-08", SAID),
        ("25/12/2026", "2026-12-25", SAID),
        ("12/25/2026", "2026-12-25", SAID),
        ("08/12/2026", "2026-12-08", READING),  # 8 December or 12 August
        ("08/12/2026", "2026-08-12", READING),
        ("8 December 2026", "2026-12-09", READING),
        ("3rd of March", "2029-03-03", READING),
        ("next Tuesday", "2026-12-08", READING),
        ("tomorrow", "2026-12-01", READING),
        ("the day I come back", "2026-12-08", READING),
    ],
)
def test_dates(message, value, expected):
    assert kind_of(message, message, value, date) == expected


@pytest.mark.parametrize(
    "words, reads_as",
    [
        ("next Tuesday", "2026-12-08"),
        ("on Tuesday", "2026-12-01"),
        ("this Friday", "2026-12-04"),
        ("last Friday", "2026-11-27"),
        ("tomorrow", "2026-12-01"),
        ("yesterday", "2026-11-29"),
        ("in 3 days", "2026-12-03"),
        ("in two weeks", "2026-12-14"),
    ],
)
def test_relative_words_are_read_against_the_messages_own_date(words, reads_as):
    check = check_quote(person(f"I fly {words}"), words, reads_as, date)
    assert (check.kind, check.reads_as) == (READING, reads_as)


def test_a_relative_word_reads_from_its_own_message_not_from_today():
    msgs = [PersonMessage("see you tomorrow", 1, "2026-06-01T09:00:00Z")]
    assert check_quote(msgs, "tomorrow", "2026-06-02", date).reads_as == "2026-06-02"


# --------------------------------------------------------------------------- booleans


@pytest.mark.parametrize(
    "message, value, expected",
    [
        ("yes", True, SAID),
        ("yeah", True, SAID),
        ("Yep, they have", True, SAID),
        ("no", False, SAID),
        ("nope, same as before", False, SAID),
        ("they haven't changed", False, SAID),
        ("no", True, READING),
        ("yes", False, READING),
        ("yes, no, I don't know", True, READING),
        ("I moved house", True, READING),
    ],
)
def test_booleans(message, value, expected):
    assert kind_of(message, message, value, bool) == expected


# --------------------------------------------------------------------------- kinds


@pytest.mark.parametrize(
    "annotation, kind",
    [
        (str, "text"),
        (Annotated[str, Field(pattern=r"^[A-Z]{2}\d{4}$")], "text"),
        (EmailStr, "email"),
        (EmailStr | None, "email"),
        (int, "number"),
        (Annotated[float, Field(ge=0)] | None, "number"),
        (Decimal, "number"),
        (date, "date"),
        (bool, "bool"),
        (Literal["a", "b"], "choice"),
        (Cabin, "choice"),
    ],
)
def test_value_kinds(annotation, kind):
    assert value_kind(annotation).kind == kind


@pytest.mark.parametrize("annotation", [list[str], dict[str, int], float | list[int]])
def test_types_the_checker_cannot_normalise_have_no_kind(annotation):
    assert value_kind(annotation) is None
    assert kind_of("a b c", "a b c", ["a"], annotation) == READING


def test_an_apostrophe_holds_a_word_together_however_it_is_typed():
    assert kind_of("Well, it’s Leeds, UK!", "its Leeds UK", "UK", str) == SAID
    assert kind_of("it's jo@example.com", "it’s jo@example.com", "jo@example.com", EmailStr) == SAID
    assert kind_of("they haven’t changed", "haven't changed", False, bool) == SAID


def test_the_parts_of_an_address_are_not_a_name():
    assert kind_of("dana.reeve@example.com", "dana.reeve@example.com", "Dana Reeve", str) == READING
    assert (
        kind_of("Dana Reeve, dana.reeve@example.com", "Dana Reeve, dana.reeve@example.com", "Dana Reeve", str) == SAID
    )
    assert kind_of("see www.example.com/jo", "www.example.com/jo", "www.example.com/jo", str) == SAID


def test_a_value_assembled_around_an_address_is_a_reading_not_said():
    line = [PersonMessage("I'm Sam Lee, sam.lee@example.org, 07700 900123", 1)]
    assert check_quote(line, line[0].text, "I'm Sam Lee, 07700 900123", str).kind == READING
    assert check_quote(line, line[0].text, "Sam Lee", str).kind == SAID
    assert check_quote(line, line[0].text, "07700 900123", str).kind == SAID
