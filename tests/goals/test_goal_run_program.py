"""``formctl run --program KEY --subject S`` with the guided offline model and piped input: items
no form answers are asked ("…: done, later, or not needed?") and settled, an item bound to a
form opens the form's chat, which ends when the form completes (completing the item with its
instance), and the walk goes on to the end.

The piped runs are in process (the ``cli`` fixture); the walk in a real pseudo-terminal, with
its status bar, runs the console script in a child process (e2e)."""

from __future__ import annotations

import json
import shutil

import pytest

from fixture_project import FORMS

FORM = """
from formctl import define_form

contact = (
    define_form("contact", version=1, name="Contact details", description="How to reach the client.")
    .step("reach", title="Reach")
    .field("phone", str, label="Phone")
    .build()
)
"""

PROGRAM = """
from formctl import Goal, Item, define_program

visit = define_program(
    "visit",
    goals=[
        Goal("identity", title="Confirm identity", items=[Item("client", label="Verify the client")]),
        Goal("contact", title="Contact", items=[Item("form", label="Contact details", form="contact")]),
        Goal(
            "wrap",
            title="Wrap up",
            items=[Item("summary", label="Send the summary"), Item("docs", label="Collect documents")],
        ),
    ],
)
"""

REGISTRY = """
[forms.contact]
name = "Contact details"
module = "contact_form:contact"

[programs.visit]
name = "A visit"
module = "visit_program:visit"
"""


@pytest.fixture
def project(cli, tmp_path):
    """``formctl`` with the example forms plus the contact form and the visit program."""
    forms = tmp_path / "forms"
    shutil.copytree(FORMS, forms, ignore=shutil.ignore_patterns("__pycache__"))
    (forms / "contact_form.py").write_text(FORM)
    (forms / "visit_program.py").write_text(PROGRAM)
    with open(forms / "registry.toml", "a") as f:
        f.write(REGISTRY)
    return cli.at(forms=forms)


def run_program(project, lines, env=None):
    return project(
        "run", "--program", "visit", "--subject", "dana", "--offline", input="".join(f"{x}\n" for x in lines), env=env
    )


def show(project):
    return project.json("program", "show", "--subject", "dana", "--key", "visit")


def items(status):
    return {(g["key"], i["key"]): i for g in status["goals"] for i in g["items"]}


def test_a_program_is_walked_in_one_chat_asking_items_and_opening_forms(project):
    result = run_program(project, ["done", "0113 496 0000", "done", "later, they will post them"])
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "Verify the client: done, later, or not needed?" in out
    assert "· Contact: Contact details (form contact)" in out
    assert "Send the summary: done, later, or not needed?" in out
    assert "Collect documents: done, later, or not needed?" in out
    assert "Program visit is complete. Still owed: Collect documents" in out
    # The form's chat showed the goals line with its own status.
    assert out.index("Verify the client:") < out.index("Phone") < out.index("Send the summary:")

    status = show(project)
    by = items(status)
    assert by[("identity", "client")]["disposition"] == "completed"
    assert by[("identity", "client")]["reason"] == "Said in the chat: done"
    form_item = by[("contact", "form")]
    assert form_item["disposition"] == "completed"
    instances = project.json("instances")["instances"]
    (contact,) = [i for i in instances if i["form"] == "contact"]
    assert form_item["instance"] == contact["instance_id"] and contact["status"] == "complete"
    assert by[("wrap", "docs")]["disposition"] == "deferred"
    assert status["complete"] and [f["item"] for f in status["follow_ups"]] == ["docs"]


def test_leaving_mid_walk_keeps_everything_and_the_same_command_carries_on(project):
    first = run_program(project, ["later"])
    assert first.exit_code == 0, first.stderr
    assert "Verify the client: done, later, or not needed?" in first.stdout
    # "later" settled identity (deferred); the contact form opened and input ended there.
    assert items(show(project))[("identity", "client")]["disposition"] == "deferred"

    second = run_program(project, ["0113 496 0000", "not needed", "done"])
    assert second.exit_code == 0, second.stderr
    assert "Verify the client: done" not in second.stdout  # settled before: not asked again
    status = show(project)
    assert status["complete"]
    by = items(status)
    assert by[("wrap", "summary")]["disposition"] == "declined" and by[("wrap", "docs")]["disposition"] == "completed"
    assert [f["item"] for f in status["follow_ups"]] == ["client"]  # the deferral stays visible


def test_an_unrecognised_answer_is_asked_again(project):
    result = run_program(project, ["maybe?"])
    assert "Please answer done, later, or not needed. Verify the client: done, later, or not needed?" in result.stdout
    assert items(show(project))[("identity", "client")]["disposition"] == "pending"


def test_run_needs_a_form_or_a_program_not_both(project):
    for args in ((), ("contact", "--program", "visit")):
        result = project("run", *args, "--offline")
        assert result.exit_code == 2 and "Give a FORM, or --program KEY" in result.stderr


