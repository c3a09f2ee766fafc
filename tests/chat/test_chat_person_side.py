"""The person's side of ``formctl run`` with piped stdin (in process: the ``cli`` fixture).

The chat always knows what it asked: after anything that changes the form other than the
person's own answer (their /undo or /redo, a host's write from another terminal, another chat
on the same instance, a resume after a host's undo), it says what changed and asks the open
question again before it takes a bare answer.

Where the person's next line depends on what the chat has said (a person reading the screen),
stdin is a :class:`Person`: each line is chosen when the chat reads it, from what the chat has
printed so far. The piped chat in a child process, read as it writes, is
tests/chat/test_chat_two_at_once.py's (two processes on one instance).
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable, Iterator

import pytest
import typer.testing

from clitools import Cli

CLAIMANT = ["Dana Reeve", "AB1234", "dana@example.org"]
TRIP = ["Leeds", "2026-11-03", "2026-11-05"]


def run(cli: Cli, lines, *args, form="travel-claim"):
    """``formctl run FORM ARGS`` as dana, with ``lines`` piped in."""
    return cli("run", form, *args, env={"FORMCTL_SUBJECT": "dana"}, input="".join(f"{line}\n" for line in lines))


def only_instance(cli: Cli) -> str:
    (row,) = cli.json("instances")["instances"]
    return str(row["instance_id"])


def values(cli: Cli, instance_id) -> dict:
    return dict(cli.json("export", instance_id)["values"])


@pytest.fixture(autouse=True)
def _a_person_may_type(monkeypatch: pytest.MonkeyPatch) -> None:
    """typer's own runner (typer 0.22 and later) takes only a str or bytes as stdin; a
    :class:`Person` is handed over as it is. Before that typer used click's runner, which takes a
    binary stream already (a :class:`Person` reads as one)."""
    given = getattr(typer.testing, "make_input_stream", None)
    if given is None:
        return

    def make_input_stream(input, charset):  # noqa: A002 (typer's name)
        return input if isinstance(input, Person) else given(input, charset)

    monkeypatch.setattr(typer.testing, "make_input_stream", make_input_stream)


def after(text: str, marker: str) -> str:
    assert marker in text, text
    return text[text.index(marker) + len(marker) :]


class Person(io.BufferedIOBase):
    """stdin for an in-process chat, typed by a person who reads the screen: each line is
    ``next_line(said)``, asked when the chat reads its next line, ``said`` being what the chat
    has printed to stdout since the last line was read; None ends the input (Ctrl-D). Given as
    the ``input`` of a ``cli`` call (see :func:`_a_person_may_type`)."""

    def __init__(self, next_line: Callable[[str], str | None]) -> None:
        super().__init__()
        self.next_line = next_line
        self._read = 0  # how much of the output the person has read

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        if size == 0:
            return b""  # how click's runner tells a binary stream
        raise io.UnsupportedOperation("a Person is read line by line")

    def __iter__(self) -> Iterator[bytes]:
        while True:
            sys.stdout.flush()
            said = sys.stdout.buffer.getvalue().decode("utf-8")
            said, self._read = said[self._read :], len(said)
            line = self.next_line(said)
            if line is None:
                return
            yield f"{line}\n".encode()


# --------------------------------------------------------------------------- the chat knows what it asked


def test_after_the_persons_undo_the_chat_says_what_changed_and_asks_again_before_the_next_answer(cli):
    out = run(cli, [*CLAIMANT, *TRIP, "/undo staff_id", "Conference"])
    assert out.exit_code == 0, out.stderr
    rest = after(out.stdout, "Purpose of trip?")
    rest = after(rest, "undid Staff ID → empty")
    # Before "Conference" is read, the chat has said what changed and asked Staff ID again, so
    # the line is an answer to the question on the screen, not to one nobody asked.
    said, answered = rest.split("· rejected Staff ID", 1)
    assert "You used /undo: Staff ID is empty again." in said
    spoken = [line for line in said.strip().splitlines() if not line.startswith("· ")]  # not the status line
    assert spoken[-1] == "Staff ID? Two capital letters and four digits, like AB1234."
    assert "Purpose of trip" not in said + answered
    assert "purpose" not in values(cli, only_instance(cli))


def test_after_the_persons_redo_the_chat_says_what_changed_and_the_answer_goes_to_the_question_shown(cli):
    out = run(cli, [*CLAIMANT, "/undo email", "/redo email", "Leeds"])
    assert out.exit_code == 0, out.stderr
    rest = after(out.stdout, "redid Work email → dana@example.org")
    said = rest.split("· saved Destination", 1)[0]
    assert "You used /redo: Work email is now dana@example.org." in said
    spoken = [line for line in said.strip().splitlines() if not line.startswith("· ")]  # not the status line
    assert spoken[-1] == "Destination?"
    assert values(cli, only_instance(cli))["destination"] == "Leeds"


def test_resume_after_a_hosts_undo_says_what_changed_and_asks_the_open_question_not_the_old_one(cli):
    first = run(cli, [*CLAIMANT, "Leeds"])
    assert first.stdout.rstrip().splitlines()[-2] == "Departure date? A date, like 2026-11-03."
    instance_id = only_instance(cli)
    cli.ok("undo", instance_id, "staff_id")
    out = cli("resume", instance_id, env={"FORMCTL_SUBJECT": "dana"}, input="AB9999\n")
    assert out.exit_code == 0, out.stderr
    opening = out.stdout.split("· saved Staff ID", 1)[0]
    assert "Since we last spoke: Staff ID is empty again." in opening
    assert opening.rstrip().splitlines()[-2].startswith("Staff ID?")
    assert "Departure date?" not in opening  # the old question is not shown again as if it were open
    assert values(cli, instance_id)["staff_id"] == "AB9999"


def test_resume_with_nothing_changed_shows_the_last_question_without_a_model_turn(cli):
    run(cli, CLAIMANT[:1])
    instance_id = only_instance(cli)
    out = cli("resume", instance_id, env={"FORMCTL_SUBJECT": "dana"}, input="")
    assert "Since we last spoke" not in out.stdout
    assert "Staff ID? Two capital letters and four digits, like AB1234." in out.stdout


def _host_undo(cli: Cli, instance_id: str) -> None:
    cli.ok("undo", instance_id, "staff_id")


def _other_chat(cli: Cli, instance_id: str) -> None:
    out = cli("resume", instance_id, env={"FORMCTL_SUBJECT": "dana"}, input="Staff ID: ZZ9999\n")
    assert "saved Staff ID" in out.stdout or "Staff ID: ZZ9999" in out.stdout, out.stdout


@pytest.mark.parametrize(
    "writer, change", [(_host_undo, "Staff ID is empty again"), (_other_chat, "Staff ID is now ZZ9999")]
)
def test_a_write_from_elsewhere_is_said_and_a_line_that_crossed_it_is_taken_only_for_the_question_it_answered(
    cli, writer, change
):
    """The write lands while the person is reading "Purpose of trip?", and their answer to it
    arrives after: the chat says what changed, and takes the line only if that question is still
    the open one."""
    questions = ["Full name?", "Staff ID?", "Work email?", "Destination?", "Departure date?", "Return date?"]
    script = iter(zip([*CLAIMANT, *TRIP, "Conference", "AB1234"], [*questions, "Purpose of trip?", "Staff ID?"]))
    wrote: list[str] = []  # the instance, once the write was made

    def person(said: str) -> str | None:
        line, question = next(script, (None, None))
        if line is None or question not in said:
            return None  # not asked (the crossing line was taken): Ctrl-D
        if line == "Conference":
            wrote.append(only_instance(cli))
            writer(cli, wrote[0])  # while the person is reading "Purpose of trip?"
        return line

    out = cli("run", "travel-claim", env={"FORMCTL_SUBJECT": "dana"}, input=Person(person))
    assert out.exit_code == 0, out.stderr
    instance_id = wrote[0]
    said = after(out.stdout, "Purpose of trip?")
    said = after(said, f"Changed elsewhere: {change}.")
    if writer is _host_undo:
        # "Conference" answered Purpose of trip, which has moved on: not taken for Staff ID.
        asked, answered = said.split("Staff ID? Two capital letters", 1)
        assert 'The form changed since I asked that, so I haven\'t used "Conference".' in asked
        assert "rejected" not in asked and "saved" not in asked
        assert "saved Staff ID" in answered
    else:
        # Purpose of trip is still the open question: the line is its answer.
        assert "Got it — Purpose of trip: Conference." in said
    got = values(cli, instance_id)
    assert got["staff_id"] == ("AB1234" if writer is _host_undo else "ZZ9999")
    assert got.get("purpose") == (None if writer is _host_undo else "Conference")


# --------------------------------------------------------------------------- a rejected key stops the chat


def _claude(cli: Cli, api, lines):
    """``formctl run`` with a model key (the SDK's import is paid once per worker)."""
    env = {"FORMCTL_SUBJECT": "dana", "ANTHROPIC_API_KEY": "sk-test-not-a-real-key", "ANTHROPIC_BASE_URL": api.url}
    return cli("run", "travel-claim", "--model", "claude-test", input="".join(f"{line}\n" for line in lines), env=env)


def test_a_refused_key_ends_the_run_at_once_with_one_line_on_stderr_naming_the_variable(cli, tmp_path):
    from fake_anthropic import FakeAnthropic, text, tool_use

    for status in (401, 403):
        with FakeAnthropic() as api:
            api.reply(tool_use("form_start", {"form": "travel-claim"}))
            api.reply(text("Your full name?"))
            api.fault(status, times=5, message="invalid x-api-key")
            out = _claude(cli.at(store=tmp_path / str(status)), api, ["Dana Reeve", "AB1234", "dana@example.org"])
            requests = len(api.bodies)
        assert out.exit_code == 1, (out.stdout, out.stderr)
        errors = out.stderr.strip().splitlines()
        assert len(errors) == 1 and errors[0].startswith("error: ") and "ANTHROPIC_API_KEY" in errors[0], out.stderr
        assert f"({status})" in errors[0] and "sk-test-not-a-real-key" not in out.stdout + out.stderr
        assert requests == 3  # the opening's two calls, then one refused: the later lines are never sent
        assert "ANTHROPIC_API_KEY" not in out.stdout and "Saved. Carry on with: formctl resume" in out.stdout


def test_another_api_fault_is_one_line_on_stderr_and_the_next_message_retries(cli):
    from fake_anthropic import FakeAnthropic, text, tool_use

    with FakeAnthropic() as api:
        api.reply(tool_use("form_start", {"form": "travel-claim"}))
        api.reply(text("Your full name?"))
        api.fault(500, times=3)
        api.reply(tool_use("form_fill", {"values": {"full_name": "Dana Reeve"}, "quotes": {"full_name": "Dana Reeve"}}))
        api.reply(text("Thanks. Your work email?"))
        out = _claude(cli, api, ["Dana Reeve", "Dana Reeve"])
    assert out.exit_code == 0, out.stderr
    errors = out.stderr.strip().splitlines()
    assert len(errors) == 1 and "failed (500)" in errors[0], out.stderr
    assert "failed (500)" not in out.stdout and "Thanks. Your work email?" in out.stdout


# --------------------------------------------------------------------------- a revisit goes over every field


def the_question(said: str, until: str) -> str:
    """The first line of ``said`` that asks something, or that holds ``until``."""
    for line in said.splitlines():
        if "?" in line or until in line:
            return line
    raise AssertionError(f"no question, nor {until!r}, in:\n{said}")


def label_of(question: str) -> str:
    return question.split("?")[0].split(" — ")[0]


def test_a_revisit_goes_over_every_field_of_the_step_and_completes_only_after_the_last(cli):
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
    asked: list[str] = []  # before the revisit, then in it (each answer chosen only by the question's label)
    asked_again: list[str] = []
    phase = ["first"]

    def person(said: str) -> str | None:
        if phase[0] == "first":
            question = the_question(said, "Details changed —")
            if "Details changed —" in question:
                phase[0] = "changed"
                return "yes"
            asked.append(label_of(question))
            return first[label_of(question)]
        if phase[0] == "changed":
            assert "Full name?" in said and "We need to go back over Contact" in said.split("Full name?")[0], said
            phase[0] = "revisit"
            asked_again.append("Full name")
            return "same"
        if phase[0] == "revisit":
            question = the_question(said, "Shall I send it?")
            if "Shall I send it?" in question:
                phase[0] = "sent"
                return "yes"  # the read-back of every answer, then the send
            label = label_of(question)
            asked_again.append(label)
            return again[label] if 'say "same" to keep it' in question or label == "Phone" else first[label]
        assert "is complete" in said, said
        return None

    out = cli("run", "client-intake", env={"FORMCTL_SUBJECT": "dana"}, input=Person(person))
    assert out.exit_code == 0, out.stderr
    assert phase[0] == "sent", out.stdout
    assert asked[:2] == ["Client type", "Age"]
    # Every field of Contact gets its question in the revisit, the optional Phone included.
    assert asked_again == ["Full name", "Email", "Phone"]
    exported = cli.json("export", only_instance(cli))
    assert exported["status"] == "complete"
    assert exported["values"]["email"] == "alex.m@example.org" and exported["values"]["phone"] == "07700 900123"


# --------------------------------------------------------------------------- a natural answer


def test_a_natural_answer_places_what_fits_for_sure_says_it_back_and_guesses_nothing(cli):
    out = run(cli, ["Dana Reeve", "AB1234, dana@example.com, going to Leeds, for a team offsite"])
    assert out.exit_code == 0, out.stderr
    reply = after(out.stdout, "Staff ID? Two capital letters and four digits, like AB1234.\n")
    # Each value to the field its shape fits ("AB1234", the address) or its words name ("going
    # to", "for"), a later step's early; then the question still open.
    assert "Staff ID: AB1234" in reply and "Work email: dana@example.com" in reply
    assert "Destination: Leeds" in reply and "Purpose of trip: team offsite" in reply
    assert "I wasn't sure" not in reply
    got = values(cli, only_instance(cli))
    assert got["staff_id"] == "AB1234" and got["email"] == "dana@example.com"
    assert got["destination"] == "Leeds" and got["purpose"] == "team offsite"


def test_free_text_goes_only_to_the_question_asked_and_a_near_miss_still_reaches_the_engine(cli):
    # At "Staff ID?": "ab12" fits no field for sure, in any case, so it is the Staff ID answer (and
    # rejected with the field's hint); the email beside the real one is placed by its shape.
    out = run(cli, ["Dana Reeve", "ab12", "AB1234 and my email is dana@example.org"])
    assert out.exit_code == 0, out.stderr
    assert "· rejected Staff ID" in out.stdout
    assert "Got it — Staff ID: AB1234; Work email: dana@example.org." in out.stdout
    assert "I wasn't sure" not in out.stdout  # "and my email is" named the address it led in
