"""Every rejection reads like a person wrote it, through the real ``formctl`` command: the piped
chat, ``formctl fill`` and ``formctl check`` (issue 15, case 2)."""

from __future__ import annotations

import json
import re

import pytest

from clitools import CLAIMANT, TRIP

STAFF_ID_SENTENCE = "A Staff ID is two capital letters and four digits, like AB1234."
# What pydantic, email-validator or Python say, which a person must never read.
MACHINE = re.compile(
    r"String should|Input should|pattern|\^\[A-Z\]|\\d|value is not a valid|Expected |"
    r"did not pass|division by zero|ZeroDivisionError"
)


def test_a_piped_chat_says_each_rejection_once_in_plain_words(cli):
    lines = [
        "Dana Reeve",
        "ab12345",
        "AB1234",
        "dana@foo",
        "dana@example.com",
        "Leeds",
        "2026-03-02",
        "2026-03-04",
        "x",
        "client visit",
    ]
    out = cli.ok(
        "run",
        "travel-claim",
        "--offline",
        "--subject",
        "dana",
        input="\n".join(lines) + "\n",
    ).stdout
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


def test_fill_prints_the_plain_sentence_and_json_gives_it_with_a_code(cli):
    instance_id = cli.start()
    human = cli("fill", instance_id, "staff_id=ab12345", "email=dana@foo")
    assert human.exit_code == 1
    assert f"rejected Staff ID: {STAFF_ID_SENTENCE}" in human.stdout
    assert "rejected Work email: Work email should be an email address, like name@example.com." in human.stdout
    assert not MACHINE.search(human.stdout), human.stdout
    data = json.loads(cli("fill", instance_id, "staff_id=ab1", "full_name=D", "--json").stdout)
    rows = {row["field"]: row for row in data["rejected"]}
    assert rows["staff_id"] == {"field": "staff_id", "message": STAFF_ID_SENTENCE, "code": "pattern"}
    assert rows["full_name"] == {
        "field": "full_name",
        "message": "Full name should be at least 2 characters.",
        "code": "too_short",
    }
    # the view the model reads next says the same words about the invalid answer
    fields = {row["id"]: row for row in data["fields"]}  # a fill result is the view plus what the write did
    assert fields["staff_id"]["error"] == STAFF_ID_SENTENCE


def test_a_quoted_number_tells_the_model_how_to_resend_it(cli):
    instance_id = cli.start(
        {**CLAIMANT, **TRIP, "mode": "car"},
    )
    data = json.loads(cli("fill", instance_id, 'mileage="forty"', "--json").stdout)
    (row,) = data["rejected"]
    assert row["message"] == "Miles driven should be a whole number, like 40."
    assert row["code"] == "number" and "JSON number" in row["hint"]


def test_check_shows_a_pattern_field_by_its_example(cli):
    out = cli.ok("check", "travel-claim").stdout
    assert re.search(r"staff_id\s+Staff ID\s+text like AB1234\s+yes", out), out
    data = json.loads(cli.ok("check", "travel-claim", "--json").stdout)
    (staff_id,) = [f for s in data["steps"] for f in s["fields"] if f["id"] == "staff_id"]
    assert staff_id["type"] == "text like AB1234"


# --------------------------------------------------------------------------- an executor that raises

SIGNUP = """
from typing import Annotated
from pydantic import EmailStr, Field
from formctl import define_form


def _check_domain(ctx):
    return 1 / 0  # a bug in the form's own check


signup = (
    define_form("signup", version=1, name="Sign-up")
    .step("you", title="You")
    .field("name", Annotated[str, Field(min_length=2)], label="Name")
    .field("email", EmailStr, label="Email", on_fill=_check_domain)
    .field("code", Annotated[str, Field(pattern=r"^[A-Z]{2}\\d{4}$")], label="Code")
    .build()
)
"""


def _signup_project(cli, tmp_path):
    """``cli`` on a forms folder holding only the sign-up form."""
    forms = tmp_path / "forms"
    forms.mkdir()
    (forms / "signup.py").write_text(SIGNUP, encoding="utf-8")
    (forms / "registry.toml").write_text(
        '[forms.signup]\nname = "Sign-up"\ndescription = "d"\nmodule = "signup:signup"\n', encoding="utf-8"
    )
    return cli.at(forms=forms)


