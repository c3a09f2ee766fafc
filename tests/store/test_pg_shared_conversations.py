"""Conversations in the PostgreSQL store (docs/store-postgres.md, "Conversations"): a colleague
who resumes an instance on another machine, with an empty local folder, continues the chat so
far, and the model's next request holds the earlier turns; a conversation is reachable only
by a chat of its instance's subject."""

from __future__ import annotations

import json

import psycopg
import pytest

from clitools import formctl
from fake_anthropic import FakeAnthropic, text
from fixture_project import FORMS
from formctl.errors import StoreError
from formctl.store.postgres import PostgresAdapter


def person_turns(body: dict) -> list[str]:
    return [
        block["text"]
        for message in body["messages"]
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "text"
    ] + [m["content"] for m in body["messages"] if m["role"] == "user" and isinstance(m["content"], str)]


@pytest.mark.e2e
def test_a_colleague_with_an_empty_folder_resumes_the_conversation_and_the_model_sees_the_earlier_turns(
    cli, pg_dsn, tmp_path, monkeypatch
):
    """The chat and its resumption are two processes in two folders (nothing carried over in
    memory); the reads between them run in process."""
    env = {"FORMCTL_STORE": pg_dsn, "FORMCTL_FORMS": str(FORMS)}
    first_machine, second_machine = tmp_path / "ann", tmp_path / "ben"
    first_machine.mkdir()
    second_machine.mkdir()
    begun = formctl(
        "run",
        "travel-claim",
        "--offline",
        "--subject",
        "dana",
        input="Dana Reeve\nAB1234\n",
        env=env,
        cwd=first_machine,
    )
    assert begun.returncode == 0, begun.stderr
    monkeypatch.chdir(first_machine)
    db = cli.at(store=pg_dsn)
    (row,) = db.json("instances")["instances"]
    iid = row["instance_id"]
    # Which turn said each answer (its provenance) names a turn of the conversation that is kept.
    why = db.json("why", iid, "staff_id")

    with FakeAnthropic() as api:
        api.reply(text("Welcome back, Dana. What is your work email?"))
        resumed = formctl(
            "resume",
            iid,
            env={**env, "ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": api.url},
            cwd=second_machine,
            input="dana@example.com\n",
        )
        assert resumed.returncode == 0, resumed.stderr
        assert api.unexpected == []
        (request,) = api.bodies
    said = person_turns(request)
    assert any("Dana Reeve" in t for t in said) and any("AB1234" in t for t in said)
    assert "dana@example.com" in " ".join(said[-2:])  # the turn typed on the second machine, last (tier 0 after it)
    assert any(m["role"] == "assistant" for m in request["messages"][:-1])  # the model's earlier turns too
    assert "Welcome back, Dana." in resumed.stdout
    assert not (first_machine / ".formctl" / "conversations").exists()
    assert not (second_machine / ".formctl" / "conversations").exists()
    with psycopg.connect(pg_dsn) as conn:
        rows = conn.execute(
            "SELECT chat, messages FROM formctl_conversation_turns WHERE instance_id = %s ORDER BY pos", (iid,)
        ).fetchall()
    assert len({chat for chat, _ in rows}) == 2  # each machine's chat wrote exchanges of its own
    kept = [m for _, messages in rows for m in json.loads(messages)]
    assert any("Welcome back, Dana." in json.dumps(m) for m in kept)  # the second machine's turn saved too
    turn = json.dumps(why)
    assert "AB1234" in turn and '"turn"' in turn


def test_a_conversation_is_reachable_only_by_a_chat_of_its_instances_subject(pg_adapter):
    from formctl.forms.instance import Provenance, now_iso

    instance = pg_adapter.create_instance("travel-claim", 1, "dana", Provenance("cli", "host", now_iso()))
    danas = pg_adapter.conversation_store("dana")
    bobs = pg_adapter.conversation_store("bob")
    assert danas.load(instance.id) == []  # none saved yet
    messages = [{"role": "user", "content": [{"type": "text", "text": "Dana Reeve"}]}]
    danas.save(instance.id, messages, seen={"version": 1})
    assert danas.load(instance.id) == messages and danas.seen(instance.id) == {"version": 1}
    assert bobs.load(instance.id) == [] and bobs.seen(instance.id) is None  # confirms nothing
    with pytest.raises(StoreError, match="not an instance of 'bob'"):
        bobs.save(instance.id, [{"role": "user", "content": "mine now"}])
    with pytest.raises(StoreError, match="not an instance of 'dana'"):
        danas.save("form_mx3tplc2_9jz5s0", messages)  # no such instance
    assert PostgresAdapter(pg_adapter.dsn).conversation_store("dana").load(instance.id) == messages
    bobs.delete(instance.id)
    assert danas.load(instance.id) == messages


def test_a_damaged_conversation_is_set_aside_and_the_chat_starts_afresh(pg_adapter, pg_dsn):
    from formctl.forms.instance import Provenance, now_iso

    instance = pg_adapter.create_instance("travel-claim", 1, "dana", Provenance("cli", "host", now_iso()))
    store = pg_adapter.conversation_store("dana")
    store.save(instance.id, [{"role": "user", "content": "hello"}])
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("UPDATE formctl_conversation_turns SET messages = '[{}]'")
    messages, note = store.load_or_set_aside(instance.id)
    assert messages == [] and "formctl_conversations_aside" in note
    with psycopg.connect(pg_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM formctl_conversations_aside").fetchone()[0] == 1
    assert store.load_or_set_aside(instance.id) == ([], None)


def test_a_conversation_saved_whole_by_an_earlier_formctl_is_the_first_part_and_turns_count_on_after_it(cli, pg_dsn):
    """A store of schema 2 (conversations written whole, one row each) upgraded by store init:
    the old document is read first, and the turn a resumed chat gives names its own words."""
    db = cli.at(store=pg_dsn)
    db.ok("run", "travel-claim", "--offline", "--subject", "dana", input="Dana Reeve\n")
    (row,) = db.json("instances")["instances"]
    iid = row["instance_id"]
    adapter = PostgresAdapter(pg_dsn)
    try:
        before = adapter.conversation_store("dana").load(iid)
    finally:
        adapter.close()
    document = json.dumps({"format": 1, "instance_id": iid, "saved_at": "2026-01-01T00:00:00Z", "messages": before})
    with psycopg.connect(pg_dsn, autocommit=True) as conn:  # the tables as schema 2 left them
        conn.execute("DROP TABLE formctl_conversation_turns, formctl_conversation_heads")
        conn.execute("UPDATE formctl_schema SET version = 2")
        conn.execute(
            "INSERT INTO formctl_conversations VALUES (%s, 'dana', '2026-01-01T00:00:00Z', %s)", (iid, document)
        )
    assert "schema upgraded from version 2" in db.ok("store", "init").stdout
    db.ok("resume", iid, "--offline", input="AB1234\n")
    adapter = PostgresAdapter(pg_dsn)
    try:
        conversation = adapter.conversation_store("dana").conversation(iid)
    finally:
        adapter.close()
    assert conversation.parts[0].pos == 0 and conversation.parts[0].messages == before
    said = {n: words for part in conversation.parts for n, words in part.words or []}
    why = db.json("why", iid, "staff_id")["provenance"]
    assert said[why["turn"]] == "AB1234" and why["turn"] == 2  # "Dana Reeve" was turn 1, in the old document
