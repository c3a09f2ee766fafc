"""The status bar's reads (cli/chat/poller.py) and the capabilities a chat asks of its store.

A store that announces commits (``Watchable``: PostgreSQL's LISTEN/NOTIFY) wakes the poller as
soon as its instance is written, and a commit to another instance costs it no read; any other
store is read once a second. The chat asks with ``isinstance``, never by probing for a method.
"""

from __future__ import annotations

import threading
import time

from fixture_project import FORMS, REGISTRY
from formctl import FormRegistry, FormRunner, JsonFileAdapter
from formctl.cli.chat import ChatOptions, ChatSession
from formctl.cli.chat.poller import StatusPoller
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
        while poller.wait_for_change(mine, 0.5, stop):  # the starts' own announcements, if they come late
            pass
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
        assert poller.wait_for_change(instance_id, 0.2, stop) is True
        assert poller.wait_for_change(instance_id, 0.2, stop) is True
        assert time.monotonic() - began >= 0.35  # waited each interval: nothing announces a write
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
