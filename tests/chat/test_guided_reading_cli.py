"""The guided model takes what a chatty line clearly gives and nothing else, through the real
``formctl`` command with the chat piped in: a greeting and an aside around a name leave the
name; an apology beside a labelled correction is not stored as the name asked for (the name is
asked again); a refusal of an optional answer leaves it out, and of a required one is said back
and asked again. (The three lines are the ones `formctl eval` found: scenarios/.)"""

from __future__ import annotations

import json

import pytest

from clitools import FORMS, formctl

pytestmark = pytest.mark.e2e


def chat(store: str, form: str, lines: list[str]) -> str:
    done = formctl(
        "run", form, "--offline", "--subject", "s", "--store", store, "--forms", str(FORMS),
        input="".join(f"{x}\n" for x in lines),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def stored(store: str) -> dict:
    listed = json.loads(formctl("instances", "--store", store, "--forms", str(FORMS), "--json").stdout)
    (row,) = listed["instances"]
    done = formctl("export", row["instance_id"], "--store", store, "--forms", str(FORMS), "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["values"]


def last_question(out: str) -> str:
    """The chat's last reply line (before the closing "Saved. Carry on with: ..." line)."""
    return [line for line in out.splitlines() if not line.startswith(("·", "Saved."))][-1]


def test_a_greeting_and_an_aside_around_the_name_leave_the_name(store):
    out = chat(store, "travel-claim", ["Oh hello! It's Dana Reeve, though everyone calls me Dee."])

    assert "Got it — Full name: Dana Reeve." in out
    assert '"though everyone calls me Dee"' in out.split("I wasn't sure which question this answers:")[1]
    assert stored(store)["full_name"] == "Dana Reeve"


def test_an_apology_beside_a_labelled_correction_is_not_stored_as_the_name(store):
    out = chat(store, "client-intake", ["returning", "43", "Sorry, I swapped the digits. Age: 34"])

    assert "Got it — Age: 34." in out
    assert '"Sorry, I swapped the digits."' in out.split("I wasn't sure which question this answers:")[1]
    assert last_question(out).startswith("Full name?")
    values = stored(store)
    assert values["age"] == 34 and "full_name" not in values


def test_a_name_then_a_remark_about_it_gives_the_name(store):
    out = chat(store, "client-intake", ["returning", "34", "Jo Bloggs. Well, Joanna, but Jo Bloggs on everything."])

    assert "Got it — Full name: Jo Bloggs." in out
    assert stored(store)["full_name"] == "Jo Bloggs"


def test_refusing_an_optional_phone_leaves_it_out(store):
    out = chat(
        store, "client-intake", ["new", "34", "Jo Bloggs", "jo@example.org", "I'd rather not give a phone number."]
    )

    assert "Left out Phone." in out
    assert last_question(out).startswith("Referral source")
    assert "phone" not in stored(store)


def test_refusing_a_required_answer_is_said_back_and_asked_again(store):
    out = chat(store, "client-intake", ["new", "34", "I'd rather not say."])

    assert "I understand, but Full name is required, so I can't leave it out." in out
    assert last_question(out).startswith("Full name?")
    assert "full_name" not in stored(store)
