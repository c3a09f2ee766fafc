"""``formctl run`` in a real pseudo-terminal: the prompt-toolkit chat, its status bar, Ctrl-C,
and a ``formctl resolve`` from a second process showing up without a keystroke.

The chat runs the guided (offline) model. To have a model turn still running when Ctrl-C
arrives, the child process is started through a small bootstrap that makes the guided
model "think" once (after the Destination answer is saved) until the loop is cancelled,
the way a streaming model is interrupted; everything else is the real console entry
point. prompt-toolkit draws its bottom toolbar only once it knows the terminal's height,
so the test answers its cursor-position requests, as a terminal would.
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path

import pytest

pexpect = pytest.importorskip("pexpect")

from helpers.terminal import Terminal, close, spawn  # noqa: E402

pytestmark = pytest.mark.e2e  # every test here crosses a process boundary

TIMEOUT = 30

BOOTSTRAP = r"""
import os, sys, threading
from formctl.agent import loop as _loop
from formctl.agent.models import guided as _guided

_cancelled = threading.Event()
_cancel = _loop.ChatLoop.cancel

def cancel(self):
    _cancelled.set()
    _cancel(self)

_loop.ChatLoop.cancel = cancel
_slow_after = os.environ["FORMCTL_TEST_SLOW_AFTER"]
_respond = _guided.GuidedModel.respond
_slowed = []

def respond(self, request, on_text=None):
    last = request.messages[-1].get("content")
    results = [b for b in (last if isinstance(last, list) else []) if b.get("type") == "tool_result"]
    if not _slowed and any(_slow_after in str(b.get("content")) for b in results):
        _slowed.append(True)
        sys.stdout.write("(thinking)\r\n")
        sys.stdout.flush()
        _cancelled.wait(60)
    return _respond(self, request, on_text)

_guided.GuidedModel.respond = respond
from formctl.cli.app import main
main(sys.argv[1:])
"""


def _env(cli, **extra: str) -> dict[str, str]:
    """The chat's environment: the test's, with ``cli``'s store and forms, and ``extra``. (What the
    test reads of the store afterwards, and a host's write from elsewhere, it runs in its own
    process through ``cli``: a second process to the chat's, as another terminal is.)"""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FORMCTL_", "ANTHROPIC_"))}
    env.pop("NO_COLOR", None)
    env.update(cli.env, **extra)
    return env


def test_run_in_a_terminal_shows_the_status_bar_survives_ctrl_c_and_sees_a_resolve_from_elsewhere(tmp_path, cli):
    store = cli.store
    child = spawn(
        ["-c", BOOTSTRAP, "run", "travel-claim"],
        # The status bar reads the store every 0.1 s (not every second): the resolve from elsewhere
        # is said as soon as it is read, and how long the bar waits between reads is not the point.
        _env(
            cli,
            TERM="xterm-256color",
            FORMCTL_SUBJECT="dana",
            FORMCTL_TEST_SLOW_AFTER="Leeds",
            FORMCTL_POLL_SECONDS="0.1",
        ),
        timeout=TIMEOUT,
    )
    child.logfile_read = open(tmp_path / "terminal.log", "w", encoding="utf-8")
    term = Terminal(child)
    try:
        # The header says which model, then the model opens and the bar shows step 1 and what comes later.
        term.expect(r"guided offline model \(no model key is set\)")
        term.expect(r'\[form: travel-claim\] step 1/4 "Claimant" · pending: Full name, Staff ID, Work email')
        term.expect(r"later: Trip \(destination, dates, purpose\)")

        term.say("Dana Reeve")
        term.expect("saved Full name")
        term.expect(r'step 1/4 "Claimant" · pending: Staff ID, Work email')
        term.say("AB1234")
        term.expect(r"pending: Work email")
        term.say("dana@example.org")
        term.expect(r'\[form: travel-claim\] step 2/4 "Trip" · pending: Destination')

        # Ctrl-C while the model is still working on its reply: the turn stops, the answer stays.
        term.say("Leeds")
        term.expect(r"\(thinking\)")
        child.sendintr()
        term.expect("stopping…")
        term.expect("Cancelled. Every answer already given is saved.")
        term.expect(r'step 2/4 "Trip" · pending: Departure date')
        (row,) = cli.json("instances")["instances"]
        instance_id = row["instance_id"]
        field = cli.json("inspect", instance_id, "--field", "destination")["fields"][0]
        assert field["status"] == "filled" and field["value"] == "Leeds"

        # The conversation carries on after the cancelled turn: the next answer lands.
        term.say("2026-03-02")
        term.expect("saved Departure date")
        term.say("2026-03-04")
        term.expect("saved Return date")
        term.say("client visit")
        term.expect(r'\[form: travel-claim\] step 3/4 "Travel"')
        term.say("rail")
        term.expect("saved Mode")
        term.say("TR-4411")
        term.expect(r'\[form: travel-claim\] step 4/4 "Costs"')
        term.say("skip")
        term.expect("Meals cost")
        term.say("skip")
        term.expect("Total claimed")
        term.say("900")
        term.expect(r'\[form: travel-claim\] awaiting "policy-cap" — Over the 750 cap')

        # Finance approves from a second terminal; the chat says so without a keystroke.
        resolved = cli("resolve", instance_id)
        assert resolved.exit_code == 0, resolved.stderr
        term.expect(r'Changed elsewhere: the "policy-cap" check was resolved; the form is ready to send\.')
        term.expect("Before I send it, please check your answers:")
        term.expect(r"\[form: travel-claim\] ready to send")

        # Approved, so every answer was read back; the person's "yes" sends it.
        term.say("yes")
        term.expect("Sent. The Travel reimbursement claim is complete")
        term.say("/quit")
        term.expect(f"Done: Travel reimbursement claim {instance_id} is complete")
        child.expect(pexpect.EOF)
    finally:
        close(child)
    assert child.exitstatus == 0
    history = (Path(store) / "input_history").read_text(encoding="utf-8")
    assert "Dana Reeve" in history and "/quit" in history  # input history persists across runs
    assert oct((Path(store) / "input_history").stat().st_mode & 0o777) == "0o600"
    exported = cli.json("export", instance_id)
    assert exported["status"] == "complete"
    assert exported["values"]["destination"] == "Leeds" and exported["values"]["total"] == 900


