"""The guided model takes what a chatty line clearly gives and nothing else, through the
``formctl`` command (in process) with the chat piped in: a greeting and an aside around a name leave the
name; an apology beside a labelled correction is not stored as the name asked for (the name is
asked again); a refusal of an optional answer leaves it out, and of a required one is said back
and asked again. (The three lines are the ones `formctl eval` found: scenarios/.)"""

from __future__ import annotations

from clitools import Cli


def stored(cli: Cli) -> dict:
    """The values of the one instance in the store."""
    (row,) = cli.json("instances")["instances"]
    return dict(cli.json("export", row["instance_id"])["values"])


def last_question(out: str) -> str:
    """The chat's last reply line (before the closing "Saved. Carry on with: ..." line)."""
    return [line for line in out.splitlines() if not line.startswith(("·", "Saved."))][-1]


def test_a_greeting_and_an_aside_around_the_name_leave_the_name(cli):
    out = cli.chat(
        "run", "travel-claim", "--subject", "s", lines=["Oh hello! It's Dana Reeve, though everyone calls me Dee."]
    )

    assert "Got it — Full name: Dana Reeve." in out
    assert '"though everyone calls me Dee"' in out.split("I wasn't sure which question this answers:")[1]
    assert stored(cli)["full_name"] == "Dana Reeve"


def test_an_apology_beside_a_labelled_correction_is_not_stored_as_the_name(cli):
    out = cli.chat(
        "run", "client-intake", "--subject", "s", lines=["returning", "43", "Sorry, I swapped the digits. Age: 34"]
    )

    assert "Got it — Age: 34." in out
    assert '"Sorry, I swapped the digits."' in out.split("I wasn't sure which question this answers:")[1]
    assert last_question(out).startswith("Full name?")
    values = stored(cli)
    assert values["age"] == 34 and "full_name" not in values


def test_a_name_then_a_remark_about_it_gives_the_name(cli):
    out = cli.chat(
        "run",
        "client-intake",
        "--subject",
        "s",
        lines=["returning", "34", "Jo Bloggs. Well, Joanna, but Jo Bloggs on everything."],
    )

    assert "Got it — Full name: Jo Bloggs." in out
    assert stored(cli)["full_name"] == "Jo Bloggs"


def test_refusing_an_optional_phone_leaves_it_out(cli):
    lines = ["new", "34", "Jo Bloggs", "jo@example.org", "I'd rather not give a phone number."]
    out = cli.chat("run", "client-intake", "--subject", "s", lines=lines)

    assert "Left out Phone." in out
    assert last_question(out).startswith("Referral source")
    assert "phone" not in stored(cli)


def test_refusing_a_required_answer_is_said_back_and_asked_again(cli):
    out = cli.chat("run", "client-intake", "--subject", "s", lines=["new", "34", "I'd rather not say."])

    assert "I understand, but Full name is required, so I can't leave it out." in out
    assert last_question(out).startswith("Full name?")
    assert "full_name" not in stored(cli)
