"""What the chat has acknowledged is stored when it says so, on every form: through the
``formctl`` command (the chat piped in, in process; and in a pseudo-terminal for Ctrl-D), a revisit of a
returning client's contact details keeps the answer the chat said it took when the input ends
right after, on a form without a review step (tests/fixtures/forms_without_review; the example
forms have one, and test_guided_said_cli.py covers them); and "none" for an optional answer in force withdraws it, as "Left out" says."""

from __future__ import annotations

import os
import re

import pytest

from clitools import Cli
from fixture_project import ROOT

NO_REVIEW = ROOT / "forms_without_review"  # contact-update: completes on its last required answer

# contact-update, up to the revisit of Contact ("Details changed: yes" jumps back to it)
RETURNING = ["Pat Quinn", "pat@example.org", "07700 900123", "C12345", "yes"]


@pytest.fixture
def cli(cli: Cli) -> Cli:
    """The ``cli`` fixture, over the forms without a review step."""
    return cli.at(forms=NO_REVIEW)


def stored(cli: Cli) -> dict:
    """The one instance in the store, exported."""
    (row,) = cli.json("instances")["instances"]
    return dict(cli.json("export", row["instance_id"]))


@pytest.mark.parametrize("ending", [[], ["/quit"], ["quit"]], ids=["EOF", "/quit", "quit"])
def test_on_a_form_without_review_an_answer_the_revisit_acknowledged_is_stored_when_the_input_ends(cli, ending):
    out = cli.chat(
        "run", "contact-update", "--subject", "s", lines=[*RETURNING, "same", "pat.quinn@example.org", *ending]
    )

    revisit = out.split("We need to go back over Contact")[1]
    assert "Email: pat.quinn@example.org." in revisit  # what the chat acknowledged ...
    record = stored(cli)
    assert record["values"]["email"] == "pat.quinn@example.org"  # ... is what is stored
    assert record["values"]["full_name"] == "Pat Quinn" and record["values"]["phone"] == "07700 900123"


def test_none_for_an_optional_answer_in_force_during_the_revisit_withdraws_it_as_left_out_says(cli):
    out = cli.chat("run", "contact-update", "--subject", "s", lines=[*RETURNING, "same", "same", "none"])

    assert "Left out Phone." in out.split("We need to go back over Contact")[1]
    record = stored(cli)
    assert "phone" not in record["values"]
    assert record["values"]["email"] == "pat@example.org"  # kept ("same"), not rewritten


def test_left_out_by_label_withdraws_an_answer_in_force(cli):
    out = cli.chat("run", "contact-update", "--subject", "s", lines=[*RETURNING[:3], "Phone: none"])

    assert "Left out Phone." in out.split("Got it — Phone: 07700 900123.")[1]
    assert "phone" not in stored(cli)["values"]


@pytest.mark.e2e  # Ctrl-D in a real pseudo-terminal
def test_ctrl_d_right_after_the_revisit_acknowledged_an_answer_keeps_it(tmp_path, cli):
    pexpect = pytest.importorskip("pexpect")
    from helpers.terminal import close, spawn

    env = {k: v for k, v in os.environ.items() if not k.startswith(("FORMCTL_", "ANTHROPIC_"))}
    env.pop("NO_COLOR", None)
    env.update(TERM="xterm-256color", FORMCTL_SUBJECT="s", **cli.env)
    child = spawn(["-m", "formctl.cli.app", "run", "contact-update", "--offline"], env, timeout=60)
    child.logfile_read = open(tmp_path / "terminal.log", "w", encoding="utf-8")
    ansi = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")

    def expect(pattern: str) -> str:
        seen = []
        while child.expect([pattern, re.escape("\x1b[6n")]) == 1:  # answer the cursor-position requests
            seen.append(child.before)
            child.send("\x1b[5;1R")
        return ansi.sub("", "".join([*seen, child.before]))

    try:
        for answer, then in [
            ("Pat Quinn", "Email"),
            ("pat@example.org", "Phone"),
            ("07700 900123", "Client number"),
            ("C12345", "Details changed"),
            ("yes", r"Full name\? It is Pat Quinn"),
            ("same", r"Email\? It is pat@example.org"),
            ("pat.quinn@example.org", r"Phone\? It is 07700 900123"),
        ]:
            child.send(answer + "\r")
            said = expect(then)
        assert "Email: pat.quinn@example.org." in said
        expect("you ›")
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        close(child)
    assert child.exitstatus == 0
    assert stored(cli)["values"]["email"] == "pat.quinn@example.org"
