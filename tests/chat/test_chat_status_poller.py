"""The status bar's reads (cli/chat/poller.py) and the capabilities a chat asks of its store.

A store that announces commits (``Watchable``: PostgreSQL's LISTEN/NOTIFY) wakes the poller as
soon as its instance is written, and a commit to another instance costs it no read; any other
store is read every interval (a second, unless the host's ``ChatOptions.poll_seconds`` or
``FORMCTL_POLL_SECONDS`` says otherwise). The chat asks with ``isinstance``, never by probing
for a method.
"""

from __future__ import annotations

import threading
import time

import pytest

from fixture_project import FORMS, REGISTRY
from formctl import FormRegistry, FormRunner, InvalidArgumentError, JsonFileAdapter
from formctl.cli.chat import ChatOptions, ChatSession
from formctl.cli.chat.poller import StatusPoller
from formctl.cli.chat.terminal import TerminalChat
from formctl.forms.adapter import Interruptible, Watchable


def _poller(open_adapter, subject="dana"):
    registry = FormRegistry.from_toml(REGISTRY)
    return StatusPoller(open_adapter, lambda adapter: FormRunner(adapter, registry=registry, subject=subject))


def _start(adapter, subject) -> str:
    runner = FormRunner(adapter, registry=FormRegistry.from_toml(REGISTRY), subject=subject)
    return runner.start("travel-claim", seed={"full_name": "Dana Reeve"}).view.instance_id


def test_on_a_database_store_the_poller_wakes_for_its_instance_and_sleeps_through_anothers(pg_dsn):
    from formctl.store.postgres import PostgresAdapter

    writer = PostgresAdapter(pg_dsn)
    poller = _poller(lambda: PostgresAdapter(pg_dsn))
    stop = threading.Event()
    try:
        mine, theirs = _start(writer, "dana"), _start(writer, "sam")
        assert poller.wait_for_change(mine, 1.0, stop) is True  # the first call reads once: it has just begun listening
        poller.wait_for_change(mine, 0, stop)  # listening from here (what it hears of the starts is not the point)
        # Quiet: the server delivers announcements in commit order, so once a start made now is
        # heard (a wait that hears no write of ours), the earlier starts' own, if any come, are past.
        _start(writer, "lee")
        quiet_by = time.monotonic() + 10
        while poller.wait_for_change(mine, 2.0, stop):
            assert time.monotonic() < quiet_by, "the poller never heard a write that was not its instance's"
        FormRunner(writer, registry=FormRegistry.from_toml(REGISTRY), subject="sam").fill(
            {"staff_id": "SM1234"}, theirs
        )
        began = time.monotonic()
        assert poller.wait_for_change(mine, 5.0, stop) is False  # heard, and not ours: no read
        assert time.monotonic() - began < 4.0  # woken by the announcement, not by the timeout
        FormRunner(writer, registry=FormRegistry.from_toml(REGISTRY), subject="dana").fill({"staff_id": "AB1234"}, mine)
        assert poller.wait_for_change(mine, 5.0, stop) is True
        assert poller.stamp(mine)[1] == writer.get_instance(mine).version
    finally:
        poller.close()
        writer.close()


def test_on_a_folder_store_the_poller_reads_every_interval(tmp_path):
    store = tmp_path / "store"
    instance_id = _start(JsonFileAdapter(store), "dana")
    poller = _poller(lambda: JsonFileAdapter(store))
    stop = threading.Event()
    try:
        assert not isinstance(JsonFileAdapter(store), Watchable)
        began = time.monotonic()
        assert poller.wait_for_change(instance_id, 0.1, stop) is True
        assert poller.wait_for_change(instance_id, 0.1, stop) is True
        # Waited each interval: nothing announces a write. (A poller that did not wait returns
        # in microseconds; 0.1 s is long enough to tell.)
        assert time.monotonic() - began >= 0.18
    finally:
        poller.close()


def test_a_chat_on_a_database_store_can_cut_a_wait_for_the_server_short(pg_dsn, tmp_path):
    """Ctrl-C during a turn interrupts the store's wait for a server that is away (the chat asks
    the store whether it is ``Interruptible``); a folder store has no such wait."""
    session = ChatSession.open(
        ChatOptions(form="travel-claim", subject="dana", offline=True, store=pg_dsn, forms=str(FORMS))
    )
    try:
        assert isinstance(session.adapter, Interruptible)
        session.cancel()  # no turn is running: nothing to stop, and nothing breaks
    finally:
        session.close()
    assert not isinstance(JsonFileAdapter(tmp_path / "s"), Interruptible)


def test_the_terminal_chat_reads_a_folder_store_at_the_interval_its_host_sets(tmp_path):
    """``ChatOptions.poll_seconds`` is the status bar's interval on a store that does not announce
    writes: the poller thread (``TerminalChat._poll``) reads at it, here every 50 ms, not every
    second. The thread runs here without a prompt, as it does while a turn runs."""
    session = ChatSession.open(
        ChatOptions(
            form="travel-claim",
            subject="dana",
            offline=True,
            store=str(tmp_path / "store"),
            forms=str(FORMS),
            poll_seconds=0.05,
        )
    )
    chat = TerminalChat(session)
    reads = []
    real_poll = session.poll
    session.poll = lambda: reads.append(time.monotonic()) or real_poll()  # type: ignore[method-assign]
    poller = threading.Thread(target=chat._poll, daemon=True)
    began = time.monotonic()
    try:
        poller.start()
        while len(reads) < 4:
            assert time.monotonic() - began < 10, reads
            time.sleep(0.01)
        assert reads[-1] - began < 0.9  # four reads in well under the default second's one
    finally:
        chat._stop.set()
        poller.join(5)
        session.close()


@pytest.mark.parametrize("seconds", [0, -1, float("nan"), float("inf"), "1", True])
def test_an_interval_that_is_not_seconds_above_zero_is_refused(seconds):
    with pytest.raises(InvalidArgumentError, match="poll_seconds must be a number of seconds above 0"):
        ChatOptions(form="travel-claim", poll_seconds=seconds)


def test_formctl_run_takes_its_interval_from_the_environment_and_refuses_a_bad_one_in_one_line(cli, monkeypatch):
    from formctl.cli.chat import options

    monkeypatch.setenv("FORMCTL_POLL_SECONDS", "0.25")
    assert options.poll_seconds_from_env() == 0.25
    monkeypatch.delenv("FORMCTL_POLL_SECONDS")
    assert options.poll_seconds_from_env() == options.POLL_SECONDS == 1.0
    for bad in ("soon", "0", "-2", "nan"):
        result = cli("run", "travel-claim", "--offline", env={"FORMCTL_POLL_SECONDS": bad}, input="")
        assert result.exit_code != 0
        assert result.stderr.strip() == f"error: FORMCTL_POLL_SECONDS must be a number of seconds above 0, got '{bad}'."
