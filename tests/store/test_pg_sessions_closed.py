"""Every ``formctl`` command closes the PostgreSQL sessions it opened before it returns
(docs/store-postgres.md, "Connections"): a host that runs the commands in its own process
keeps no server session per command, whether the command succeeded or failed.

The sessions are counted on the server (``pg_stat_activity``) by an ``application_name``
of this test's own, with Python's cyclic collector off for the test: an adapter left open
stays open there until a collection happens to run. A session its client closed can still be
listed for a moment (its server process exits after the client has gone), so the count that
decides is the one after the last command, asked again for up to a few seconds; the count
after each command is kept to say which command left one."""

from __future__ import annotations

import gc
import json
import time
import uuid

import psycopg
import pytest
import typer.main

UNKNOWN = "form_mx3tplc2_9jz5s0"  # the shape of an id, of no instance


class Sessions:
    """Counts the server sessions named ``name`` over one connection of its own (named otherwise,
    so not counted): a connection per count cost a server process each, 30 times a test."""

    def __init__(self, dsn: str, name: str) -> None:
        self.name = name
        self._conn = psycopg.connect(dsn, autocommit=True)

    def __call__(self, *, patience: float = 0.0) -> int:
        deadline = time.monotonic() + patience
        while True:
            query = "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s"
            (count,) = self._conn.execute(query, (self.name,)).fetchone()
            if count == 0 or time.monotonic() > deadline:
                return int(count)
            time.sleep(0.02)

    def close(self) -> None:
        self._conn.close()


@pytest.fixture
def no_collector():
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _store_commands() -> set[str]:
    """Every command of the app that opens a store: those taking ``--store``, and ``store copy``."""
    from formctl.cli import app

    found: set[str] = set()

    def walk(group, prefix: str) -> None:
        for name, command in group.commands.items():
            if hasattr(command, "commands"):
                walk(command, f"{prefix}{name} ")
            elif any(p.name in ("store", "source") for p in command.params):
                found.add(prefix + name)

    walk(typer.main.get_command(app.app), "")
    return found


def test_no_command_leaves_a_session_open_on_the_server(cli, pg_dsn, tmp_path, monkeypatch, no_collector):
    monkeypatch.chdir(tmp_path)
    name = f"formctl-test-{uuid.uuid4().hex[:12]}"
    db = cli.at(store=pg_dsn + ("&" if "?" in pg_dsn else "?") + f"application_name={name}")
    sessions = Sessions(pg_dsn, name)
    folder = str(tmp_path / "folder")
    ran: list[tuple[str, int]] = []

    def command(*args: str, input: str | None = None, exit_codes: tuple[int, ...] = (0,)) -> str:
        result = db(*args, input=input)
        assert result.exit_code in exit_codes, (args, result.stdout, result.stderr, result.exception)
        words = [a for a in args if not a.startswith("-")]
        ran.append((" ".join(words[:2] if words[0] in ("store", "program") else words[:1]), sessions()))
        return str(result.stdout)

    command("store", "init")
    command("run", "travel-claim", "--offline", "--subject", "dana", input="Dana Reeve\nAB1234\n")
    iid = json.loads(command("instances", "--json"))["instances"][0]["instance_id"]
    command("resume", iid, input="dana@example.org\n")
    command("fill", iid, "email=dana@example.com")
    command("undo", iid, "email")
    command("redo", iid, "email")
    command("retract", iid, "email", "--reason", "asked to")
    command("inspect", iid)
    command("inspect", UNKNOWN, exit_codes=(1,))  # a failure after the store was opened
    command("history", iid, "full_name")
    command("why", iid, "full_name")
    command("export", iid, "--json")
    command("export", "--form", "travel-claim", "--format", "csv")
    command("find", "dana")
    command("stats", "travel-claim")
    command("submit", iid, exit_codes=(1,))  # not ready: refused after reading it
    command("migrate", iid, exit_codes=(0, 1))
    command("resolve", iid, exit_codes=(1,))  # it waits on no checkpoint
    command("abandon", iid, "--reason", "a duplicate")
    command("reopen", iid, "--reason", "not a duplicate after all")
    command("withdraw", iid, "--reason", "no longer needed", exit_codes=(1,))  # it waits on no approval
    command("store", "check")
    command("store", "reindex", exit_codes=(0, 1))
    command("store", "repair", iid, exit_codes=(0, 1))
    command("program", "start", "client-intake", "--subject", "sam")
    command("program", "list")
    command("program", "update", "identity", "--subject", "sam", "--completed", "client")
    shown = tmp_path / "program.json"
    shown.write_text(command("program", "show", "--subject", "sam", "--json"))
    command("program", "revise", "--from", str(shown), "--if-version", "1", "--subject", "sam", exit_codes=(0, 1))
    command("program", "sync", "--subject", "sam")
    command("program", "history", "--subject", "sam")
    command("program", "resume-hooks", "--subject", "sam")
    command("mcp", "--subject", "dana", input="")
    command("store", "copy", "--from", db.store, "--to", folder)
    command("store", "copy", "--from", folder, "--to", db.store)

    try:
        assert sessions(patience=5.0) == 0, [(what, open_then) for what, open_then in ran if open_then]
    finally:
        sessions.close()
    assert {what for what, _ in ran} == _store_commands()  # a new command is added here too


def test_a_chat_session_a_host_closes_leaves_no_session_open(pg_dsn, no_collector):
    # A host embedding the chat: the session's store, the status poller's own store and the
    # watcher listening for other people's writes are three sessions; close() ends all three.
    import threading

    from fixture_project import FORMS
    from formctl.cli.chat.session import ChatOptions, ChatSession

    name = f"formctl-test-{uuid.uuid4().hex[:12]}"
    dsn = pg_dsn + ("&" if "?" in pg_dsn else "?") + f"application_name={name}"
    sessions = Sessions(pg_dsn, name)
    session = ChatSession.open(
        ChatOptions(form="travel-claim", subject="dana", offline=True, store=dsn, forms=str(FORMS))
    )
    try:
        session.send(session.opening() or "Hello.")
        session.send("Dana Reeve")
        stop = threading.Event()
        session.wait_for_change(0, stop)  # the poller opens its store
        session.wait_for_change(0, stop)  # and starts listening (no need to wait for anything)
        session.poll()  # and reads through its store
        assert sessions() == 3
    finally:
        session.close()
    try:
        assert sessions(patience=5.0) == 0
    finally:
        sessions.close()