def test_an_executor_that_raises_is_not_shown_to_the_person_but_kept_for_the_host(cli, tmp_path):
    signup = _signup_project(cli, tmp_path)
    chat = signup("run", "signup", "--offline", "--subject", "dana", input="Dana Reeve\ndana@example.com\nab1\n")
    assert chat.exit_code == 0, (chat.stdout, chat.stderr)
    assert "Email couldn't be checked just now." in chat.stdout
    assert not MACHINE.search(chat.stdout), chat.stdout
    assert "That wasn't accepted. Code should be two capital letters and four digits." in chat.stdout
    # the host reads what happened, in formctl history (text and JSON)
    (row,) = signup.json("instances")["instances"]
    history = signup.ok("history", row["instance_id"]).stdout
    assert "executor runs that failed" in history and "ZeroDivisionError: division by zero (signup.py:" in history
    data = signup.json("history", row["instance_id"])
    (run,) = data["failed_runs"]
    assert run["hook"] == "field:email" and run["message"] == "That couldn't be checked just now."
    assert (
        run["detail"].startswith("ZeroDivisionError: division by zero (signup.py:") and "_check_domain" in run["detail"]
    )
    # the model reads the same plain words in the view, never the exception
    view = signup.json("inspect", row["instance_id"])
    assert "division" not in json.dumps(view)


def test_debug_prints_an_executors_fault_with_its_traceback(cli, tmp_path):
    signup = _signup_project(cli, tmp_path)
    quiet = signup("run", "signup", "--offline", input="Dana Reeve\ndana@example.com\n")
    assert quiet.exit_code == 0 and "ZeroDivisionError" not in quiet.stderr + quiet.stdout
    loud = signup.at(store=f"{cli.store}2")(
        "--debug", "run", "signup", "--offline", input="Dana Reeve\ndana@example.com\n"
    )
    assert loud.exit_code == 0, loud.stderr
    assert "debug: formctl.executors: field:email" in loud.stderr
    assert "Traceback" in loud.stderr and "ZeroDivisionError: division by zero" in loud.stderr
    assert "ZeroDivisionError" not in loud.stdout


# --------------------------------------------------------------------------- long lines wrap at words


def _words_intact(out: str, sentence: str, width: int) -> None:
    lines = out.replace("\r\n", "\n").split("\n")
    assert all(len(line) <= width for line in lines), [line for line in lines if len(line) > width]
    assert sentence in " ".join(lines)  # every line break fell between two words


@pytest.mark.e2e
def test_piped_input_to_a_terminal_wraps_the_chat_at_words(cli):
    import os
    import pty
    import struct
    import subprocess
    import sys

    fcntl = __import__("fcntl")
    termios = __import__("termios")
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 50, 0, 0))
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("FORMCTL_", "ANTHROPIC_")) and k not in ("COLUMNS", "LINES")
    }
    env.update(cli.env)
    child = subprocess.Popen(
        [sys.executable, "-m", "formctl.cli.app", "run", "travel-claim", "--offline"],
        stdin=subprocess.PIPE,
        stdout=slave,
        stderr=slave,
        env=env,
    )
    os.close(slave)
    child.stdin.write(b"Dana Reeve\nab12345\nAB1234\ndana@foo\n")
    child.stdin.close()
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    assert child.wait(timeout=60) == 0
    text = out.decode("utf-8")
    _words_intact(text, f"That wasn't accepted. {STAFF_ID_SENTENCE}", 50)
    _words_intact(text, "Work email should be an email address, like name@example.com.", 50)


def test_a_pipe_is_not_wrapped(cli):
    out = cli.ok("run", "travel-claim", "--offline", input="Dana Reeve\nab12345\n").stdout
    assert f"That wasn't accepted. {STAFF_ID_SENTENCE}\n" in out


