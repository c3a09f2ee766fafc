"""Two chats on one instance at once, in two processes (docs/chat.md, "Shared conversations"):
on PostgreSQL and in a folder, every turn of both is in the stored conversation, each turn
number is given once, and every answer's ``why`` turn names the words that gave it."""

from __future__ import annotations

import subprocess
import time

import pytest

from clitools import Cli, formctl_child
from fixture_project import FORMS
from formctl import FormRegistry, FormRunner
from formctl.store.conversations import ConversationStore
from formctl.store.jsonfile import JsonFileAdapter
from formctl.store.postgres import PostgresAdapter

# The person's words, sent by the two chats in turn. A chat whose question was answered by the
# other meanwhile says so and does not use the line (the form changed since it asked), or asks
# its question again: the test sends the line again, as a person would, and every turn is kept.
LINES = [("a", "Dana Reeve"), ("b", "AB1234"), ("a", "dana@example.com"), ("b", "Leeds")]
FIELDS = {"Dana Reeve": "full_name", "AB1234": "staff_id", "dana@example.com": "email", "Leeds": "destination"}


def conversation(store: str, iid: str):
    if store.startswith("postgresql"):
        adapter = PostgresAdapter(store)
        try:
            return adapter.conversation_store("dana").conversation(iid)
        finally:
            adapter.close()
    return ConversationStore(store).conversation(iid)


def words(store: str, iid: str) -> dict[int, str]:
    return {n: text for part in conversation(store, iid).parts for n, text in part.words or []}


def wait_for(predicate, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


@pytest.fixture(params=["folder", "postgres"])
def store(request, tmp_path) -> str:
    if request.param == "folder":
        return str(tmp_path / "store")
    return request.getfixturevalue("pg_dsn")


def new_instance(store: str) -> str:
    adapter = PostgresAdapter(store) if store.startswith("postgresql") else JsonFileAdapter(store)
    try:
        runner = FormRunner(adapter, registry=FormRegistry.from_toml(FORMS / "registry.toml"), subject="dana")
        return runner.start("travel-claim").view.instance_id
    finally:
        adapter.close()


@pytest.mark.e2e
def test_two_processes_chatting_on_one_instance_keep_every_turn_and_every_why_names_its_words(store, tmp_path):
    iid = new_instance(store)
    env = {"FORMCTL_STORE": store, "FORMCTL_FORMS": str(FORMS)}
    chats = {
        name: formctl_child(
            "resume",
            iid,
            "--offline",
            env=env,
            cwd=tmp_path,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in "ab"
    }
    try:
        sent: list[str] = []
        for name, line in LINES:
            for _ in range(3):
                chats[name].stdin.write(line + "\n")
                chats[name].stdin.flush()
                sent.append(line)
                # the next line goes in once this one's turn is saved, so the two chats interleave
                wait_for(lambda: len(words(store, iid)) >= len(sent), f"turn {len(sent)} ({line!r}) saved")
                if FIELDS[line] in values(store, iid):
                    break
        outputs = {}
        for name, child in chats.items():
            outputs[name] = child.communicate(timeout=60)
            assert child.returncode == 0, outputs[name]
    finally:
        for child in chats.values():
            if child.poll() is None:
                child.kill()
                child.communicate()

    said = words(store, iid)
    assert [said[n] for n in sorted(said)] == sent  # every turn of both chats, in order
    assert sorted(said) == list(range(1, len(sent) + 1))  # each number given once
    chats_that_wrote = {part.chat for part in conversation(store, iid).parts}
    assert len(chats_that_wrote) == 2
    messages = repr(conversation(store, iid).messages)
    assert all(line in messages for _, line in LINES)  # resuming shows every chat's turns
    assert values(store, iid) == {field: line for line, field in FIELDS.items()}
    cli = Cli(store)
    for line, field in FIELDS.items():
        why = cli.json("why", iid, field)["provenance"]
        assert why["turn"] in said and line in said[why["turn"]], (field, why, said)


def values(store: str, iid: str) -> dict:
    return Cli(store).json("export", iid).get("values", {})
