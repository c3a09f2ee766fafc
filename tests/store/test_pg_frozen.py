"""A PostgreSQL server that stops answering under a chat (docs/chat.md, "The database goes away"):
its processes frozen (SIGSTOP, as in a network partition, where the kernel still takes the
packets and nobody answers). Through the real ``formctl run``, piped:

* the chat says it is waiting for the database within a couple of seconds, never sits silent;
* the statement in flight ends at its limit (``FORMCTL_PG_STATEMENT_TIMEOUT``), not when the
  server comes back;
* the person's message is kept and sent again once the server answers, and the line typed
  meanwhile is taken for the question after it, not for the one the kept message answered.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from clitools import formctl_child
from fixture_project import FORMS
from helpers.output_lines import Lines
from helpers.piped_input import until_reading_input

pytestmark = pytest.mark.e2e  # every test here freezes a server


def _server_pids(data: str) -> list[int]:
    """The postmaster of the cluster in ``data`` and every process it started."""
    postmaster = int(Path(data, "postmaster.pid").read_text().split()[0])
    children = subprocess.run(["pgrep", "-P", str(postmaster)], capture_output=True, text=True).stdout.split()
    return [postmaster, *map(int, children)]


@contextlib.contextmanager
def frozen(server):
    pids = _server_pids(server.cluster.data)
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    thawed = []

    def thaw() -> None:
        if not thawed:
            thawed.append(True)
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)

    try:
        yield thaw
    finally:
        thaw()


def test_a_frozen_server_is_waited_for_out_loud_and_the_message_is_sent_again(private_pg, tmp_path):
    env = {
        "FORMCTL_STORE": private_pg.dsn,
        "FORMCTL_FORMS": str(FORMS),
        "FORMCTL_PG_STATEMENT_TIMEOUT": "2",
        "FORMCTL_PG_RECONNECT_PATIENCE": "5",
        "PGCONNECT_TIMEOUT": "2",
    }
    chat = formctl_child(
        "run",
        "travel-claim",
        "--offline",
        "--subject",
        "dana",
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
        cwd=tmp_path,
    )
    out = Lines(chat.stdout)
    said: list[str] = []
    try:
        said += out.until("Full name?")
        chat.stdin.write("Dana Reeve\n")
        said += out.until("Staff ID?")
        until_reading_input(chat)
        with frozen(private_pg) as thaw:
            started = time.monotonic()
            chat.stdin.write("AB1234\n")
            said += out.until("waiting for the database")
            assert time.monotonic() - started < 4, said  # said within the second or two, not silent
            said += out.until("your message is kept")
            assert time.monotonic() - started < 30, said  # the statement ended at its limit, not at the thaw
            chat.stdin.write("dana@example.org\n")  # typed while it waits: the answer to the next question
            time.sleep(1.0)
            thaw()
            said += out.until("sending your message again")
            said += out.until("Work email?")
        said += out.until("Destination?")
        chat.stdin.close()
        said += out.rest()
        assert chat.wait(timeout=60) == 0, said
    finally:
        if chat.poll() is None:
            chat.kill()
    assert not any("Traceback" in x or "psycopg" in x for x in said), said
    from formctl.store.postgres import PostgresAdapter

    adapter = PostgresAdapter(private_pg.dsn)
    try:
        (instance,) = adapter.find_instances()
        values = adapter.get_instance(instance.id).in_force_values()
    finally:
        adapter.close()
    assert (values["staff_id"], values["email"]) == ("AB1234", "dana@example.org"), said
