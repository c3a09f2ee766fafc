"""Two chats on one instance, sending at the same moment: each says what the other changed.

When a turn ends, the person has been shown what that turn's own writes did, and nothing else:
a commit made elsewhere while the turn ran (another chat's answer, a host's write) is said as
"Changed elsewhere: …" at once, so the chat's last words and its status line agree with the
store (docs/chat.md, "The chat always knows what it asked"). Here the colleague's commit is
made in the middle of the turn, deterministically: from the chat's own event stream, right after
its answer was stored.
"""

from __future__ import annotations

import io
import queue
import shutil
import subprocess
import sys
import threading
import time

import pytest

from clitools import Cli, formctl_child, start
from fixture_project import FORMS
from formctl import FormRegistry, FormRunner, JsonFileAdapter
from formctl.agent.notices import read_notice
from formctl.cli.chat import ChatOptions, ChatSession, PlainChat
from formctl.cli.chat.plain import ELSEWHERE
from formctl.forms.person_status import status_for

# The travel claim answered up to its "Purpose of trip?" question.
UP_TO_PURPOSE = {
    "full_name": "Dana Reeve",
    "staff_id": "AB1234",
    "email": "dana@example.org",
    "destination": "Leeds",
    "departure_date": "2026-11-03",
    "return_date": "2026-11-05",
}


def chat(store, instance_id) -> ChatSession:
    return ChatSession.open(
        ChatOptions(instance_id=instance_id, subject="dana", offline=True, store=str(store), forms=str(FORMS))
    )


def values(store, instance_id) -> dict:
    return dict(Cli(str(store)).json("export", instance_id)["values"])


def during_the_turn(session: ChatSession, write) -> list[bool]:
    """Run ``write`` once, inside ``session``'s next turn, right after its answer is stored."""
    done: list[bool] = []
    face = session.on_event

    def event(ev) -> None:
        if ev.kind == "tool_result" and ev.name == "form_fill" and not done:
            done.append(True)
            write()
        if face is not None:
            face(ev)

    session.on_event = event
    return done


def while_it_answers(session: ChatSession, write) -> list[bool]:
    """Run ``write`` once, as ``session``'s model starts its words after storing an answer: the
    words were decided over the form as it stood before ``write``."""
    done: list[bool] = []
    stored: list[bool] = []
    face = session.on_event

    def event(ev) -> None:
        if ev.kind == "tool_result" and ev.name == "form_fill":
            stored.append(True)
        if ev.kind == "text_delta" and stored and not done:
            done.append(True)
            write()
        if face is not None:
            face(ev)

    session.on_event = event
    return done


class HeldTurn:
    """Another chat's turn, started and held just before its ``form_fill`` runs (its model has
    read the form and decided what to write), until :meth:`release`: its person sent their line
    at the same moment as ours. The turn runs in a thread, as a second process would."""

    def __init__(self, session: ChatSession, line: str) -> None:
        self.session = session
        self.ready, self.go, self.stored = threading.Event(), threading.Event(), threading.Event()

        def event(ev) -> None:
            if ev.kind == "tool_call" and ev.name == "form_fill" and not self.ready.is_set():
                self.ready.set()
                assert self.go.wait(30)
            if ev.kind == "tool_result" and ev.name == "form_fill":
                self.stored.set()

        session.on_event = event
        self.thread = threading.Thread(target=session.send, args=(line,), daemon=True)
        self.thread.start()
        assert self.ready.wait(30), "the other chat's turn never reached form_fill"

    def release(self) -> None:
        """Let the held turn store its answer (over ours), and wait until it has."""
        self.go.set()
        assert self.stored.wait(30)

    def finish(self) -> None:
        self.go.set()
        self.thread.join(30)


def test_two_chats_sending_at_the_same_moment_are_each_told_of_the_others_answer(tmp_path):
    store = tmp_path / "store"
    instance_id = start(str(store), seed=UP_TO_PURPOSE)
    mine, other = chat(store, instance_id), chat(store, instance_id)
    try:
        for session in (mine, other):
            session.send(session.opening() or "Hello.")  # both show "Purpose of trip?"
        theirs = HeldTurn(other, "Workshop")
        injected = during_the_turn(mine, theirs.release)  # theirs lands after ours, during our turn
        mine.send("Conference")
        theirs.finish()
        assert injected and values(store, instance_id)["purpose"] == "Workshop"
        notice = read_notice(mine.changes(ELSEWHERE))
        assert notice is not None, "the other chat's commit was taken as seen"
        assert notice.what == f"{ELSEWHERE}: Purpose of trip is now Workshop."
        assert mine.changes(ELSEWHERE) is None  # said once
        # The other person's answer is the one stored, but they replaced ours without knowing it:
        # they are told too.
        theirs_told = read_notice(other.changes(ELSEWHERE))
        assert theirs_told is not None, "the answer the other chat replaced was never said to it"
        assert theirs_told.what == (
            f"{ELSEWHERE}: Purpose of trip was answered there too, as Conference, just before the answer here replaced it."
        )
        assert other.changes(ELSEWHERE) is None
    finally:
        mine.close()
        other.close()