def test_ctrl_d_leaves_and_resume_comes_back_to_the_same_conversation(cli):
    args = ["-m", "formctl.cli.app", "run", "travel-claim"]
    env = _env(cli, TERM="xterm-256color", FORMCTL_SUBJECT="dana")
    child = spawn(args, env, timeout=TIMEOUT)
    term = Terminal(child)
    try:
        term.expect(r'step 1/4 "Claimant"')
        term.say("Dana Reeve")
        term.expect("Staff ID\\?")
        term.expect("you ›")
        child.sendeof()
        term.expect(r"Saved\. Carry on with: formctl resume (form_\w+)")
        instance_id = child.match.group(1)
        child.expect(pexpect.EOF)
    finally:
        close(child)

    # a new process: the conversation is read back
    child = spawn(["-m", "formctl.cli.app", "resume", instance_id], env, timeout=TIMEOUT)
    term = Terminal(child)
    try:
        term.expect("Staff ID\\?")  # the last question of the saved conversation
        term.expect(r'step 1/4 "Claimant" · pending: Staff ID, Work email')
        term.say("AB1234")
        term.expect("saved Staff ID")
        term.say("/history full_name")
        term.expect("Dana Reeve")
        term.say("/quit")
        child.expect(pexpect.EOF)
    finally:
        close(child)
    assert child.exitstatus == 0
    (row,) = cli.json("instances")["instances"]
    assert row["instance_id"] == instance_id and row["answered"] == 2


def test_a_typed_line_that_is_not_utf8_is_refused_and_the_chat_goes_on(cli):
    args = ["-m", "formctl.cli.app", "run", "travel-claim"]
    env = _env(cli, TERM="xterm-256color", FORMCTL_SUBJECT="dana")
    child = spawn(args, env, codec_errors="replace", timeout=TIMEOUT)
    term = Terminal(child)
    try:
        term.expect(r'step 1/4 "Claimant"')
        os.write(child.child_fd, b"Jos\xe9 Garc\xeda\r")  # Latin-1 bytes, as a misconfigured terminal sends them
        term.expect("could not be read; please type it again")
        term.say("José García")
        term.expect("saved Full name")
        term.say("/history full_name")
        term.expect("José García")
        term.say("/quit")
        child.expect(pexpect.EOF)
    finally:
        close(child)
    assert child.exitstatus == 0


