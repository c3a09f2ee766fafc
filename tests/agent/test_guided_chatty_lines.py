"""Reading a chatty line at a free-text question (docs/guided.md, "Reading a chatty line"): the
pure functions that decide what a line clearly gives, and what reads as a refusal."""

from __future__ import annotations

import pytest

from formctl.agent.models.guided.answers import Kind, declines
from formctl.agent.models.guided.natural import meant, place

KINDS = {"full_name": Kind("text"), "staff_id": Kind("text", pattern=r"^[A-Z]{2}\d{4}$"), "email": Kind("email")}
OTHERS = frozenset({"staff id", "staff_id", "work email", "email"})


@pytest.mark.parametrize(
    "line, name, said_back",
    [
        ("Oh hello! It's Dana Reeve, though everyone calls me Dee.", "Dana Reeve", ["though everyone calls me Dee"]),
        (
            "Jo Bloggs. Well, Joanna, but Jo Bloggs on everything.",
            "Jo Bloggs",
            ["Well, Joanna, but Jo Bloggs on everything."],
        ),
        ("Hi, Dana Reeve!", "Dana Reeve", []),
        ("Oh hello! I'm Dana Reeve, AB1234", "Dana Reeve", []),
    ],
)
def test_a_chatty_line_gives_the_name_it_clearly_holds(line, name, said_back):
    placed = place(line, "full_name", KINDS, OTHERS)
    assert placed is not None and placed.values["full_name"] == name
    assert placed.leftover == said_back


@pytest.mark.parametrize(
    "line, alone",
    [
        ("Sorry, I swapped the digits.", False),  # beside "Age: 34"
        ("I swapped the digits.", False),
        ("Sorry, I swapped the digits.", True),
        ("Oh hello!", True),
        ("Hello there. I think I told you already.", True),
    ],
)
def test_a_remark_is_not_a_name(line, alone):
    placed = place(line, "full_name", KINDS, OTHERS, alone=alone)
    assert placed is not None and "full_name" not in placed.values


def test_one_plain_sentence_alone_is_still_the_persons_answer_as_written():
    assert place("I need help finding housing", "full_name", KINDS, OTHERS) is None  # read whole, as before
    assert place("Leeds, UK", "full_name", KINDS, OTHERS) is None
    assert place("yes", "full_name", KINDS, OTHERS) is None  # a one-word answer, not a remark


@pytest.mark.parametrize(
    "words, refuses",
    [
        ("I'd rather not give a phone number.", True),
        ("I\u2019d rather not say", True),
        ("prefer not to say", True),
        ("I don't want to share that", True),
        ("No thanks", True),
        ("I'd rather not give my mobile, but 0113 496 0000 works", False),  # it gives a number
        ("Dana Reeve", False),
        ("not sure", False),
    ],
)
def test_a_refusal_is_read_as_one_only_when_the_line_gives_nothing_else(words, refuses):
    assert declines(words) is refuses


@pytest.mark.parametrize(
    ("line", "answer"),
    [
        ("Leeds, no wait, York", "York"),
        ("Dana Reeve, sorry I mean Dana Rees", "Dana Rees"),
        ("5 March 2026 - make that 6 March 2026", "6 March 2026"),
        ("Leeds, no wait, York, no wait, Bristol", "Bristol"),
        ("Sorry, I mean Dana Reeve", "Dana Reeve"),
        ("Correction: York", "York"),
    ],
)
def test_words_that_take_a_value_back_leave_the_one_meant(line, answer):
    assert meant(line) == answer


@pytest.mark.parametrize(
    "line",
    [
        "York",
        "Leeds, sorry for the wait",  # "sorry" alone takes nothing back
        "Leeds actually",
        "I need help with the letter my landlord sent about the arrears, I mean the rent arrears",
        "Leeds, no wait",  # nothing given after it
    ],
)
def test_a_line_that_takes_nothing_back_is_read_as_it_is(line):
    assert meant(line) == line


@pytest.mark.parametrize(
    "line", ["hi it's dana reeve", "hello I'm Dana Reeve", "hey, it's Dana Reeve", "hi its dana reeve"]
)
def test_a_greeting_and_a_lead_in_are_not_part_of_the_name(line):
    placed = place(line, "full_name", KINDS, OTHERS)
    assert placed is not None and placed.values["full_name"].lower() == "dana reeve"


def test_a_greeting_alone_is_not_taken_for_a_name():
    placed = place("hi there", "full_name", KINDS, OTHERS)
    assert placed is None or "full_name" not in placed.values