def test_streamed_pieces_break_only_between_words():
    from formctl.cli.chat.plain import WordWrap

    wrap = WordWrap(20)
    pieces = ["That wasn't acc", "epted. A Staff ID is tw", "o capital letters", "\nShort.\n", "x" * 25, " end"]
    out = "".join(wrap.feed(p) for p in pieces) + wrap.flush()
    assert out == "That wasn't\naccepted. A Staff ID\nis two capital\nletters\nShort.\n" + "x" * 25 + "\nend"
    assert WordWrap(None).feed("a " * 50) == "a " * 50


@pytest.mark.e2e
def test_the_terminal_chat_wraps_the_models_words_at_word_boundaries(cli):
    import os

    import pytest

    pexpect = pytest.importorskip("pexpect")
    from helpers.terminal import close, spawn

    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("FORMCTL_", "ANTHROPIC_")) and k not in ("COLUMNS", "LINES")
    }
    env.update(cli.env, TERM="xterm-256color")
    child = spawn(["-m", "formctl.cli.app", "run", "travel-claim", "--offline"], env, dimensions=(30, 50))
    cpr = re.escape("\x1b[6n")

    def expect(pattern: str) -> None:
        while child.expect([pattern, cpr]) == 1:
            child.send("\x1b[5;1R")  # answer prompt-toolkit's cursor-position request, as a terminal would

    try:
        expect(r"Full name\?")
        child.send("Dana Reeve\r")
        expect(r"Staff ID\?")
        child.send("ab12345\r")
        expect(r"That wasn't accepted\.")
        expect(r"AB1234\.")
        said = "That wasn't accepted." + child.before + "AB1234."
        # broken into lines at spaces (a line end where the sentence had a space), never inside a word
        assert "\r\n" in said
        assert said.replace("\r\n", " ") == f"That wasn't accepted. {STAFF_ID_SENTENCE}"
        expect("you ›")  # Ctrl-D once the prompt is up, and the chat's end waited for (not forced)
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        close(child)


def test_the_guided_models_own_rejections_are_said_once_too(cli):
    lines = [
        "Dana Reeve",
        "AB1234",
        "dana@example.com",
        "Leeds",
        "next tuesday",
        "2026-03-02",
        "2026-03-04",
        "client visit",
        "bus",
        "car",
    ]
    said = cli.ok("run", "travel-claim", "--offline", input="\n".join(lines) + "\n").stdout.splitlines()
    at = said.index(
        'I couldn\'t use "next tuesday" for Departure date: Which Tuesday? Please give the date itself, '
        "like 2026-11-03 or 3 Nov 2026."
    )
    assert said[at + 1] == "Departure date?"  # not "A date, like 2026-11-03." again
    at = said.index('I couldn\'t use "bus" for Mode: I need one of: car, rail or air.')
    assert said[at + 1] == "Mode?"
    assert "Mode — car, rail or air?" in said[:at]  # asked the first time with its choices


GATED = """
from formctl import define_form


def _needs_more(v, s):
    return 1 / 0 if v["x"] == "boom" else True  # a bug in the form's own gate


gated = define_form("gated", version=1, name="Gated").step("s", title="S").field("x", str, label="X") \\
    .field("y", str, label="Y", when=_needs_more).build()
"""


def test_a_gate_that_raises_is_not_shown_to_the_person(cli, tmp_path):
    forms = tmp_path / "forms"
    forms.mkdir()
    (forms / "gated.py").write_text(GATED, encoding="utf-8")
    (forms / "registry.toml").write_text(
        '[forms.gated]\nname = "Gated"\ndescription = "d"\nmodule = "gated:gated"\n', encoding="utf-8"
    )
    gated = cli.at(forms=forms)
    args = ("run", "gated", "--offline")
    quiet = gated.at(store=tmp_path / "a")(*args, input="boom\n")
    assert quiet.exit_code == 0, quiet.stderr
    assert "something in the form itself went wrong, not your answer" in quiet.stdout
    assert "· fill failed: a problem in the form itself" in quiet.stdout
    assert "division by zero" not in quiet.stdout + quiet.stderr
    loud = gated.at(store=tmp_path / "b")("--debug", *args, input="boom\n")
    assert (
        'debug: formctl.agent.tools: form_fill failed: Form "gated" cannot be evaluated: gate "y" threw: division by zero'
        in loud.stderr
        and "Traceback" in loud.stderr
    )
    assert "division by zero" not in loud.stdout
