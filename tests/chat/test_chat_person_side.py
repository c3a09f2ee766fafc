"""The person's side of ``formctl run``, through the real entry point with piped stdin.

The chat always knows what it asked: after anything that changes the form other than the
person's own answer (their /undo or /redo, a host's write from another terminal, another chat
on the same instance, a resume after a host's undo), it says what changed and asks the open
question again before it takes a bare answer.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time

import pytest

from clitools import formctl, invoke  # the chats in child processes; the reads of what they left, in this one
from fixture_project import FORMS, ROOT

CLAIMANT = ["Dana Reeve", "AB1234", "dana@example.org"]
TRIP = ["Leeds", "2026-11-03", "2026-11-05"]


def run(store, lines, *args, form="travel-claim"):
    return formctl(
        "run",
        form,
        "--store",
        str(store),
        "--forms",
        str(FORMS),
        *args,
        env={"FORMCTL_SUBJECT": "dana"},
        input="".join(f"{line}\n" for line in lines),
    )


def only_instance(store) -> str:
    (row,) = json.loads(invoke("instances", "--store", str(store), "--json").stdout)["instances"]
    return row["instance_id"]


def values(store, instance_id) -> dict:
    return json.loads(invoke("export", instance_id, "--json", "--store", str(store)).stdout)["values"]


def after(text: str, marker: str) -> str:
    assert marker in text, text
    return text[text.index(marker) + len(marker) :]


# --------------------------------------------------------------------------- the chat knows what it asked


@pytest.mark.e2e
def test_after_the_persons_undo_the_chat_says_what_changed_and_asks_again_before_the_next_answer(tmp_path):
    out = run(tmp_path / "s", [*CLAIMANT, *TRIP, "/undo staff_id", "Conference"])
    assert out.returncode == 0, out.stderr
    rest = after(out.stdout, "Purpose of trip?")
    rest = after(rest, "undid Staff ID → empty")
    # Before "Conference" is read, the chat has said what changed and asked Staff ID again, so
    # the line is an answer to the question on the screen, not to one nobody asked.
    said, answered = rest.split("· rejected Staff ID", 1)
    assert "You used /undo: Staff ID is empty again." in said
    spoken = [line for line in said.strip().splitlines() if not line.startswith("· ")]  # not the status line
    assert spoken[-1] == "Staff ID? Two capital letters and four digits, like AB1234."
    assert "Purpose of trip" not in said + answered
    assert "purpose" not in values(tmp_path / "s", only_instance(tmp_path / "s"))


@pytest.mark.e2e
def test_after_the_persons_redo_the_chat_says_what_changed_and_the_answer_goes_to_the_question_shown(tmp_path):
    out = run(tmp_path / "s", [*CLAIMANT, "/undo email", "/redo email", "Leeds"])
    assert out.returncode == 0, out.stderr
    rest = after(out.stdout, "redid Work email → dana@example.org")
    said = rest.split("· saved Destination", 1)[0]
    assert "You used /redo: Work email is now dana@example.org." in said
    spoken = [line for line in said.strip().splitlines() if not line.startswith("· ")]  # not the status line
    assert spoken[-1] == "Destination?"
    assert values(tmp_path / "s", only_instance(tmp_path / "s"))["destination"] == "Leeds"


@pytest.mark.e2e
def test_resume_after_a_hosts_undo_says_what_changed_and_asks_the_open_question_not_the_old_one(tmp_path):
    store = tmp_path / "s"
    first = run(store, [*CLAIMANT, "Leeds"])
    assert first.stdout.rstrip().splitlines()[-2] == "Departure date? A date, like 2026-11-03."
    instance_id = only_instance(store)
    assert formctl("undo", instance_id, "staff_id", "--store", str(store)).returncode == 0
    out = formctl(
        "resume",
        instance_id,
        "--store",
        str(store),
        "--forms",
        str(FORMS),
        env={"FORMCTL_SUBJECT": "dana"},
        input="AB9999\n",
    )
    assert out.returncode == 0, out.stderr
    opening = out.stdout.split("· saved Staff ID", 1)[0]
    assert "Since we last spoke: Staff ID is empty again." in opening
    assert opening.rstrip().splitlines()[-2].startswith("Staff ID?")
    assert "Departure date?" not in opening  # the old question is not shown again as if it were open
    assert values(store, instance_id)["staff_id"] == "AB9999"


@pytest.mark.e2e
def test_resume_with_nothing_changed_shows_the_last_question_without_a_model_turn(tmp_path):
    store = tmp_path / "s"
    run(store, CLAIMANT[:1])
    instance_id = only_instance(store)
    out = formctl(
        "resume", instance_id, "--store", str(store), "--forms", str(FORMS), env={"FORMCTL_SUBJECT": "dana"}, input=""
    )
    assert "Since we last spoke" not in out.stdout
    assert "Staff ID? Two capital letters and four digits, like AB1234." in out.stdout


class PipedChat:
    """``formctl run`` with a pipe for stdin, read as it writes (a person typing line by line)."""

    def __init__(self, store, *args: str) -> None:
        import os

        env = {k: v for k, v in os.environ.items() if not k.startswith(("FORMCTL_", "ANTHROPIC_"))}
        env.update(FORMCTL_SUBJECT="dana", PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "formctl.cli.app", *args, "--store", str(store), "--forms", str(FORMS)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=ROOT,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))

    def expect(self, *texts: str, timeout: float = 30) -> list[str]:
        """The lines up to and including the first that contains one of ``texts``."""
        got: list[str] = []
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                raise AssertionError(f"no {texts!r} in:\n" + "\n".join(self.seen + got)) from None
            got.append(line)
            if any(text in line for text in texts):
                self.seen += got
                return got

    def say(self, line: str) -> None:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def _host_undo(store, instance_id):
    assert formctl("undo", instance_id, "staff_id", "--store", str(store)).returncode == 0


def _other_chat(store, instance_id):
    out = formctl(
        "resume",
        instance_id,
        "--store",
        str(store),
        "--forms",
        str(FORMS),
        env={"FORMCTL_SUBJECT": "dana"},
        input="Staff ID: ZZ9999\n",
    )
    assert "saved Staff ID" in out.stdout or "Staff ID: ZZ9999" in out.stdout, out.stdout


@pytest.mark.e2e
def test_a_write_from_elsewhere_is_said_and_a_line_that_crossed_it_is_taken_only_for_the_question_it_answered(tmp_path):
    for writer, change in ((_host_undo, "Staff ID is empty again"), (_other_chat, "Staff ID is now ZZ9999")):
        store = tmp_path / writer.__name__
        chat = PipedChat(store, "run", "travel-claim")
        try:
            chat.expect("Full name?")
            for line, question in zip(
                [*CLAIMANT, *TRIP],
                ["Staff ID?", "Work email?", "Destination?", "Departure date?", "Return date?", "Purpose of trip?"],
            ):
                chat.say(line)
                chat.expect(question)
            instance_id = only_instance(store)
            writer(store, instance_id)  # while the person is reading "Purpose of trip?"
            chat.say("Conference")
            said = chat.expect(f"Changed elsewhere: {change}.")
            if writer is _host_undo:
                # "Conference" answered Purpose of trip, which has moved on: not taken for Staff ID.
                said = chat.expect("Staff ID? Two capital letters")
                assert 'The form changed since I asked that, so I haven\'t used "Conference".' in "\n".join(said)
                assert not any("rejected" in line or "saved" in line for line in said)
                chat.say("AB1234")  # now asked: taken for it
                chat.expect("saved Staff ID")
            else:
                # Purpose of trip is still the open question: the line is its answer.
                chat.expect("Got it — Purpose of trip: Conference.")
        finally:
            chat.close()
        got = values(store, instance_id)
        assert got["staff_id"] == ("AB1234" if writer is _host_undo else "ZZ9999")
        assert got.get("purpose") == (None if writer is _host_undo else "Conference")


# --------------------------------------------------------------------------- a rejected key stops the chat


def _claude(store, api, lines):
    """``formctl run`` with a model key, in this process (the SDK's import is paid once per worker)."""
    from typer.testing import CliRunner

    from formctl.cli import app as cli

    env = {"FORMCTL_SUBJECT": "dana", "ANTHROPIC_API_KEY": "sk-test-not-a-real-key", "ANTHROPIC_BASE_URL": api.url}
    result = CliRunner().invoke(
        cli.app,
        ["run", "travel-claim", "--model", "claude-test", "--store", str(store), "--forms", str(FORMS)],
        input="".join(f"{line}\n" for line in lines),
        env=env,
    )
    return subprocess.CompletedProcess(["formctl"], result.exit_code, result.stdout, result.stderr)


def test_a_refused_key_ends_the_run_at_once_with_one_line_on_stderr_naming_the_variable(tmp_path):
    from fake_anthropic import FakeAnthropic, text, tool_use

    for status in (401, 403):
        with FakeAnthropic() as api:
            api.reply(tool_use("form_start", {"form": "travel-claim"}))
            api.reply(text("Your full name?"))
            api.fault(status, times=5, message="invalid x-api-key")
            out = _claude(tmp_path / str(status), api, ["Dana Reeve", "AB1234", "dana@example.org"])
            requests = len(api.bodies)
        assert out.returncode == 1, (out.stdout, out.stderr)
        errors = out.stderr.strip().splitlines()
        assert len(errors) == 1 and errors[0].startswith("error: ") and "ANTHROPIC_API_KEY" in errors[0], out.stderr
        assert f"({status})" in errors[0] and "sk-test-not-a-real-key" not in out.stdout + out.stderr
        assert requests == 3  # the opening's two calls, then one refused: the later lines are never sent
        assert "ANTHROPIC_API_KEY" not in out.stdout and "Saved. Carry on with: formctl resume" in out.stdout


def test_another_api_fault_is_one_line_on_stderr_and_the_next_message_retries(tmp_path):
    from fake_anthropic import FakeAnthropic, text, tool_use

    with FakeAnthropic() as api:
        api.reply(tool_use("form_start", {"form": "travel-claim"}))
        api.reply(text("Your full name?"))
        api.fault(500, times=3)
        api.reply(tool_use("form_fill", {"values": {"full_name": "Dana Reeve"}, "quotes": {"full_name": "Dana Reeve"}}))
        api.reply(text("Thanks. Your work email?"))
        out = _claude(tmp_path / "s", api, ["Dana Reeve", "Dana Reeve"])
    assert out.returncode == 0, out.stderr
    errors = out.stderr.strip().splitlines()
    assert len(errors) == 1 and "failed (500)" in errors[0], out.stderr
    assert "failed (500)" not in out.stdout and "Thanks. Your work email?" in out.stdout


# --------------------------------------------------------------------------- a revisit goes over every field


def follow_the_questions(chat: PipedChat, answers, *, until: str, limit: int = 30) -> list[str]:
    """Answer each question the chat asks, chosen only by the question's label; the questions asked."""
    asked: list[str] = []
    for _ in range(limit):
        question = chat.expect("?", until)[-1]
        if until in question:
            return asked
        label = question.split("?")[0].split(" — ")[0]
        asked.append(label)
        chat.say(answers(label, question))
    raise AssertionError(f"never reached {until!r}; asked {asked}")


@pytest.mark.e2e
def test_a_revisit_goes_over_every_field_of_the_step_and_completes_only_after_the_last(tmp_path):
    store = tmp_path / "s"
    first = {
        "Client type": "returning",
        "Age": "42",
        "Full name": "Alex Morgan",
        "Email": "alex.morgan@example.com",
        "Phone": "skip",
        "Client number": "C10442",
        "Details changed": "yes",
    }
    again = {"Full name": "same", "Email": "alex.m@example.org", "Phone": "07700 900123"}

    def answers(label, question):
        return (
            again[label] if 'say "same" to keep it' in question or (label == "Phone" and revisiting) else first[label]
        )

    chat = PipedChat(store, "run", "client-intake")
    revisiting = False
    try:
        asked = follow_the_questions(chat, answers, until="Details changed —")
        chat.say("yes")
        said = chat.expect("Full name?")
        assert "We need to go back over Contact" in "\n".join(said)
        revisiting = True
        chat.say("same")
        asked_again = ["Full name"] + follow_the_questions(chat, answers, until="Shall I send it?")
        chat.say("yes")  # the read-back of every answer, then the send
        chat.expect("is complete")
    finally:
        chat.close()
    assert asked[:2] == ["Client type", "Age"]
    # Every field of Contact gets its question in the revisit, the optional Phone included.
    assert asked_again == ["Full name", "Email", "Phone"]
    instance_id = only_instance(store)
    exported = json.loads(formctl("export", instance_id, "--json", "--store", str(store)).stdout)
    assert exported["status"] == "complete"
    assert exported["values"]["email"] == "alex.m@example.org" and exported["values"]["phone"] == "07700 900123"


# --------------------------------------------------------------------------- a natural answer


@pytest.mark.e2e
def test_a_natural_answer_places_what_fits_for_sure_says_it_back_and_guesses_nothing(tmp_path):
    store = tmp_path / "s"
    out = run(store, ["Dana Reeve", "AB1234, dana@example.com, going to Leeds", "Leeds, Purpose: team offsite"])
    assert out.returncode == 0, out.stderr
    reply = after(out.stdout, "Staff ID? Two capital letters and four digits, like AB1234.\n")
    assert reply.startswith(
        "· saved Staff ID, Work email\n"
        "Got it — Staff ID: AB1234; Work email: dana@example.com.\n"
        'I wasn\'t sure which question this answers: "going to Leeds".'
    )
    assert "Destination?" in reply.split("· saved Destination", 1)[0]  # and it asks about the rest
    # A "Label: value" anywhere in the line is taken; the bare part goes to the question asked.
    assert "Got it — Destination: Leeds; Purpose of trip: team offsite." in reply
    got = values(store, only_instance(store))
    assert got["staff_id"] == "AB1234" and got["email"] == "dana@example.com"
    assert got["destination"] == "Leeds" and got["purpose"] == "team offsite"


@pytest.mark.e2e
def test_free_text_goes_only_to_the_question_asked_and_a_near_miss_still_reaches_the_engine(tmp_path):
    store = tmp_path / "s"
    # At "Staff ID?": "ab1234" fits no field for sure, so it is the Staff ID answer (and rejected
    # with the field's hint); the email beside the real one is placed by its shape.
    out = run(store, ["Dana Reeve", "ab1234", "AB1234 and my email is dana@example.org"])
    assert out.returncode == 0, out.stderr
    assert "· rejected Staff ID" in out.stdout
    assert "Got it — Staff ID: AB1234; Work email: dana@example.org." in out.stdout
    assert 'I wasn\'t sure which question this answers: "and my email is".' in out.stdout
