"""A PostgreSQL server that goes away under a chat (docs/store-postgres.md, "A server that is
away"): a turn waits for it once, not once per store call, and says it is waiting; the line
names the store, not the model; the person's message is kept and sent again once the server is
back, before the line typed meanwhile; Ctrl-C stops the wait; and Ctrl-D still says what is saved."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time

import pytest

from clitools import ctrl_c_at_default
from fixture_project import FORMS
from formctl.errors import StoreError
from formctl.forms.instance import Provenance, now_iso
from formctl.store.postgres import PostgresAdapter
from helpers.piped_input import until_reading_input, until_taken

pytestmark = pytest.mark.e2e  # every test here stops a server


def _reader(stream, out: queue.Queue) -> None:
    for line in stream:
        out.put(line.rstrip("\n"))
    out.put(None)


def _until(out: queue.Queue, text: str, timeout: float = 60) -> list[str]:
    seen = []
    deadline = time.monotonic() + timeout
    while True:
        line = out.get(timeout=max(0.1, deadline - time.monotonic()))
        assert line is not None, f"the chat ended before {text!r}: {seen}"
        seen.append(line)
        if text in line:
            return seen


def _chat(server, tmp_path, patience: str):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FORMCTL_", "ANTHROPIC_"))}
    env.update(FORMCTL_STORE=server.dsn, FORMCTL_FORMS=str(FORMS), FORMCTL_PG_RECONNECT_PATIENCE=patience)
    chat = subprocess.Popen(
        [sys.executable, "-m", "formctl.cli.app", "run", "travel-claim", "--offline", "--subject", "dana"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
        env=env,
        cwd=tmp_path,
        preexec_fn=ctrl_c_at_default,
    )
    out: queue.Queue = queue.Queue()
    threading.Thread(target=_reader, args=(chat.stdout, out), daemon=True).start()
    return chat, out


def _between_turns(chat, out: queue.Queue) -> list[str]:
    """``/status``, up to its last line, and then until the chat is blocked reading its next
    line: the command's own store calls (the status read, what changed elsewhere) come after
    its output, so only from then on can nothing of it still meet the server, and the server
    stopped next is met by the next turn (on a busy machine they can come well after)."""
    chat.stdin.write("/status\n")
    said = _until(out, "undo would set")
    until_reading_input(chat)
    return said


def test_a_turn_waits_for_a_server_that_is_away_once_and_says_it_is_the_store(private_pg, tmp_path):
    # How long the turn waits is the point here, so the patience is long enough to tell one
    # wait from two: a wait ends up to half a second early (its last pause would overrun), so
    # one is 2-2.5 s and two at least 4.5 s; a turn that waited once a store call (three calls,
    # 6.7 s: checked by taking out the "just gave up" rule in PostgresAdapter._connection) fails.
    patience = 2.5
    chat, out = _chat(private_pg, tmp_path, str(patience))
    said: list[str] = []
    try:
        said += _until(out, "Full name?")
        chat.stdin.write("Dana Reeve\n")
        said += _until(out, "Staff ID?")
        said += _between_turns(chat, out)
        private_pg.stop()
        started = time.monotonic()
        chat.stdin.write("AB1234\n")
        turn = _until(out, "PostgreSQL")
        waited = time.monotonic() - started
        said += turn
        assert waited < patience + 1.5, f"{waited:.1f}s: more than one wait for the server in one turn"
        # ... and it did wait (the last pause may end up to half a second before the patience runs out)
        assert waited > patience - 0.6, f"{waited:.1f}s: the turn did not wait for the server: {said}"
        (line,) = [x for x in turn if "PostgreSQL" in x]
        assert "Cannot connect to the PostgreSQL store" in line and "model" not in line
        assert any("waiting for the database" in x for x in turn), turn  # said while it waited
        # The message is kept (docs/chat.md, "The database goes away"), and the line typed
        # meanwhile waits its turn: it answers the question after the kept message's.
        said += _until(out, "your message is kept")
        chat.stdin.write("dana@example.org\n")
        private_pg.start()
        said += _until(out, "sending your message again")
        said += _until(out, "Work email?")
        said += _until(out, "Destination?")
        chat.stdin.close()  # Ctrl-D
        rest = []
        while (line := out.get(timeout=60)) is not None:
            rest.append(line)
        said += rest
        assert chat.wait(timeout=60) == 0  # the message went through in the end
        assert any("Saved. Carry on with: formctl resume form_" in x for x in rest), rest
        assert not any("Traceback" in x or "psycopg" in x for x in said), said
    finally:
        if chat.poll() is None:
            chat.kill()


def test_ctrl_c_stops_the_wait_for_a_server_that_is_away(private_pg, tmp_path):
    chat, out = _chat(private_pg, tmp_path, "60")
    said: list[str] = []
    try:
        said += _until(out, "Full name?")
        chat.stdin.write("Dana Reeve\n")
        said += _until(out, "Staff ID?")
        said += _between_turns(chat, out)
        private_pg.stop()
        chat.stdin.write("AB1234\n")
        until_taken(chat)  # the turn has begun: its first store call meets the stopped server at once
        time.sleep(0.3)  # and is in the wait (it would last a minute)
        started = time.monotonic()
        chat.send_signal(signal.SIGINT)
        chat.stdin.close()
        while (line := out.get(timeout=30)) is not None:
            said.append(line)
        assert time.monotonic() - started < 10
        assert chat.wait(timeout=30) == 130
        assert not any("Traceback" in x or "psycopg" in x for x in said), said
        assert any("carry on with: formctl resume form_" in x for x in said), said  # the goodbye, at once
    finally:
        if chat.poll() is None:
            chat.kill()


def test_interrupt_ends_an_adapters_wait_from_another_thread(private_pg, monkeypatch):
    monkeypatch.setenv("FORMCTL_PG_RECONNECT_PATIENCE", "60")
    adapter = PostgresAdapter(private_pg.dsn)
    try:
        instance = adapter.create_instance("travel-claim", 1, "dana", Provenance("cli", "host", now_iso()))
        private_pg.stop()
        # From another thread, over and over until the call below returns: an interrupt that
        # comes before its wait has begun is not for that wait (each wait starts afresh), and
        # when the first one that comes during it lands cannot be known from out here.
        done = threading.Event()

        def interrupt_until_done() -> None:
            while not done.wait(0.05):
                adapter.interrupt()

        interrupter = threading.Thread(target=interrupt_until_done)
        interrupter.start()
        started = time.monotonic()
        try:
            with pytest.raises(StoreError, match="Stopped waiting for the PostgreSQL store"):
                adapter.get_instance(instance.id)
        finally:
            done.set()
            interrupter.join()
        assert time.monotonic() - started < 5
    finally:
        adapter.close()