def test_a_hosts_write_during_a_turn_is_said_once_the_turn_ends(tmp_path):
    store = tmp_path / "store"
    instance_id = start(str(store), seed=UP_TO_PURPOSE)
    host = FormRunner(JsonFileAdapter(store), registry=FormRegistry.from_toml(FORMS / "registry.toml"), subject="dana")
    mine = chat(store, instance_id)
    try:
        mine.send(mine.opening() or "Hello.")
        injected = during_the_turn(mine, lambda: host.fill({"mode": "rail"}, instance_id))
        mine.send("Conference")
        assert injected
        notice = read_notice(mine.changes(ELSEWHERE))
        assert notice is not None, "the host's commit was taken as seen"
        assert notice.what == f"{ELSEWHERE}: Mode is now rail."
        assert mine.changes(ELSEWHERE) is None
    finally:
        mine.close()


def test_a_turn_with_only_its_own_commits_leaves_nothing_to_say(tmp_path):
    store = tmp_path / "store"
    instance_id = start(str(store), seed=UP_TO_PURPOSE)
    mine = chat(store, instance_id)
    try:
        mine.send(mine.opening() or "Hello.")
        mine.send("Conference")
        mine.send("rail")
        assert values(store, instance_id)["mode"] == "rail"
        assert mine.changes(ELSEWHERE) is None
        assert mine.seen_version() == (instance_id, mine.agent.open_instance(instance_id).version)
    finally:
        mine.close()


def test_a_chat_says_a_colleagues_commit_at_once_and_its_last_words_ask_what_the_store_has_open(
    tmp_path, monkeypatch, capsys
):
    """Through the plain face, with no further line from the person: the chat does not wait for
    one to say what changed, and its last question is the one the status line shows (the host's
    write lands while the model is saying "Mode — car, rail or air?")."""
    store = tmp_path / "store"
    instance_id = start(str(store), seed=UP_TO_PURPOSE)
    host = FormRunner(JsonFileAdapter(store), registry=FormRegistry.from_toml(FORMS / "registry.toml"), subject="dana")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"Conference\n"), encoding="utf-8"))
    mine = chat(store, instance_id)
    try:
        face = PlainChat(mine)
        injected = while_it_answers(mine, lambda: host.fill({"mode": "rail"}, instance_id))
        face.converse()
        assert injected
        status = status_for(mine.agent, instance_id)
    finally:
        mine.close()
    said = capsys.readouterr().out
    assert "Changed elsewhere: Mode is now rail." in said
    tail = said[said.index("Changed elsewhere: Mode is now rail.") :]
    assert "Ticket reference" in status.splitlines()[0]  # what the store has open now
    last_words = tail.split("Saved. Carry on with")[0]
    assert "Ticket reference" in last_words, said
    assert "Mode — car, rail or air?" not in last_words


# --------------------------------------------------------------------------- two real processes


