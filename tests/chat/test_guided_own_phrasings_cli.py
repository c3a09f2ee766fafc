"""Phrasings of our own, not the issue's (issue 37 asks the interviewer to understand people,
not a list): openings, dates, a purpose, a reference label in capitals, a pause, a returning
client's number, a phone with a remark, "no phone, sorry", a referral in a sentence and a
question back at an optional question; each through ``formctl run FORM --offline``, piped."""

from __future__ import annotations

from clitools import CLAIMANT_AND_TRIP, Cli

CLAIMANT = ["Dana Reeve", "AB1234", "dana@example.org"]
INTAKE = ["new", "34", "Jo Bloggs", "jo@example.org"]


def chat(cli: Cli, form: str, lines: list[str]) -> str:
    """``formctl run FORM --offline`` in en-GB with ``lines`` piped in; what it printed."""
    return cli.chat("run", form, "--locale", "en-GB", "--subject", "s", lines=lines)


def replies(out: str) -> list[str]:
    return [line for line in out.splitlines() if line and not line.startswith(("·", "Saved.", "Done:"))]


def test_an_opening_with_a_name_a_staff_id_in_brackets_and_a_trip(cli):
    chat(cli, "travel-claim", ["Hello, this is Priya Shah (PS2231), I need to claim for a trip to Glasgow last week."])

    assert cli.values() == {"full_name": "Priya Shah", "staff_id": "PS2231", "destination": "Glasgow"}


def test_ordinal_dates_in_one_line(cli):
    chat(cli, "travel-claim", [*CLAIMANT, "York", "I left on the 3rd of March 2026 and got back on the 5th"])

    got = cli.values()
    assert got["departure_date"] == "2026-03-03" and got["return_date"] == "2026-03-05"


def test_a_date_range(cli):
    chat(cli, "travel-claim", [*CLAIMANT, "York", "from 9 to 11 March 2026"])

    got = cli.values()
    assert got["departure_date"] == "2026-03-09" and got["return_date"] == "2026-03-11"


def test_a_purpose_without_what_leads_it_in(cli):
    chat(cli, "travel-claim", [*CLAIMANT, "York", "9 March 2026", "11 March 2026", "It was for a client meeting"])

    assert cli.values()["purpose"] == "client meeting"


def test_a_flight_with_its_destination_and_both_dates(cli):
    out = chat(cli, "travel-claim", [*CLAIMANT, "I flew to Edinburgh on the 14th of April 2026, back on the 16th"])

    got = cli.values()
    assert got["destination"] == "Edinburgh" and got["mode"] == "air"
    assert got["departure_date"] == "2026-04-14" and got["return_date"] == "2026-04-16"
    assert replies(out)[-1].startswith("Purpose of trip?")


def test_a_reference_labelled_in_everyday_capitals(cli):
    chat(cli, "travel-claim", [*CLAIMANT_AND_TRIP, "air", "FLIGHT REF: ZX91QP"])

    assert cli.values()["ticket_reference"] == "ZX91QP"


def test_a_pause_stores_nothing_and_asks_again(cli):
    out = chat(cli, "travel-claim", ["Dana Reeve", "Hang on, let me check"])

    assert "Take your time." in out and replies(out)[-1].startswith("Staff ID?")
    assert cli.values() == {"full_name": "Dana Reeve"}


def test_a_returning_client_gives_the_client_number_with_the_answer(cli):
    chat(cli, "client-intake", ["Hi there, I'm a returning client, my number's C00123"])

    assert cli.values() == {"client_type": "returning", "client_number": "C00123"}


def test_a_phone_with_a_remark_keeps_the_number_and_says_the_remark_back(cli):
    out = chat(
        cli,
        "client-intake",
        ["new", "34", "Jo Bloggs", "jo@example.org", "Call me on 0161 496 0123, evenings are best"],
    )

    assert cli.values()["phone"] == "0161 496 0123"
    assert '"evenings are best"' in out


