"""What the person said is what is stored, through the ``formctl`` command (in process, the
``cli`` fixture) with the chat piped in (the guided offline model): a bare answer goes to the
question shown last, a sentence is not stored as a name, amounts are read right or refused, what
the chat acknowledged is stored, and a refused correction says what it set aside. The piped chat
through the real entry point in a child process is tests/chat/test_piped_chat.py's."""

from __future__ import annotations

import pytest

from clitools import CLAIMANT_AND_TRIP, Cli

UP_TO_TOTAL = [*CLAIMANT_AND_TRIP, "rail", "TR-88231", "skip", "skip"]


def instance_id(cli: Cli) -> str:
    rows = cli.json("instances")["instances"]
    assert len(rows) == 1
    return str(rows[0]["instance_id"])


def values(cli: Cli, iid: str) -> dict:
    return dict(cli.json("export", iid)["values"])


def test_after_resume_a_bare_answer_goes_to_the_question_shown_last(cli):
    cli.chat("run", "travel-claim", "--subject", "r3", lines=UP_TO_TOTAL)
    iid = instance_id(cli)

    out = cli.chat("resume", iid, lines=["700"])

    shown_last = out.split("Total claimed?")[-1]
    assert "Total claimed: 700" in shown_last
    assert "Accommodation cost: 700" not in out
    got = values(cli, iid)
    assert got["total"] == 700
    assert got.get("accommodation") is None and got.get("meals") is None


@pytest.mark.parametrize(
    "line, name, not_used",
    [
        ("I'm Dana Reeve, staff id ab12 and my email is dana@example", "Dana Reeve", "staff id ab12"),
        ("I'm Sam Lee, sam.lee@example.org, 07700 900123", "Sam Lee", "07700 900123"),
    ],
)
def test_a_sentence_at_full_name_gives_the_name_and_says_the_rest_back(cli, line, name, not_used):
    out = cli.chat("run", "travel-claim", "--subject", "s", lines=[line])

    assert f'"{not_used}' in out.split("I wasn't sure which question this answers:")[1]
    got = values(cli, instance_id(cli))
    assert got["full_name"] == name
    if "sam.lee" in line:
        assert got["email"] == "sam.lee@example.org"
    else:
        assert got.get("email") is None and got.get("staff_id") is None


@pytest.mark.parametrize("line", ["I'm Dana Reeve, staff id ab1234", "I'm Dana Reeve, staff id AB 1234"])
def test_a_staff_id_in_small_letters_or_in_parts_beside_the_name_is_saved_as_its_pattern_takes_it(cli, line):
    out = cli.chat("run", "travel-claim", "--subject", "s", lines=[line])

    assert "Got it — Full name: Dana Reeve; Staff ID: AB1234." in out
    got = values(cli, instance_id(cli))
    assert (got["full_name"], got["staff_id"]) == ("Dana Reeve", "AB1234")


def test_a_line_of_several_answers_at_destination_gives_what_each_part_names(cli):
    lines = ["Dana Reeve", "AB1234", "dana@example.org", "Leeds, leaving 3 March 2026, back 1 March 2026, client visit"]
    out = cli.chat("run", "travel-claim", "--subject", "s", lines=lines)

    # "leaving" and "back" name the dates; "client visit" names no question, so it is said back.
    assert 'I wasn\'t sure which question this answers: "client visit"' in out
    got = values(cli, instance_id(cli))
    assert got["destination"] == "Leeds"
    assert got["departure_date"] == "2026-03-03" and got["return_date"] == "2026-03-01"
    assert got.get("purpose") is None


def test_a_sentence_with_no_plain_first_part_is_not_stored_and_asked_again(cli):
    out = cli.chat("run", "travel-claim", "--subject", "s", lines=["3 March, then Leeds"])

    assert "I wasn't sure which question this answers" in out
    assert out.rstrip().splitlines()[-2].startswith("Full name?")
    assert values(cli, instance_id(cli)).get("full_name") is None


