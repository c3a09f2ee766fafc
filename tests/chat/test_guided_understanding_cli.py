"""The guided interviewer reads what a person is doing before any value (issue 37), through
``formctl run FORM --offline`` with the chat piped in: a question back is answered and nothing
stored; not knowing or refusing leaves an optional answer out and says why a required one is
needed; a line of several answers (an opening, "Bristol, for the supplier audit") fills each
field it names; a free-text answer keeps every sentence; a correction typed anywhere (unasked,
at another question, at the read-back) changes the field it names or whose shape it has, and
says the field back. Every line here is one a person wrote to the interviewer."""

from __future__ import annotations

import pytest

from clitools import CLAIMANT_AND_TRIP, Cli


def chat(cli: Cli, form: str, lines: list[str]) -> str:
    """``formctl run FORM --offline`` in en-GB with ``lines`` piped in; what it printed."""
    return cli.chat("run", form, "--locale", "en-GB", "--subject", "s", lines=lines)


def status(cli: Cli) -> str:
    (row,) = cli.json("instances")["instances"]
    return str(row["status"])


def replies(out: str) -> list[str]:
    """The chat's reply lines (not the activity trail, not the closing "Saved." line)."""
    return [line for line in out.splitlines() if line and not line.startswith(("·", "Saved.", "Done:"))]


def last_question(out: str) -> str:
    return replies(out)[-1]


CLAIMANT = ["Dana Reeve", "AB1234", "dana@example.org"]
RAIL_TRIP = [*CLAIMANT_AND_TRIP, "rail", "TR-20931"]
INTAKE_CONTACT = ["new", "34", "Jo Bloggs", "jo@example.org"]


# ------------------------------------------------------------------ asking back


@pytest.mark.parametrize(
    "form, before, question, field, explained",
    [
        ("travel-claim", [], "why do you need my name?", "Full name", "needs your full name"),
        (
            "travel-claim",
            ["Dana Reeve"],
            "Where do I find my staff ID?",
            "Staff ID",
            "Two capital letters and four digits",
        ),
        (
            "travel-claim",
            [*CLAIMANT, "Leeds", "2 March 2026", "4 March 2026"],
            "Sorry, what do you mean by purpose?",
            "Purpose of trip",
            "Purpose of trip:",
        ),
        ("travel-claim", CLAIMANT, "what counts as a business expense?", "Destination", "Destination:"),
        ("client-intake", ["new", "34", "Jo Bloggs"], "why do you need my email?", "Email", "needs your email"),
    ],
)
def test_a_question_back_is_answered_and_nothing_is_stored(cli, form, before, question, field, explained):
    out = chat(cli, form, [*before, question])

    said = replies(out)
    assert explained in said[-2]
    assert last_question(out).startswith(f"{field}?") or last_question(out).startswith(f"{field} —")
    assert question not in cli.values().values()
    assert len(cli.values()) == len(before)


def test_a_question_back_with_the_answer_after_it_gives_the_answer(cli):
    out = chat(cli, "travel-claim", ["Dana Reeve", "Where do I find my staff ID? Oh, found it: AB1234"])

    assert "Got it — Staff ID: AB1234." in out
    assert cli.values()["staff_id"] == "AB1234"


# ------------------------------------------------------------------ not knowing, refusing, putting off


@pytest.mark.parametrize(
    "line", ["I don't have a phone at the moment", "not sure of my new number yet, can we skip it?"]
)
def test_not_having_an_optional_answer_leaves_it_out_and_moves_on(cli, line):
    out = chat(cli, "client-intake", [*INTAKE_CONTACT, line])

    assert "Left out Phone." in out
    assert last_question(out).startswith("Referral source")
    assert "phone" not in cli.values()


def test_not_knowing_a_required_answer_says_why_it_is_needed_and_asks_again(cli):
    out = chat(cli, "client-intake", ["new", "34", "Jo Bloggs", "I don't know it off by heart"])

    assert "Email is required, so I can't leave it out. The Client intake needs your email to go ahead." in out
    assert last_question(out).startswith("Email?")
    assert "email" not in cli.values()


def test_a_required_answer_put_off_is_asked_after_the_others_of_its_step(cli):
    out = chat(cli, "travel-claim", ["Dana Reeve", "not sure, can we come back to that?", "dana@example.org", "AB1234"])

    assert "No problem, we'll come back to Staff ID." in out
    said = replies(out)
    assert said.index("No problem, we'll come back to Staff ID.") < said.index("Got it — Work email: dana@example.org.")
    assert cli.values() == {"full_name": "Dana Reeve", "email": "dana@example.org", "staff_id": "AB1234"}


def test_none_after_a_refused_optional_cost_leaves_it_out_once_and_moves_on(cli):
    out = chat(cli, "travel-claim", [*RAIL_TRIP, "I stayed at my sister's", "none", "none"])

    assert out.count("Left out Accommodation cost.") == 1
    assert "Left out Meals cost." in out
    assert last_question(out).startswith("Total claimed?")


# ------------------------------------------------------------------ several answers in one line


