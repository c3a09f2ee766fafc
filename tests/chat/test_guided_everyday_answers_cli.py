"""Everyday answers the integrator's own lines found missed (issue 37), each with variations of
our own: new or returning in a person's words, an approximate total beside the exact one, a
return date said relative to the departure in the same line, and a referral whose explanation
is not said back as unused; each through ``formctl run FORM --offline``, piped."""

from __future__ import annotations

import pytest

from clitools import Cli

CLAIMANT = ["Dana Reeve", "AB1234", "dana@example.org"]


def chat(cli: Cli, form: str, lines: list[str]) -> str:
    """``formctl run FORM --offline`` in en-GB with ``lines`` piped in; what it printed."""
    return cli.chat("run", form, "--locale", "en-GB", "--subject", "s", lines=lines)


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("I've been here before", "returning"),
        ("I came last year", "returning"),
        ("you helped me before", "returning"),
        ("I've been in once before", "returning"),
        ("this is my second time", "returning"),
        ("I used to come here", "returning"),
        ("we've met before", "returning"),
        ("never been here", "new"),
        ("first visit", "new"),
        ("I have never been here before", "new"),
    ],
)
def test_new_or_returning_in_everyday_words(cli, line, kind):
    out = chat(cli, "client-intake", [line, "67"])

    assert cli.values() == {"client_type": kind, "age": 67}
    assert "I need one of" not in out


def test_after_an_unclear_client_type_another_answer_is_stored_and_the_choice_still_taken(cli):
    chat(cli, "client-intake", ["not sure what you mean", "I'm 67", "I've been here before"])

    assert cli.values() == {"client_type": "returning", "age": 67}


TRIP = [*CLAIMANT, "Leeds", "12 March 2026", "13 March 2026", "client visit", "train", "TR-12345", "skip", "skip"]


@pytest.mark.parametrize(
    "line",
    [
        "roughly 300 in total, 312.75 exactly",
        "312.75 exactly, roughly 300 in total",
        "around 300, 312.75 to be exact",
        "approx 300 all in, precisely 312.75",
        "about 300 in total or 312.75 to be exact",
        "300 or so, 312.75 exactly",
        "it was roughly 300 quid, 312.75 to be precise",
        "about £300, £312.75 exactly",
    ],
)
def test_an_approximate_total_beside_the_exact_one_takes_the_exact_one(cli, line):
    out = chat(cli, "travel-claim", [*TRIP, line])

    assert cli.values()["total"] == 312.75
    assert "wasn't sure" not in out and "- Total claimed: 312.75" in out


@pytest.mark.parametrize(
    ("line", "back", "said"),
    [
        ("left on Thursday 12 March 2026 and got back the following day", "2026-03-13", "the following day"),
        ("went on 12 March 2026, came back a day later", "2026-03-13", "a day later"),
        ("left 12 March 2026 and returned two days later", "2026-03-14", "two days later"),
        ("out on 12 March 2026, home the day after", "2026-03-13", "the day after"),
        ("12 March 2026, back the same day", "2026-03-12", "the same day"),
        ("left on 12 March 2026 and came home the next morning", "2026-03-13", "the next morning"),
        ("went 12 March 2026, back that evening", "2026-03-12", "that evening"),
    ],
)
def test_a_return_said_from_the_departure_in_the_same_line(cli, line, back, said):
    out = chat(cli, "travel-claim", [*CLAIMANT, "Leeds", line])

    got = cli.values()
    assert got["departure_date"] == "2026-03-12" and got["return_date"] == back
    assert f'I read "{said}" as' in out and "wasn't sure" not in out


INTAKE = ["new", "45", "Grace Okafor", "grace@example.org", "skip"]


@pytest.mark.parametrize(
    ("line", "source"),
    [
        ("my neighbour told me about you", "friend"),
        ("my GP sent me to you", "doctor"),
        ("I found you on Google", "web"),
        ("my sister told me to come here", "friend"),
        ("a friend mentioned you, she said you helped her", "friend"),
        ("a friend of mine recommended you", "friend"),
        ("my mum said you could help", "friend"),
        ("I googled for advice and found you", "web"),
    ],
)
def test_a_referral_with_how_it_came_about_says_nothing_back(cli, line, source):
    out = chat(cli, "client-intake", [*INTAKE, line])

    assert cli.values()["referral"] == source
    assert "wasn't sure" not in out


@pytest.mark.parametrize("other", ["I need help with my rent", "I have moved house"])
def test_a_referral_beside_something_else_says_the_something_else_back(cli, other):
    out = chat(cli, "client-intake", [*INTAKE, f"my neighbour told me about you, {other}"])

    assert cli.values()["referral"] == "friend"
    assert f'"{other}"' in out


@pytest.mark.parametrize("line", ["45", "I'm 45", "45 years old"])
def test_an_age_said_at_the_client_type_question_is_the_age_and_the_choice_is_asked_again(cli, line):
    out = chat(cli, "client-intake", [line, "been here before"])

    assert cli.values() == {"age": 45, "client_type": "returning"}
    assert "I need one of" not in out
