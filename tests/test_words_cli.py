"""Every rejection reads like a person wrote it, through the real ``formctl`` command: the piped
chat, ``formctl fill`` and ``formctl check`` (issue 15, case 2)."""

from __future__ import annotations

import json
import re
from typing import Any

from clitools import invoke, start
from fixture_project import FORMS

STAFF_ID_SENTENCE = "A Staff ID is two capital letters and four digits, like AB1234."
# What pydantic, email-validator or Python say, which a person must never read.
MACHINE = re.compile(r"String should|Input should|pattern|\^\[A-Z\]|\\d|value is not a valid|Expected |"
                     r"did not pass|division by zero|ZeroDivisionError")


def _ok(*args: str, input: str | None = None) -> Any:
    result = invoke(*args, input=input)
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    return result


def test_a_piped_chat_says_each_rejection_once_in_plain_words(store):
    lines = ["Dana Reeve", "ab12345", "AB1234", "dana@foo", "dana@example.com", "Leeds", "2026-03-02",
             "2026-03-04", "x", "client visit"]
    out = _ok("run", "travel-claim", "--offline", "--subject", "dana", "--forms", str(FORMS), "--store", store,
              input="\n".join(lines) + "\n").stdout
    assert not MACHINE.search(out), out
    said = out.splitlines()
    # the Staff ID: rejected in the field's own words, then asked again without repeating them
    at = said.index(f"That wasn't accepted. {STAFF_ID_SENTENCE}")
    assert said[at + 1] == "Staff ID?"
    assert said[at - 1] == "· rejected Staff ID"  # the trail names the field; the reply says why, once
    assert out.lower().count("two capital letters and four digits") == 2  # the first question, the rejection
    # the email and a length: built from the constraint
    at = said.index("That wasn't accepted. Work email should be an email address, like name@example.com.")
    assert said[at + 1] == "Work email?"
    at = said.index("That wasn't accepted. Purpose of trip should be at least 3 characters.")
    assert said[at + 1] == "Purpose of trip?"
    # dates and numbers read as well as before
    assert "Departure date? A date, like 2026-11-03." in said


def test_fill_prints_the_plain_sentence_and_json_gives_it_with_a_code(store):
    instance_id = start(store)
    human = invoke("fill", instance_id, "staff_id=ab12345", "email=dana@foo", "--store", store, "--forms", str(FORMS))
    assert human.exit_code == 1
    assert f"rejected Staff ID: {STAFF_ID_SENTENCE}" in human.stdout
    assert "rejected Work email: Work email should be an email address, like name@example.com." in human.stdout
    assert not MACHINE.search(human.stdout), human.stdout
    data = json.loads(invoke("fill", instance_id, "staff_id=ab1", "full_name=D", "--json", "--store", store,
                             "--forms", str(FORMS)).stdout)
    rows = {row["field"]: row for row in data["rejected"]}
    assert rows["staff_id"] == {"field": "staff_id", "message": STAFF_ID_SENTENCE, "code": "pattern"}
    assert rows["full_name"] == {"field": "full_name", "message": "Full name should be at least 2 characters.",
                                 "code": "too_short"}
    # the view the model reads next says the same words about the invalid answer
    fields = {row["id"]: row for row in data["fields"]}  # a fill result is the view plus what the write did
    assert fields["staff_id"]["error"] == STAFF_ID_SENTENCE


def test_a_quoted_number_tells_the_model_how_to_resend_it(store):
    instance_id = start(store, {"full_name": "Dana Reeve", "staff_id": "AB1234", "email": "dana@example.org",
                                "destination": "Leeds", "departure_date": "2026-03-02", "return_date": "2026-03-04",
                                "purpose": "client visit", "mode": "car"})
    data = json.loads(invoke("fill", instance_id, 'mileage="forty"', "--json", "--store", store,
                             "--forms", str(FORMS)).stdout)
    (row,) = data["rejected"]
    assert row["message"] == "Miles driven should be a whole number, like 40."
    assert row["code"] == "number" and "JSON number" in row["hint"]


def test_check_shows_a_pattern_field_by_its_example(store):
    out = _ok("check", "travel-claim", "--forms", str(FORMS)).stdout
    assert re.search(r"staff_id\s+Staff ID\s+text like AB1234\s+yes", out), out
    data = json.loads(_ok("check", "travel-claim", "--json", "--forms", str(FORMS)).stdout)
    (staff_id,) = [f for s in data["steps"] for f in s["fields"] if f["id"] == "staff_id"]
    assert staff_id["type"] == "text like AB1234"
