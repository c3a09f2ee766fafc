"""The terminal chat under a stopped turn and a huge paste, in a real pseudo-terminal.

* Ctrl-C while a slow executor runs (after the answer was saved): the prompt comes back only
  once the turn has stopped, the chat says what was saved and asks the question open now, and
  the next answer is taken for it (not refused as "The form changed since I asked that").
* A 200,000-character paste, as a terminal sends one (bracketed paste, which prompt-toolkit turns
  on): the chat's memory stays bounded, the line is refused as too long in one line, and the
  chat goes on.
* A paste without bracketed-paste mode arrives key by key: past the limit the keys are counted,
  not kept, and the line is refused the same way (12,000 characters: 200,000 typed key by key
  took a minute of the suite's time and proves nothing more, the count past the limit being the
  same code for any length).
"""

from __future__ import annotations

import os
import re
import select
import shutil
import time
from pathlib import Path

import pytest

pexpect = pytest.importorskip("pexpect")

from fixture_project import FORMS, MILEAGE_GATE  # noqa: E402
from helpers.terminal import close, spawn  # noqa: E402

pytestmark = pytest.mark.e2e  # every test here runs formctl in a pseudo-terminal

CPR = "\x1b[6n"  # prompt-toolkit asks where the cursor is; a terminal answers
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _spawn(cli, **env: str) -> pexpect.spawn:
    """``formctl run travel-claim`` in a pseudo-terminal, over ``cli``'s store and forms."""
    full = {k: v for k, v in os.environ.items() if not k.startswith(("FORMCTL_", "ANTHROPIC_"))}
    full.pop("NO_COLOR", None)
    full.update(TERM="xterm-256color", FORMCTL_SUBJECT="dana", **cli.env, **env)

    child = spawn(["-m", "formctl.cli.app", "run", "travel-claim"], full, timeout=60)
    child.logfile_read = open(Path(cli.store).parent / "terminal.log", "w", encoding="utf-8")
    return child


def _expect(child: pexpect.spawn, pattern: str, timeout: float = -1) -> str:
    """Wait for ``pattern``, answering cursor-position requests; what came before it, plain."""
    seen = []
    while True:
        index = child.expect([pattern, re.escape(CPR)], timeout=timeout)
        seen.append(child.before)
        if index == 0:
            return ANSI.sub("", "".join(seen))
        child.send("\x1b[5;1R")


def _say(child: pexpect.spawn, text: str) -> None:
    child.send(text + "\r")


def _hold_the_miles(claim: Path, body: str) -> None:
    """The copied travel claim (``claim``) with an executor on the miles that runs ``body`` (lines
    indented four spaces, ``miles`` in scope) before it returns: the example's mileage cost is
    derived, so it has no executor of its own to hold."""
    source = claim.read_text(encoding="utf-8")
    assert MILEAGE_GATE + ")" in source and "\ntravel_claim = (" in source
    source = source.replace(MILEAGE_GATE + ")", MILEAGE_GATE + ", on_fill=_held_miles)")
    held = f'def _held_miles(ctx):\n    miles = ctx.values.get("mileage")\n{body}    return None\n\n\n'
    claim.write_text(source.replace("\ntravel_claim = (", "\n" + held + "travel_claim = ("), encoding="utf-8")


def _answer_up_to_the_miles(child: pexpect.spawn) -> None:
    _expect(child, "Full name")
    for answer, next_question in [
        ("Dana Reeve", "Staff ID"),
        ("AB1234", "Work email"),
        ("dana@example.org", "Destination"),
        ("Leeds", "Departure date"),
        ("2026-03-02", "Return date"),
        ("2026-03-04", "Purpose of trip"),
        ("client visit", "Mode"),
        ("car", "Miles driven"),
    ]:
        _say(child, answer)
        _expect(child, next_question)


def test_ctrl_c_while_an_executor_runs_gives_a_clean_prompt_the_question_again_and_takes_the_next_answer(tmp_path, cli):
    # The example forms, with the mileage executor held until the test lets it go.
    forms = tmp_path / "forms"
    shutil.copytree(FORMS, forms, ignore=shutil.ignore_patterns("__pycache__"))
    release = tmp_path / "release"
    claim = forms / "travel_claim.py"
    slow = """    if miles == 120:
        import os, sys, time
        sys.stdout.write("(executor running)\\r\\n")
        sys.stdout.flush()
        deadline = time.monotonic() + 60
        while not os.path.exists(os.environ["FORMCTL_TEST_RELEASE"]) and time.monotonic() < deadline:
            time.sleep(0.05)
"""
    _hold_the_miles(claim, slow)

    child = _spawn(cli.at(forms=forms), FORMCTL_TEST_RELEASE=str(release))
    try:
        _answer_up_to_the_miles(child)
        _say(child, "120")
        _expect(child, r"\(executor running\)")
        child.sendintr()
        _expect(child, "stopping…")
        # The turn is still running: the prompt must not come back meanwhile. A chat broken to go
        # back to its prompt at Ctrl-C (its turn left running, nothing caught up) drew the prompt
        # 0.2 to 5 ms after "stopping…" here; a quarter of a second is fifty times that, and
        # fails on it (checked), where a whole second was waited before.
        time.sleep(0.25)
        release.touch()
        stopped = _expect(child, "Cancelled. Every answer already given is saved.")
        assert "you ›" not in stopped, f"the prompt came back mid-turn: {stopped!r}"
        said = _expect(child, r"Accommodation cost\? Optional")
        assert "Saved before you stopped it: Miles driven is now 120; Mileage cost is now 54." in said
        assert "you ›" not in said
        _expect(child, "you ›")
        _say(child, "0")
        answered = _expect(child, r"Meals cost\?")
        assert "saved Accommodation cost" in answered
        assert "changed since I asked" not in answered
        _say(child, "/quit")
        child.expect(pexpect.EOF)
    finally:
        close(child)
    assert child.exitstatus == 0