@pytest.mark.e2e
def test_in_a_terminal_the_status_bar_shows_the_goal_under_the_form(project, tmp_path):
    import os

    pexpect = pytest.importorskip("pexpect")
    from helpers.terminal import Terminal, close, spawn

    env = {k: v for k, v in os.environ.items() if not k.startswith(("FORMCTL_", "ANTHROPIC_", "OPENAI_"))}
    env.update(project.env, TERM="xterm-256color", NO_COLOR="1")
    child = spawn(
        ["-m", "formctl.cli.app", "run", "--program", "visit", "--subject", "dana", "--offline"], env, cwd=tmp_path
    )
    child.logfile_read = open(tmp_path / "terminal.log", "w", encoding="utf-8")
    term = Terminal(child)
    try:
        term.expect("Verify the client: done, later, or not needed?")
        term.say("done")
        term.expect(r"\[form: contact\] step 1/1 \"Reach\" · pending: Phone")
        term.expect(r'\[goals: visit\] goal 2/3 "Contact" · pending: Contact details')
        term.say("0113 496 0000")
        term.expect("Send the summary: done, later, or not needed?")
        term.expect("you ›")  # Ctrl-D only once the prompt is up (typed before it, it is lost)
        child.sendeof()
        term.expect("Saved. Carry on with: formctl run --program visit --subject dana")
        child.expect(pexpect.EOF)
    finally:
        close(child)
    status = show(project)
    assert items(status)[("contact", "form")]["disposition"] == "completed"
    assert status["active_goal"] == "wrap"


def test_with_a_model_the_walk_lets_it_settle_items_through_the_real_sdk(project):
    from fake_anthropic import FakeAnthropic, text, tool_use

    with FakeAnthropic() as api:
        # The identity goal: no form answers it, so the model asks and settles it.
        api.reply(text("Hello! Are you the client?"))
        api.reply(
            tool_use("goal_update", {"goal": "identity", "completed": ["client"], "reason": "Said so", "version": 1})
        )
        api.reply(text("Thank you."))
        # The contact goal: its item is the contact form, whose chat opens with the goal tools.
        api.reply(tool_use("form_start", {"form": "contact"}))
        api.reply(text("What is your phone number?"))
        api.reply(tool_use("form_fill", {"values": {"phone": "0113 496 0000"}}))
        api.reply(text("Saved."))
        # The wrap-up goal: settled in one update (the form's completion made version 3).
        api.reply(
            tool_use("goal_update", {"goal": "wrap", "completed": ["summary"], "deferred": ["docs"], "version": 3})
        )
        api.reply(text("All set; send the documents when you can."))
        result = project(
            "run",
            "--program",
            "visit",
            "--subject",
            "dana",
            env={"ANTHROPIC_API_KEY": "sk-ant-test-0123456789abcdef", "ANTHROPIC_BASE_URL": api.url},
            input="Yes, it's me, Dana.\n0113 496 0000\n",
        )
        bodies = api.bodies
    assert result.exit_code == 0, result.stderr
    assert "Program visit is complete. Still owed: Collect documents" in result.stdout
    assert len(bodies) == 9
    tails = [b["messages"][-1]["content"][-1]["text"] for b in bodies]
    assert all(t.startswith("[goals: visit]") for t in tails)
    assert tails[0] == '[goals: visit] goal 1/3 "Confirm identity" · pending: Verify the client'
    assert tails[3] == '[goals: visit] goal 2/3 "Contact" · pending: Contact details'
    assert tails[7] == '[goals: visit] goal 3/3 "Wrap up" · pending: Send the summary, Collect documents'
    # In the form's chat the tier-0 line comes first, then the goals line.
    assert bodies[5]["messages"][-1]["content"][-2]["text"].startswith("[form: contact]")
    form_phase = bodies[3:7]
    assert len({json.dumps(b["tools"]) for b in form_phase}) == 1
    assert len({json.dumps(b["system"]) for b in form_phase}) == 1
    names = [t["name"] for t in form_phase[0]["tools"]]
    assert "form_fill" in names and names[-2:] == ["goal_status", "goal_update"]
    status = show(project)
    by = items(status)
    assert by[("identity", "client")]["reason"] == "Said so"
    assert by[("contact", "form")]["disposition"] == "completed"
    assert by[("wrap", "docs")]["disposition"] == "deferred"


def test_a_walk_is_recorded_whole_and_replays_exactly(project, tmp_path):
    """``run --program --record``: the goal chats and the form's chat in one transcript (format 2),
    which ``formctl replay`` plays again exactly; a file edited to expect otherwise fails."""
    path = tmp_path / "visit.toml"
    lines = ["done", "0113 496 0000", "done", "later, they will post them"]
    walked = project(
        "run", "--program", "visit", "--subject", "dana", "--offline", "--record", str(path),
        input="".join(f"{x}\n" for x in lines),
    )  # fmt: skip
    assert walked.exit_code == 0, walked.stderr
    text = path.read_text()
    assert "format = 2" in text and 'program = "visit"' in text
    assert 'segment = "goals"' in text and 'segment = "contact"' in text

    replayed = project("replay", str(path))
    assert replayed.exit_code == 0, replayed.stdout + replayed.stderr
    assert "1 passed, 0 failed" in replayed.stdout

    at = text.rindex('"disposition": "deferred"')  # in [expect]: the end state it must reach
    path.write_text(text[:at] + '"disposition": "declined"' + text[at + len('"disposition": "deferred"') :])
    diverged = project("replay", str(path))
    assert diverged.exit_code == 1 and "FAILED" in diverged.stdout
    assert "the program's end state differs" in diverged.stdout

    again = project("run", "--program", "visit", "--subject", "sam", "--offline", "--record", str(path), input="")
    assert again.exit_code == 1 and again.stderr.count("\n") == 1 and "already exists" in again.stderr