def test_no_phone_sorry_leaves_the_phone_out(cli):
    out = chat(cli, "client-intake", ["new", "34", "Jo Bloggs", "jo@example.org", "no phone sorry"])

    assert "Left out Phone." in out and "phone" not in cli.values()


def test_a_referral_said_in_a_sentence(cli):
    chat(cli, "client-intake", ["new", "34", "Jo Bloggs", "jo@example.org", "skip", "My daughter found you online"])

    assert cli.values()["referral"] == "web"


def test_a_question_back_at_an_optional_question_says_it_may_be_left_out(cli):
    out = chat(cli, "travel-claim", [*CLAIMANT_AND_TRIP, "car", "What's the mileage rate?"])

    said = replies(out)
    assert said[-2] == 'Miles driven: a whole number, like 40. It\'s optional: say "skip" to leave it out.'
    assert said[-1].startswith("Miles driven?")
    assert "mileage" not in cli.values()


def test_a_name_with_a_remark_after_a_dash_gives_the_name(cli):
    out = chat(cli, "travel-claim", ["Dana Reeve — but my badge says D. Reeve"])

    assert cli.values() == {"full_name": "Dana Reeve"}
    assert '"but my badge says D. Reeve"' in out


def test_changes_at_the_read_back_in_everyday_words(cli):
    lines = [*CLAIMANT_AND_TRIP, "rail", "TR-20931", "80", "skip", "100"]
    changes = ["Change the destination to York", "Actually, make the total 190", "the meals were 45, not 40", "yes"]
    chat(cli, "travel-claim", [*lines, *changes])

    got = cli.values()
    assert (got["destination"], got["total"], got["meals"]) == ("York", 190.0, 45.0)


def test_a_description_that_says_i_dont_know_is_an_answer_not_a_refusal(cli):
    needs = "My employer hasn't paid me for two months and I don't know what to do."
    chat(cli, "client-intake", ["new", "34", "Jo Bloggs", "jo@example.org", "skip", "web", needs])

    assert cli.values()["needs"] == needs


def test_a_referral_that_names_none_of_the_options_is_other_said_back(cli):
    out = chat(
        cli, "client-intake", ["new", "34", "Jo Bloggs", "jo@example.org", "skip", "Citizens Advice sent me here"]
    )

    assert "Referral source: other" in out  # the form's own aliases, or the words said back as "other"
    assert cli.values()["referral"] == "other"


def test_an_amount_all_in_at_the_hotel_question_is_the_hotel_cost_not_the_total(cli):
    chat(cli, "travel-claim", [*CLAIMANT_AND_TRIP, "rail", "TR-20931", "Two nights in a Travelodge, £118 all in"])

    got = cli.values()
    assert got["accommodation"] == 118.0 and "total" not in got


def test_what_changed_answers_have_the_details_changed_and_corrects_it(cli):
    lines = ["returning", "34", "Jo Bloggs", "jo@example.org", "0161 496 0000", "C40404"]
    out = chat(cli, "client-intake", [*lines, "Only my phone number, it's now 07700 900888"])

    assert "Got it — Details changed: yes." in out and "Got it — Phone: 07700 900888." in out
    got = cli.values()
    assert got["details_changed"] is True and got["phone"] == "07700 900888"


def test_a_referrer_no_option_or_alias_names_is_other_with_the_words_said_back(cli):
    out = chat(cli, "client-intake", [*INTAKE, "skip", "The man at the bus stop told me"])

    assert 'I\'ve put Referral source as "other" ("The man at the bus stop told me").' in out
    assert cli.values()["referral"] == "other"


def test_claim_for_a_name_is_the_name_not_the_purpose(cli):
    chat(cli, "travel-claim", ["Hi, claim for Sarah Jones, staff ID SJ4410. Went to Birmingham for a workshop."])

    got = cli.values()
    assert got["full_name"] == "Sarah Jones" and got["purpose"] == "workshop"


def test_an_answer_said_unsure_with_a_question_mark_is_still_the_answer(cli):
    chat(cli, "travel-claim", [*CLAIMANT, "Leeds, I think?"])

    assert cli.values()["destination"] == "Leeds"