def test_a_second_ctrl_c_while_a_turn_is_stopping_leaves_the_chat(tmp_path, cli):
    # The mileage executor never returns by itself here: only leaving ends the wait.
    forms = tmp_path / "forms"
    shutil.copytree(FORMS, forms, ignore=shutil.ignore_patterns("__pycache__"))
    claim = forms / "travel_claim.py"
    stuck = """    if miles == 120:
        import sys, time
        sys.stdout.write("(executor running)\\r\\n")
        sys.stdout.flush()
        time.sleep(60)
"""
    _hold_the_miles(claim, stuck)

    child = _spawn(cli.at(forms=forms))
    try:
        _answer_up_to_the_miles(child)
        _say(child, "120")
        _expect(child, r"\(executor running\)")
        child.sendintr()
        _expect(child, "stopping…")
        child.sendintr()
        said = _expect(child, pexpect.EOF, timeout=10)
    finally:
        close(child)
    assert child.exitstatus == 130
    assert "formctl resume form_" in said  # the goodbye says how to carry on
    assert "Traceback" not in said


def _send_in_pieces(child: pexpect.spawn, text: str, piece: int = 1024) -> None:
    """``text`` written to the terminal in pieces as it takes them, reading what the chat echoes
    whenever there is some (neither side may block on a full terminal). Nothing waits for a quiet
    moment: a wait of 50 ms for the echo to stop after every piece was most of the time this took."""
    terminal = select.poll()
    terminal.register(child.child_fd, select.POLLIN | select.POLLOUT)
    deadline = time.monotonic() + 240
    start = 0
    while start < len(text):
        ready = terminal.poll(1000)
        if not ready:  # a chat that stopped reading fails the test, never hangs it
            assert time.monotonic() < deadline, f"the chat stopped reading its input after {start:,} characters"
            continue
        events = ready[0][1]
        if events & select.POLLIN:
            if CPR in child.read_nonblocking(1 << 16, timeout=0):
                child.send("\x1b[5;1R")
        if events & select.POLLOUT:
            child.send(text[start : start + piece])
            start += piece


def _peak_memory_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        return int(re.search(r"VmHWM:\s+(\d+) kB", status.read()).group(1))


def _refuses_then_goes_on(child: pexpect.spawn, length: int) -> None:
    """After a line of ``length`` characters and Enter: one line refuses it, nothing is saved, the
    chat peaked under 250 MB, and the next answer goes to the same question."""
    child.send("\r")
    refused = _expect(
        child, rf"That line is too long \({length:,} characters; at most 10,000\): nothing was sent\.", 180
    )
    assert "saved" not in refused
    peak_kb = _peak_memory_kb(child.pid)
    assert peak_kb < 250_000, f"the chat peaked at {peak_kb // 1024} MB"
    _say(child, "Dana Reeve")  # the chat goes on, and the question is still the name
    assert "saved Full name" in _expect(child, "Staff ID")
    _say(child, "/quit")
    child.expect(pexpect.EOF)


def test_a_200000_character_paste_is_refused_in_one_line_with_bounded_memory(cli):
    child = _spawn(cli)
    try:
        _expect(child, "Full name")
        _expect(child, "you ›")  # the prompt is up (its cursor-position request answered): bracketed paste is on
        paste = ("Dana Reeve, staff id AB1234, leaving for Leeds on 2 March. " * 4000)[:200_000]
        # How a terminal sends a paste: one bracketed-paste event, which echoes nothing past the limit.
        _send_in_pieces(child, "\x1b[200~" + paste + "\x1b[201~", piece=1 << 16)
        _refuses_then_goes_on(child, 200_000)
    finally:
        close(child)
    assert child.exitstatus == 0


def test_a_paste_without_bracketed_paste_mode_is_counted_key_by_key_and_refused(cli):
    child = _spawn(cli)
    try:
        _expect(child, "Full name")
        _expect(child, "you ›")  # the prompt is up: typed before it, the keys would meet the terminal's line editing
        _send_in_pieces(child, ("Dana Reeve, staff id AB1234. " * 500)[:12_000])
        _refuses_then_goes_on(child, 12_000)
    finally:
        close(child)
    assert child.exitstatus == 0