def test_an_opening_with_a_name_an_age_and_an_email_fills_each(cli):
    opening = "Hi, I'm Grace Okafor. I've not been here before. I'm 45 and my email is grace.okafor@example.org"
    out = chat(cli, "client-intake", [opening])

    assert cli.values() == {
        "client_type": "new",
        "age": 45,
        "full_name": "Grace Okafor",
        "email": "grace.okafor@example.org",
    }
    assert last_question(out).startswith("Phone?")


def test_an_opening_with_name_staff_id_city_date_purpose_and_drove_fills_each(cli):
    opening = (
        "Hi, I'm Tom Baker, staff ID TB4821. I went to Manchester on 3 March 2026 for a training course and drove."
    )
    out = chat(cli, "travel-claim", [opening])

    assert cli.values() == {
        "full_name": "Tom Baker",
        "staff_id": "TB4821",
        "destination": "Manchester",
        "departure_date": "2026-03-03",
        "purpose": "training course",
        "mode": "car",
    }
    assert last_question(out).startswith("Work email?")


def test_a_destination_with_its_purpose_gives_both(cli):
    chat(cli, "travel-claim", [*CLAIMANT, "Bristol, for the supplier audit"])

    got = cli.values()
    assert got["destination"] == "Bristol" and got["purpose"] == "supplier audit"


def test_a_mode_with_its_ticket_reference_gives_both(cli):
    out = chat(cli, "travel-claim", [*CLAIMANT_AND_TRIP, "train, ticket ref TR-20931"])

    got = cli.values()
    assert got["mode"] == "rail" and got["ticket_reference"] == "TR-20931"
    assert last_question(out).startswith("Accommodation cost?")


def test_both_dates_in_one_line_the_second_taking_its_month_from_the_first(cli):
    out = chat(cli, "travel-claim", [*CLAIMANT, "Leeds", "went down on 9 March 2026 and came back on the 11th"])

    got = cli.values()
    assert got["departure_date"] == "2026-03-09" and got["return_date"] == "2026-03-11"
    assert last_question(out).startswith("Purpose of trip?")


@pytest.mark.parametrize(
    "form, before, line, field, value",
    [
        ("client-intake", INTAKE_CONTACT, "My mobile is 07700 900982 if that helps", "phone", "07700 900982"),
        ("travel-claim", [*CLAIMANT_AND_TRIP, "air"], "booking ref is QX7RTA", "ticket_reference", "QX7RTA"),
    ],
)
def test_a_value_inside_a_sentence_is_stored_without_the_sentence(cli, form, before, line, field, value):
    chat(cli, form, [*before, line])

    assert cli.values()[field] == value


# ------------------------------------------------------------------ free text is whole


def test_every_sentence_of_a_free_text_answer_is_kept(cli):
    needs = "Housing disrepair. The landlord ignores letters; she needs advice on the deposit and repairs."
    chat(cli, "client-intake", [*INTAKE_CONTACT, "skip", "web", needs])

    assert cli.values()["needs"] == needs
    assert status(cli) == "ready"


# ------------------------------------------------------------------ corrections anywhere


def test_a_ticket_reference_corrected_at_the_accommodation_question(cli):
    out = chat(cli, "travel-claim", [*CLAIMANT_AND_TRIP, "rail", "TR-88231", "sorry, the ticket ref was TR-88321"])

    assert "Got it — Ticket reference: TR-88321." in out
    got = cli.values()
    assert got["ticket_reference"] == "TR-88321" and "accommodation" not in got
    assert last_question(out).startswith("Accommodation cost?")


def test_an_email_corrected_by_its_shape_at_another_question(cli):
    out = chat(
        cli,
        "travel-claim",
        ["Lina Haddad", "AB1234", "lina88@example.org", "sorry, I missed a dot, the email is lina.88@example.org"],
    )

    assert "Got it — Work email: lina.88@example.org." in out
    assert cli.values()["email"] == "lina.88@example.org"
    assert last_question(out).startswith("Destination?")


def test_a_phone_found_later_is_taken_at_another_question(cli):
    lines = [
        *INTAKE_CONTACT,
        "not sure of my new number yet, can we skip it?",
        "Actually I've found it, my new mobile is 07700 900555",
    ]
    out = chat(cli, "client-intake", lines)

    assert "Got it — Phone: 07700 900555." in out
    assert cli.values()["phone"] == "07700 900555"
    assert last_question(out).startswith("Referral source")


def test_a_date_corrected_at_the_read_back_is_changed_and_read_back_again(cli):
    lines = [*RAIL_TRIP, "skip", "skip", "120"]
    wrong = "Wait, the return date's wrong: I came back on 5 March 2026, not the 4th."
    out = chat(cli, "travel-claim", [*lines, wrong, "yes"])

    assert "Got it — Return date: 2026-03-05." in out
    assert "There is no question called" not in out
    assert out.split("Got it — Return date: 2026-03-05.")[1].count("- Return date: 2026-03-05") == 1
    assert cli.values()["return_date"] == "2026-03-05"
    assert status(cli) == "complete"