def test_the_status_bar_shows_the_question_asked_and_drops_what_was_skipped(tmp_path, cli):
    child = spawn(
        ["-m", "formctl.cli.app", "run", "travel-claim"],
        _env(cli, TERM="xterm-256color", FORMCTL_SUBJECT="dana"),
        timeout=TIMEOUT,
    )
    child.logfile_read = open(tmp_path / "terminal.log", "w", encoding="utf-8")
    term = Terminal(child)
    try:
        term.expect(r"Full name\?")
        term.expect("you ›")  # typed only once the prompt is up
        for answer, question in (
            ("Dana Reeve", "Staff ID"),
            ("AB1234", "Work email"),
            ("dana@example.org", "Destination"),
            ("Leeds", "Departure date"),
            ("2026-11-03", "Return date"),
            ("2026-11-05", "Purpose of trip"),
            ("Conference", "Mode"),
        ):
            term.say(answer)
            term.expect(rf"{question}[^\r\n]*\?")
            term.expect("you ›")
        term.say("car")
        # The engine has moved on to Costs (Miles driven is optional), but the chat asks Miles
        # driven: the bar shows the step of the question asked, not step 4/4 "Costs".
        term.expect(r"Miles driven\? Optional")
        term.expect(r'\[form: travel-claim\] step 3/4 "Travel" · pending: Miles driven')  # not the derived cost
        term.say("skip")
        term.expect(r"Accommodation cost\? Optional")
        term.expect(r'step 4/4 "Costs" · pending: Accommodation cost, Meals cost, Total claimed')
        term.say("skip")
        term.expect(r"Meals cost\? Optional")
        term.expect(r'step 4/4 "Costs" · pending: Meals cost, Total claimed')
        term.say("skip")
        term.expect(r"Total claimed\?")
        term.expect(r'step 4/4 "Costs" · pending: Total claimed')  # not "Meals cost" after skip
        term.say("/help")
        # /help is a table: every description starts in the same column.
        term.expect(r"/quit.*leave; formctl resume")
        term.expect("you ›")  # Ctrl-D only once the prompt is up again (typed earlier, it is lost)
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        close(child)
    log = (tmp_path / "terminal.log").read_text(encoding="utf-8")
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", log)
    rows = [
        line
        for line in plain.splitlines()
        if re.match(r"\s*/(status|inspect|history|undo|redo|resolve|abandon|usage|help|quit)\s", line)
    ]
    assert len(rows) >= 10, plain[-3000:]
    columns = {len(re.match(r"(\s*/\S+(?: \S+)*?\s{2,})", row).group(1)) for row in rows[-10:]}
    assert len(columns) == 1, rows[-10:]


def _model_chat(api, cli, tmp_path: Path):
    """``formctl run travel-claim`` against the loopback Messages API in a pseudo-terminal."""
    child = spawn(
        ["-m", "formctl.cli.app", "run", "travel-claim", "--model", "claude-test"],
        _env(
            cli, TERM="xterm-256color", FORMCTL_SUBJECT="dana", ANTHROPIC_API_KEY="sk-test", ANTHROPIC_BASE_URL=api.url
        ),
        timeout=TIMEOUT,
    )
    child.logfile_read = open(tmp_path / "terminal.log", "w", encoding="utf-8")
    return child, Terminal(child)


def test_a_spinner_shows_the_seconds_and_how_to_stop_while_the_model_thinks(tmp_path, cli):
    from fake_anthropic import FakeAnthropic, text, tool_use

    counted = threading.Event()

    def answer_once_the_seconds_counted(body):
        # The "model" thinks until the test has seen the spinner count up (no fixed delay to outlast).
        assert counted.wait(TIMEOUT), "the spinner never counted a second"
        return [text("Thanks, Dana. Your staff ID?")], None

    with FakeAnthropic() as api:
        api.reply(tool_use("form_start", {"form": "travel-claim"}))
        api.reply(text("Welcome! What is your full name?"))
        api.answer_with(answer_once_the_seconds_counted)
        child, term = _model_chat(api, cli, tmp_path)
        try:
            term.expect("What is your full name?")
            term.expect("you ›")
            term.say("Dana Reeve")
            term.expect(r"thinking… 0s · Ctrl-C to stop")
            term.expect(r"thinking… [1-9]\d*s · Ctrl-C to stop")  # the seconds count up while it waits
            counted.set()
            term.expect("Thanks, Dana. Your staff ID?")
            term.expect("you ›")
            child.sendeof()
            child.expect(pexpect.EOF)
        finally:
            close(child)


def test_in_a_terminal_formctl_asks_the_person_about_a_value_they_never_wrote(tmp_path, cli):
    # formctl's own question (a source="person" value not in the person's words) is asked and
    # answered at the real terminal, and the chat goes on at its prompt afterwards
    from fake_anthropic import FakeAnthropic, text, tool_use

    with FakeAnthropic() as api:
        api.reply(tool_use("form_start", {"form": "travel-claim"}))
        api.reply(text("Welcome! Your work email?"))
        api.reply(tool_use("form_fill", {"values": {"email": "dana.reeve@example.com"}}))
        api.reply(text("Thanks. Your staff ID?"))
        child, term = _model_chat(api, cli, tmp_path)
        try:
            term.expect("Your work email?")
            term.expect("you ›")
            term.say("the usual one")
            term.expect("Work email: dana.reeve@example.com. Is that right?")
            term.say("dana@finance.example.org")
            term.expect("Thanks. Your staff ID?")
            term.expect("you ›")
            child.sendeof()
            child.expect(pexpect.EOF)
        finally:
            close(child)
    [row] = cli.json("instances")["instances"]
    [revision] = cli.json("history", row["instance_id"], "email")["revisions"]
    assert (revision["value"], revision["provenance"]["kind"]) == ("dana@finance.example.org", "said")
