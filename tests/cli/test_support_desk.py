"""The support desk (issue 42): staff fill in intakes for many clients from one login.

Whom a ``subject = "required"`` form is for is asked every time, in a real pseudo-terminal,
and refused in one line when nobody can be asked; the login name's open form is never
continued silently; ``formctl find`` finds a client again by name or part of an email,
accents and case aside."""

from __future__ import annotations

import getpass
import json
import os

import pytest

pexpect = pytest.importorskip("pexpect")

from fixture_project import FORMS  # noqa: E402
from helpers.terminal import Terminal, close, spawn  # noqa: E402

FORMS_REGISTRY = FORMS / "registry.toml"

pytestmark = pytest.mark.e2e


def _env(cli, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FORMCTL_", "ANTHROPIC_"))}
    env.pop("NO_COLOR", None)
    env.update(TERM="xterm-256color", **cli.env, **extra)
    return env


def _intake(cli, client: str, answers: list[tuple[str, str]], *, form: str = "client-intake") -> None:
    """``formctl run FORM`` at a terminal without --subject: say whom it is for, answer each
    question (waited for by its words) in turn, then leave with Ctrl-D at the next one."""
    child = spawn(["-m", "formctl.cli.app", "run", form, "--offline"], _env(cli), timeout=60)
    term = Terminal(child)
    try:
        term.expect("Who is this for\\? ")
        term.say(client)
        for question, answer in answers:
            term.expect(question)
            term.expect("you ›")
            term.say(answer)
        term.expect("Got it")  # the last answer taken: the next question follows
        term.expect("you ›")
        child.send("\x04")
        child.expect(pexpect.EOF)
    finally:
        close(child)
    assert child.exitstatus == 0, child.before


def test_staff_are_asked_whom_each_intake_is_for_and_find_the_client_again(cli):
    _intake(cli, "María López", [("new or returning\\?", "new"), ("Age\\?", "40")])
    _intake(cli, "Sam Lee", [("new or returning\\?", "returning")])

    rows = cli.json("instances", "--form", "client-intake")["instances"]
    assert sorted(r["subject"] for r in rows) == ["María López", "Sam Lee"]  # two clients, apart
    maria = next(r["instance_id"] for r in rows if r["subject"] == "María López")
    cli.ok("fill", maria, "full_name=María López", "email=maria.lopez@example.org")

    by_name = cli.json("find", "maria lopez")["found"]
    assert [f["instance_id"] for f in by_name] == [maria]
    assert by_name[0]["matched"] == ["subject", "full_name", "email"]
    by_email = cli.json("find", "LOPEZ@example")["found"]
    assert [(f["instance_id"], f["matched"], f["values"]) for f in by_email] == [
        (maria, ["email"], {"email": "maria.lopez@example.org"})
    ]
    shown = cli.ok("find", "maria lopez").stdout
    assert "María López" in shown and "client-intake" in shown and "email: maria.lopez@example.org" in shown


def test_a_required_subject_is_refused_in_one_line_when_nobody_can_be_asked(cli):
    piped = cli.process("run", "client-intake", "--offline", input="new\n")
    assert piped.returncode != 0 and piped.stdout == ""
    (line,) = piped.stderr.strip().splitlines()
    assert "client-intake is filled in for someone each time: say whom with --subject NAME" in line
    assert cli.json("instances")["instances"] == []  # nothing started


def test_the_login_names_open_form_is_never_continued_silently(cli):
    login = getpass.getuser()
    first = cli.process("run", "travel-claim", "--offline", input="Dana Reeve\n")
    assert first.returncode == 0
    (open_one,) = cli.json("instances")["instances"]
    again = cli.process("run", "travel-claim", "--offline", input="AB1234\n")
    assert again.returncode != 0 and again.stdout == ""
    (line,) = again.stderr.strip().splitlines()
    assert f"{login} has an open travel-claim ({open_one['instance_id']}" in line
    assert f"formctl resume {open_one['instance_id']}" in line and "--subject NAME" in line
    given = cli.process("run", "travel-claim", "--offline", "--subject", login, input="AB1234\n")
    assert given.returncode == 0  # said whose it is: continued
    assert json.dumps(cli.json("export", open_one["instance_id"])["values"]).count("AB1234") == 1


def test_at_a_terminal_the_login_names_open_form_is_said_and_asked_about(cli):
    first = cli.process("run", "travel-claim", "--offline", input="Dana Reeve\n")
    assert first.returncode == 0
    child = spawn(["-m", "formctl.cli.app", "run", "travel-claim", "--offline"], _env(cli), timeout=60)
    term = Terminal(child)
    try:
        term.expect("has an open travel-claim")
        term.expect("Continue .*'s travel-claim\\? \\[y/N\\] ")
        term.say("n")
        term.expect("Who is this for\\? ")
        term.say("Kim Ode")
        term.expect("you ›")
        child.send("\x04")
        child.expect(pexpect.EOF)
    finally:
        close(child)
    subjects = sorted(r["subject"] for r in cli.json("instances")["instances"])
    assert len(subjects) == 2 and "Kim Ode" in subjects  # a new claim, filed under the one named


def test_the_readme_support_desk_commands_run_as_written(cli, tmp_path, monkeypatch):
    import shlex

    from helpers.readme import blocks, section

    desk = section("The support desk: many clients, one login")
    (entry,) = blocks(desk, "toml")
    assert 'subject = "required"' in entry and entry.split("\n")[0] in (FORMS_REGISTRY.read_text())
    maria = cli.start(
        {"full_name": "María López", "email": "maria.lopez@example.org"}, form="client-intake", subject="María López"
    )
    monkeypatch.chdir(tmp_path)
    ran = 0
    for block in blocks(desk, "sh"):
        for line in block.splitlines():
            command = line.split("  #")[0].strip()
            if not command.startswith("formctl "):
                continue
            words = shlex.split(command.split(" > ")[0])
            result = cli.ok(*words[1:])
            assert result.stdout, command
            ran += 1
    assert ran == 5
    shown = [b for b in blocks(desk, "text") if "formctl find" in b][0]
    (query,) = [line for line in shown.splitlines() if line.startswith('$ formctl find "')]
    found = cli.ok(*shlex.split(query[2:])[1:]).stdout
    assert maria in found and "email: maria.lopez@example.org" in found


SECRET_FORM = """
from typing import Annotated
from pydantic import Field
from formctl import define_form

secret = (
    define_form("secret", version=1, name="Secret")
    .step("who", title="Who")
    .field("full_name", Annotated[str, Field(min_length=2)], label="Full name")
    .field("pin", Annotated[int, Field(ge=1000, le=9999)], label="PIN", sensitive=True)
    .build()
)
"""


def test_sensitive_fields_never_match_are_never_shown_and_are_masked_in_exports(cli, tmp_path):
    forms = tmp_path / "forms"
    forms.mkdir()
    (forms / "secret_form.py").write_text(SECRET_FORM)
    (forms / "registry.toml").write_text('[forms.secret]\nname = "Secret"\nmodule = "secret_form:secret"\n')
    desk = cli.at(forms=forms)
    desk.ok("run", "secret", "--offline", "--subject", "ana", input="Ana Pérez\n4321\n")

    assert desk.json("find", "4321")["found"] == []  # the PIN is never searched
    (hit,) = desk.json("find", "ana perez")["found"]
    assert hit["matched"] == ["full_name"] and hit["values"] == {"full_name": "Ana Pérez"}
    assert "4321" not in desk.ok("find", "ana perez").stdout

    masked = desk.process("export", "--form", "secret", "--format", "csv")
    assert masked.returncode == 0 and masked.stderr == ""
    row = masked.stdout.splitlines()[1]
    assert "[hidden]" in row and "4321" not in row
    shown = desk.process("export", "--form", "secret", "--format", "jsonl", "--include-sensitive")
    assert shown.returncode == 0 and '"pin": 4321' in shown.stdout
    assert shown.stderr.startswith("warning: --include-sensitive: sensitive answers are written as given")
