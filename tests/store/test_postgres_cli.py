"""The ``formctl`` command on a PostgreSQL store: chosen by ``--store``/``FORMCTL_STORE``, every
command works unchanged, a password never shows, ``store init`` and ``store copy`` move a
team over, the chat hears another person's write, and a server restart mid-conversation is
one clear line after which the next message works."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

import psycopg
import pytest

from clitools import start
from fixture_project import FORMS
from formctl.forms.instance import Provenance, now_iso
from helpers import pg_cluster
from helpers.piped_input import until_reading_input


def ids(result) -> list[str]:
    """The instance ids ``instances --json`` printed, run in a child process or in this one."""
    code = result.returncode if isinstance(result, subprocess.CompletedProcess) else result.exit_code
    assert code == 0, result.stderr
    return [row["instance_id"] for row in json.loads(result.stdout)["instances"]]


def test_every_command_works_on_a_database_store_and_nothing_lands_in_a_folder(cli, pg_dsn, tmp_path, monkeypatch):
    # In process, from an empty working folder (the commands on PostgreSQL through the real
    # console script: the restart and README tests below).
    monkeypatch.chdir(tmp_path)
    db = cli.at(store=pg_dsn)
    chat = db.ok("run", "travel-claim", "--offline", "--subject", "dana", input="Dana Reeve\nAB1234\n")
    (iid,) = ids(db("instances", "--json"))
    assert f"formctl resume {iid}" in chat.stdout
    db.ok("fill", iid, "email=dana@example.com")
    db.ok("inspect", iid)
    shown = db.json("export", iid)
    assert shown["values"]["full_name"] == "Dana Reeve" and shown["values"]["email"] == "dana@example.com"
    assert "AB1234" in db.ok("history", iid, "staff_id").stdout
    db.ok("undo", iid, "email")
    assert "email" not in db.json("export", iid).get("values", {})
    assert db.json("store", "check")["instances"] == 1
    # The instance and the conversation with the model are in the database, nothing in a folder.
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_a_wrong_password_is_one_line_naming_the_host_and_never_printed(cli, pg_server):
    wrong = cli.at(store=pg_server.tcp_dsn(password="hunter2-wrong"))  # the example project's forms
    for args in (["instances"], ["store", "check"], ["inspect", "form_mx3tplc2_9jz5s0"]):
        result = wrong(*args)
        assert result.exit_code == 1
        assert "hunter2" not in result.stdout + result.stderr
        (line,) = result.stderr.strip().splitlines()
        assert "Cannot connect to the PostgreSQL store at 127.0.0.1:" in line
        assert "password authentication failed" in line


def test_store_init_creates_the_tables_once(cli, pg_bare_dsn):
    first = cli.at(store=pg_bare_dsn)("store", "init")
    assert first.exit_code == 0 and "tables created (schema version 3)" in first.stdout
    again = cli.at(store=pg_bare_dsn)("store", "init")
    assert again.exit_code == 0 and "already set up (schema version 3)" in again.stdout


def test_store_copy_moves_every_instance_with_its_history_once_and_verifies(cli, pg_dsn, tmp_path):
    local, db = cli.at(store=tmp_path / "local"), cli.at(store=pg_dsn)
    dana = local.start({"full_name": "Dana Reeve"})
    sam = local.start({"full_name": "Sam Jones"}, subject="sam")
    local.ok("fill", dana, "full_name=Dana R. Reeve")
    local.ok("undo", dana, "full_name")

    first = cli("store", "copy", "--from", local.store, "--to", pg_dsn, "--json")
    assert first.exit_code == 0, first.stderr
    report = json.loads(first.stdout)
    assert (report["copied"], report["unchanged"], report["verified"]) == (2, 0, True)
    for iid in (dana, sam):  # the same history, versions and timestamps on both sides
        assert local.json("history", iid) == db.json("history", iid)
    assert ids(db("instances", "--json")) == ids(local("instances", "--json"))

    second = cli.json("store", "copy", "--from", local.store, "--to", pg_dsn)
    assert (second["copied"], second["updated"], second["unchanged"]) == (0, 0, 2)

    local.ok("fill", sam, "staff_id=SJ1234")  # the source moves on
    db.ok("fill", dana, "staff_id=DR1234")  # and so does the target
    third = cli("store", "copy", "--from", local.store, "--to", pg_dsn)
    assert third.exit_code == 0, third.stderr
    assert "0 copied, 1 brought up to date, 0 already there" in third.stdout
    assert f"left alone: {dana}" in third.stdout and "Verified" in third.stdout
    assert db.json("export", sam)["values"]["staff_id"] == "SJ1234"


def test_the_chat_hears_another_persons_write_without_polling(pg_dsn):
    from formctl.cli.chat.session import ChatOptions, ChatSession
    from formctl.store.postgres import PostgresAdapter

    session = ChatSession.open(
        ChatOptions(form="travel-claim", subject="dana", offline=True, store=pg_dsn, forms=str(FORMS))
    )
    stop = threading.Event()
    try:
        session.send(session.opening() or "Hello.")
        session.send("Dana Reeve")
        assert session.wait_for_change(0.1, stop) is True  # the first call reads once, then listens
        session.wait_for_change(0, stop)  # listening from here
        # Nothing written: no read at all (a poller that read on every timeout would say True
        # however short the wait). PostgreSQL 13 and later skip at LISTEN what was committed
        # before it, so our own turns' commits are not heard here.
        assert session.wait_for_change(0.05, stop) is False
        colleague = PostgresAdapter(pg_dsn)
        instance = colleague.get_instance(session.instance_id)
        from formctl.forms.instance import Commit

        colleague.commit_instance(
            instance.id,
            Commit(open_step_override=None),
            if_version=instance.version,
            provenance=Provenance("cli", "finance", now_iso()),
        )
        assert session.wait_for_change(10, stop) is True
        stamp, lines = session.poll()
        assert stamp != session.stamp() or lines
        colleague.close()
    finally:
        session.close()


# --------------------------------------------------------------------------- a restart mid-conversation


def _reader(stream, out: queue.Queue) -> None:
    for line in stream:
        out.put(line.rstrip("\n"))
    out.put(None)


def _until(out: queue.Queue, text: str) -> list[str]:
    seen = []
    while True:
        line = out.get(timeout=60)
        assert line is not None, f"the chat ended before {text!r}: {seen}"
        seen.append(line)
        if text in line:
            return seen


def _between_turns(chat, out: queue.Queue) -> None:
    """``/status``, up to its last line, and then until the chat is blocked reading its next
    line: the command's own store calls (the status read, what changed elsewhere) come after its
    output, so only from then on does a restart or a stop meet the next message, not the end of
    the command (on a busy machine they can come well after)."""
    chat.stdin.write("/status\n")
    _until(out, "undo would set")
    until_reading_input(chat)


@pytest.mark.e2e
def test_a_server_restart_mid_conversation_is_one_clear_line_and_the_next_message_works(private_pg, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FORMCTL_", "ANTHROPIC_"))}
    # A stopped server fails the write after 0.2 s of retrying, not the default 8: how long is not
    # the point here (test_pg_server_away.py pins that), and the restart is over before the next
    # message, which reconnects at once.
    env.update(FORMCTL_STORE=private_pg.dsn, FORMCTL_FORMS=str(FORMS), FORMCTL_PG_RECONNECT_PATIENCE="0.2")
    chat = subprocess.Popen(
        [sys.executable, "-m", "formctl.cli.app", "run", "travel-claim", "--offline", "--subject", "dana"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
        env=env,
        cwd=tmp_path,
    )
    out: queue.Queue = queue.Queue()
    threading.Thread(target=_reader, args=(chat.stdout, out), daemon=True).start()
    try:
        _until(out, "Full name?")
        chat.stdin.write("Dana Reeve\n")
        _until(out, "Staff ID?")
        _between_turns(chat, out)
        private_pg.restart()  # between two messages: the chat never notices
        chat.stdin.write("AB1234\n")
        _until(out, "Work email?")
        _between_turns(chat, out)
        private_pg.stop()  # during the next one: one clear line
        chat.stdin.write("dana@example.com\n")
        said = _until(out, "PostgreSQL")
        failure = [line for line in said if "PostgreSQL" in line]
        assert len(failure) == 1 and "Cannot connect to the PostgreSQL store at the socket in" in failure[0]
        assert "Traceback" not in "\n".join(said)
        private_pg.start()
        chat.stdin.write("dana@example.com\n")  # the next message works
        _until(out, "Work email: dana@example.com")
        chat.stdin.close()
        chat.wait(timeout=60)
    except BaseException:
        chat.wait(timeout=10)
        rest = []
        while not out.empty():
            rest.append(out.get())
        print("CHAT SAID:", rest, chat.returncode)
        raise
    finally:
        if chat.poll() is None:
            chat.kill()
    with psycopg.connect(private_pg.dsn) as conn:
        (values,) = conn.execute("SELECT count(*) FROM formctl_revisions").fetchone()
    assert values == 3  # name, staff id, email: nothing lost, nothing doubled


@pytest.mark.e2e
def test_the_readme_team_commands_run_as_written_on_a_fresh_server(private_pg, tmp_path):
    """The README's "For a team: PostgreSQL" block, run by bash line for line against a cluster
    of its own (no role or database but the superuser's), from a project folder that has a local store. Only two things stand in
    for the reader's machine: ``sudo -u postgres CMD`` runs CMD as the cluster's superuser (over
    its socket), and the server's port is PGPORT (the block's DSN names no port, as 5432 is
    the default). The pip line is skipped: the test runs where formctl is installed."""
    import re
    import stat

    text = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = text[text.index("\n## For a team: PostgreSQL") :]
    section = section[: section.index("\n## ", 1)]
    section = section.split("\n### ")[0]  # the one person's set-up (a team's roles: test_pg_roles.py)
    (block,) = re.findall(r"```sh\n(.*?)```", section, flags=re.S)
    script = "\n".join(line for line in block.splitlines() if not line.startswith("python3 -m pip"))

    cluster = private_pg.cluster
    shims = tmp_path / "bin"
    shims.mkdir()
    (shims / "formctl").write_text(f'#!/bin/sh\nexec {sys.executable} -m formctl.cli.app "$@"\n')
    (shims / "sudo").write_text(
        "#!/bin/sh\n"
        '[ "$1" = -u ] && [ "$2" = postgres ] && shift 2 || exit 99\n'
        f'PGHOST={cluster.socket_dir} PGUSER={pg_cluster.SUPERUSER} PGDATABASE=postgres exec "$@"\n'
    )
    for shim in shims.iterdir():
        shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    project = tmp_path / "project"
    project.mkdir()
    start(str(project / ".formctl"), {"full_name": "Ada Lovelace"}, subject="ada")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FORMCTL_", "ANTHROPIC_", "PG"))}
    env.update(
        PATH=f"{shims}:{cluster.bindir}:{env.get('PATH', '')}",
        USER="ada",
        HOME=str(tmp_path),
        PGPORT=str(cluster.port),
        FORMCTL_FORMS=str(FORMS),
    )
    done = subprocess.run(
        ["bash", "-e", "-x", "-c", script],
        input="AB1234\n",  # `formctl run` continues ada's claim, copied from the local store
        capture_output=True,
        text=True,
        env=env,
        cwd=project,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "change-me" not in done.stdout  # formctl printed the DSN masked (bash -x echoes it to stderr)
    assert "Verified" in done.stdout and "Welcome back" in done.stdout
    # Where it all went: the role's own schema, in the database it owns.
    with psycopg.connect(cluster.dsn("forms")) as conn:
        rows = conn.execute(
            "SELECT subject, field FROM formctl.formctl_revisions JOIN formctl.formctl_instances ON id = instance_id"
        ).fetchall()
        (owner,) = conn.execute("SELECT tableowner FROM pg_tables WHERE tablename = 'formctl_instances'").fetchone()
    assert sorted(rows) == [("ada", "full_name"), ("ada", "staff_id")] and owner == "ada"
    listed = done.stdout.splitlines()[-1].split()
    assert listed[1:4] == ["travel-claim", "ada", "active"]