class _Piped:
    """``formctl resume ID`` in a child process, stdin a pipe; its output read as it comes."""

    def __init__(self, cli: Cli, instance_id: str, subject: str) -> None:
        self.proc = formctl_child(
            "resume",
            instance_id,
            env={**cli.env, "FORMCTL_SUBJECT": subject, "PYTHONUNBUFFERED": "1"},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.said: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)  # the end of its output: nothing more will come

    def expect(self, text: str, timeout: float = 60) -> None:
        """Read until a line holds ``text``."""
        deadline = time.monotonic() + timeout
        while not self.said or text not in self.said[-1]:
            try:
                line = self.lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                line = None
            if line is None:
                raise AssertionError(f"no {text!r} in:\n" + "\n".join(self.said))
            self.said.append(line)

    def say(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def end(self, line: str) -> None:
        """``line``, then the end of input: the chat takes it, says goodbye and exits."""
        self.say(line)
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    def finish(self) -> str:
        """Everything it said, up to the end of its output (read until the reader's end mark: no
        waiting for a quiet second)."""
        self.proc.wait(timeout=90)
        while (line := self.lines.get(timeout=30)) is not None:
            self.said.append(line)
        return "\n".join(self.said)


def _two_chats_send_at_once(cli: Cli, instance_id: str, subject: str) -> dict[str, str]:
    """What each chat said, by the line it was sent."""
    chats: dict[str, _Piped] = {}
    for line in ("Conference", "Workshop"):  # opened one after the other: the second continues the
        chats[line] = _Piped(cli, instance_id, subject)  # conversation the first saved
        chats[line].expect("Purpose of trip?")
    for line, piped in chats.items():  # released together
        piped.say(line)
    for piped in chats.values():  # both answers are stored: each chat has moved on to the next step
        piped.expect("Mode")
    for piped in chats.values():  # a command: whatever is still unsaid is said before it runs
        piped.end("/status")
    return {line: piped.finish() for line, piped in chats.items()}


@pytest.mark.e2e
@pytest.mark.parametrize("store_kind", ["json", "postgresql"])
def test_two_chat_processes_sending_at_the_same_moment_each_end_knowing_what_is_stored(tmp_path, store_kind, request):
    """Two ``formctl resume`` processes on one instance, each sent its answer to "Purpose of
    trip?" at the same moment, four times, then ``/status`` once both have moved on. Whichever
    answer is stored, the chat whose answer it is not says "Changed elsewhere: Purpose of trip is
    now …"; the chat whose answer replaced the other's says so; neither person's answer is taken
    for a question they had not seen; and both chats' last question is the one the store has
    open. (Before this was fixed, a chat marked the form
    as it stood when its turn ended as seen, the other chat's answer included: in about half the
    trials neither chat said it.)"""
    from formctl.cli.workspace import open_store

    store = str(tmp_path / "store") if store_kind == "json" else request.getfixturevalue("pg_dsn")
    cli = Cli(store)
    for trial in range(4):
        subject = f"dana{trial}"  # one open claim per subject: a new one each trial
        adapter = open_store(store)
        try:
            runner = FormRunner(adapter, registry=FormRegistry.from_toml(FORMS / "registry.toml"), subject=subject)
            instance_id = runner.start("travel-claim", seed=UP_TO_PURPOSE).view.instance_id
        finally:
            adapter.close()
        said = _two_chats_send_at_once(cli, instance_id, subject)
        stored = values(store, instance_id)["purpose"]
        given = {row["value"] for row in cli.json("history", instance_id, "purpose")["revisions"]}
        for line, text in said.items():
            assert "Traceback" not in text, text
            if line != stored:
                assert f"Changed elsewhere: Purpose of trip is now {stored}." in text, (trial, line, text)
            other = next(o for o in said if o != line)
            if line == stored and other in given:  # theirs was stored, then ours replaced it
                assert f"answered there too, as {other}" in text, (trial, line, text)
            assert "for Mode" not in text, (trial, line, text)
            last_question = [row for row in text.splitlines() if row.rstrip().endswith("?")][-1]
            assert last_question.startswith("Mode"), (trial, line, text)


@pytest.mark.e2e
def test_in_a_terminal_a_hosts_write_during_a_turn_is_said_without_a_keystroke(tmp_path, cli):
    """A real pseudo-terminal: while the chat's turn runs (its mileage executor held), a host
    changes Purpose of trip from another process. When the turn ends the chat says so at once,
    before the prompt comes back, and asks the question the status bar shows. Before, the turn's end
    marked the host's write as seen and the status poller took the stamp read after the turn as
    the chat's own: nothing was ever said."""
    pexpect = pytest.importorskip("pexpect")
    from chat.test_terminal_interrupts import _answer_up_to_the_miles, _expect, _hold_the_miles, _say, _spawn
    from helpers.terminal import close

    forms = tmp_path / "forms"
    shutil.copytree(FORMS, forms, ignore=shutil.ignore_patterns("__pycache__"))
    release = tmp_path / "release"
    claim = forms / "travel_claim.py"
    held = """    if miles == 120:
        import os, sys, time
        sys.stdout.write("(executor running)\\r\\n")
        sys.stdout.flush()
        deadline = time.monotonic() + 60
        while not os.path.exists(os.environ["FORMCTL_TEST_RELEASE"]) and time.monotonic() < deadline:
            time.sleep(0.05)
"""
    _hold_the_miles(claim, held)
    cli = cli.at(forms=forms)

    child = _spawn(cli, FORMCTL_TEST_RELEASE=str(release))
    try:
        _answer_up_to_the_miles(child)
        _say(child, "120")
        _expect(child, r"\(executor running\)")  # Miles driven is stored; the turn goes on
        (row,) = cli.json("instances")["instances"]
        cli.ok("fill", row["instance_id"], "purpose=Team offsite")  # the host, from another process
        release.touch()
        said = _expect(child, r"Changed elsewhere: Purpose of trip is now Team offsite\.", timeout=30)
        assert "you ›" not in said  # said as the turn ends, before the prompt comes back
        _expect(child, r"Accommodation cost\?")  # the notice's turn asks what the store has open…
        bar = _expect(child, "Total claimed")  # …as the status bar, drawn under the prompt, shows
        assert 'step 4/4 "Costs" · pending: Accommodation cost' in bar
        _say(child, "/quit")
        child.expect(pexpect.EOF)
    finally:
        close(child)