@pytest.mark.parametrize("amount", ["1.2k", "0.5k", "2 thousand"])
def test_an_amount_with_a_multiplier_is_refused_not_read_as_its_digits(cli, amount):
    out = cli.chat("run", "travel-claim", "--subject", "s", lines=[*UP_TO_TOTAL[:9], amount, "yes"])

    assert f'I couldn\'t use "{amount}" for Accommodation cost: please write the amount in full' in out
    got = values(cli, instance_id(cli))
    assert got.get("accommodation") is None


def test_a_refused_correction_says_the_earlier_answer_no_longer_counts_and_keep_puts_it_back(cli):
    out = cli.chat("run", "travel-claim", "--subject", "s", lines=["Dana Reeve", "AB1234", "Staff ID: AB12345"])
    iid = instance_id(cli)

    assert 'The earlier answer (AB1234) no longer counts: say "keep" to put it back' in out
    assert values(cli, iid).get("staff_id") is None  # the refused one is in force: the field reads invalid

    out = cli.chat("resume", iid, lines=["keep"])

    assert "Staff ID is back to AB1234" in out.split("Undone:")[-1]
    assert values(cli, iid)["staff_id"] == "AB1234"


def test_a_hosts_refused_fill_over_a_good_answer_says_what_the_field_holds_and_how_to_undo(cli):
    cli.chat("run", "travel-claim", "--subject", "s", lines=["Dana Reeve", "AB1234"])
    iid = instance_id(cli)

    done = cli("fill", iid, "Staff ID=AB12345")

    assert done.exit_code == 1
    assert (
        f"Staff ID now holds AB12345, not accepted, so its earlier answer AB1234 no longer counts; "
        f"to put it back: formctl undo {iid} staff_id"
    ) in done.stdout
    assert cli("undo", iid, "staff_id").exit_code == 0
    assert values(cli, iid)["staff_id"] == "AB1234"


@pytest.mark.parametrize("ending", [[], ["/quit"], ["quit"]])
def test_an_answer_the_revisit_acknowledged_is_stored_when_the_input_ends(cli, ending):
    returning = ["returning", "40", "Pat Quinn", "pat@example.org", "skip", "C12345", "yes"]
    out = cli.chat(
        "run", "client-intake", "--subject", "s", lines=[*returning, "same", "pat.quinn@example.org", *ending]
    )
    iid = instance_id(cli)

    assert "Email: pat.quinn@example.org" in out.split("Kept — Full name: Pat Quinn.")[1]
    exported = cli.json("export", iid)
    assert exported["values"]["email"] == "pat.quinn@example.org"
    assert exported["values"]["full_name"] == "Pat Quinn"


CLAIM_BY_CAR = [*CLAIMANT_AND_TRIP, "car", "120"]


def test_switching_the_mode_says_the_mileage_was_set_aside(cli):
    out = cli.chat("run", "travel-claim", "--subject", "s", lines=[*CLAIM_BY_CAR, "54", "Mode: rail"])

    after = out.split("Got it — Mode: rail.")[1]
    assert "Miles driven and Mileage cost don't apply any more, so I've set them aside" in after


def test_inspect_shows_a_field_that_does_not_apply_as_not_needed(cli):
    cli.chat("run", "travel-claim", "--subject", "s", lines=CLAIM_BY_CAR)
    iid = instance_id(cli)

    shown = cli.ok("inspect", iid).stdout

    [row] = [line for line in shown.splitlines() if line.startswith("ticket_reference")]
    assert "doesn't apply" in row and " yes " not in row and "empty" not in row


def test_the_person_sees_a_held_claim_in_plain_words_and_not_the_models_instructions(cli):
    lines = [*UP_TO_TOTAL[:9], "300", "300", "100"]
    out = cli.chat("run", "travel-claim", "--subject", "s", lines=lines)

    status = [line for line in out.splitlines() if line.startswith("· [form:")]
    assert status[-1] == (
        "· [form: travel-claim] held: Accommodation and meals come to £600, more than the total claimed (£100)."
    )
    assert not any("nothing pending" in line or "step:" in line or "form_submit" in line for line in status)
