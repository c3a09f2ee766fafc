"""``formctl store copy`` copies everything a team stores (docs/store-postgres.md, "Copying"):
the instances, the chats' conversations (whose turns the answers' provenance points into) and
the goal programs (every version of their history, and their hooks' receipts), a folder into
PostgreSQL and back; verified, idempotent on a re-run, a record written on both sides reported
(never dropped silently, never blocking the rest, exit 1), a conversation kept beside its
instance of the same subject only. Against a real PostgreSQL (tests/pg_server.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clitools import Cli, invoke
from fixture_project import FORMS
from formctl.store.conversations import ConversationStore
from formctl.store.postgres import PostgresAdapter

SUBJECT = "firm:1/matter:2"


def ok(result):
    assert result.exit_code == 0, result.stdout + result.stderr
    return result


def copy(source: str, target: str):
    result = invoke("store", "copy", "--from", source, "--to", target, "--json")
    return result, json.loads(result.stdout)


def chat(store: str, subject: str, answers: str) -> str:
    """A chat through ``formctl run`` (the offline model), which saves its conversation; the id."""
    ok(Cli(store)("run", "travel-claim", "--offline", "--subject", subject, input=answers))
    rows = json.loads(ok(Cli(store)("instances", "--json", "--subject", subject)).stdout)["instances"]
    return str(rows[0]["instance_id"])


def program(store: str, *args: str) -> str:
    return ok(Cli(store)("program", *args)).stdout


def history(store: str, subject: str = SUBJECT) -> list:
    return list(json.loads(program(store, "history", "--subject", subject, "--json"))["history"])


def person_said(document: dict) -> dict[int, str]:
    """The person's words by turn number, as the conversation records them: what a provenance
    ``turn`` names."""
    return {turn: words for exchange in document["exchanges"] for turn, words in exchange["words"]}


def pg_document(dsn: str, iid: str) -> dict | None:
    adapter = PostgresAdapter(dsn)
    try:
        documents, _ = adapter.conversation_documents()
        return documents.get(iid)
    finally:
        adapter.close()


@pytest.fixture(autouse=True)
def forms(monkeypatch):
    monkeypatch.setenv("FORMCTL_FORMS", str(FORMS))


@pytest.fixture
def team(tmp_path) -> tuple[str, str]:
    """A folder store a team has used: a chat (its conversation) and a goal program with a
    history of two versions and hooks that ran."""
    local = str(tmp_path / "local")
    iid = chat(local, "dana", "Dana Reeve\nAB1234\n")
    program(local, "start", "client-intake", "--subject", SUBJECT)
    program(local, "update", "identity", "--subject", SUBJECT, "--completed", "client")
    return local, iid


def test_a_folder_copies_into_postgresql_with_its_conversations_and_goal_programs(team, pg_dsn, tmp_path):
    local, iid = team
    result, report = copy(local, pg_dsn)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "Verified" in invoke("store", "copy", "--from", local, "--to", pg_dsn).stdout
    assert report["conversations"]["copied"] == 1 and report["goal_programs"]["copied"] == 1

    # The conversation arrived whole, beside its instance, and the answers' provenance turns
    # point at the same person's message there as in the folder.
    local_document = ConversationStore(local).whole(iid)
    assert pg_document(pg_dsn, iid) == local_document
    why = json.loads(ok(Cli(pg_dsn)("why", iid, "staff_id", "--json")).stdout)
    assert why["provenance"]["quote"] == "AB1234"
    assert person_said(pg_document(pg_dsn, iid))[why["provenance"]["turn"]] == "AB1234"

    # Isolation: the conversation is its subject's alone in the database too.
    adapter = PostgresAdapter(pg_dsn)
    try:
        assert adapter.conversation_store("dana").load(iid) == ConversationStore(local).load(iid)
        assert adapter.conversation_store("someone-else").load(iid) == []
    finally:
        adapter.close()

    # The goal program, every version of it, and where its hooks stand.
    assert history(pg_dsn) == history(local)
    assert len(history(pg_dsn)) == 2
    assert program(pg_dsn, "show", "--subject", SUBJECT, "--json") == program(
        local, "show", "--subject", SUBJECT, "--json"
    )

    # A re-run copies nothing and is verified again.
    again, report = copy(local, pg_dsn)
    assert again.exit_code == 0, again.stderr
    assert report["conversations"]["unchanged"] == 1 and report["conversations"]["copied"] == 0
    assert report["goal_programs"]["unchanged"] == 1 and report["goal_programs"]["copied"] == 0

    # And back out into a folder a person can read: the same conversation and program.
    backup = str(tmp_path / "backup")
    back, report = copy(pg_dsn, backup)
    assert back.exit_code == 0, back.stdout + back.stderr
    assert report["verified"] and report["conversations"]["copied"] == 1 and report["goal_programs"]["copied"] == 1
    assert ConversationStore(backup).whole(iid) == local_document
    assert history(backup) == history(local)
    assert copy(pg_dsn, backup)[0].exit_code == 0
    assert ok(Cli(backup)("store", "check")).exit_code == 0


def test_later_turns_and_versions_are_brought_up_to_date_on_a_second_copy(team, pg_dsn):
    local, iid = team
    ok(copy(local, pg_dsn)[0])
    store = ConversationStore(local)
    messages = store.load(iid)
    store.save(iid, [{"role": "user", "content": "one more thing"}])  # a chat's next exchange
    assert store.load(iid)[: len(messages)] == messages
    program(local, "update", "intake", "--subject", SUBJECT, "--deferred", "form", "--reason", "later")

    result, report = copy(local, pg_dsn)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert report["conversations"]["updated"] == 1 and report["goal_programs"]["updated"] == 1
    assert pg_document(pg_dsn, iid) == store.whole(iid)
    assert history(pg_dsn) == history(local) and len(history(pg_dsn)) == 3


def test_records_written_on_both_sides_are_reported_and_the_rest_is_still_copied(team, pg_dsn, tmp_path):
    local, iid = team
    ok(copy(local, pg_dsn)[0])
    # Both sides go on differently: the chat, and the goal program.
    store = ConversationStore(local)
    store.save(iid, [{"role": "user", "content": "said here"}])
    adapter = PostgresAdapter(pg_dsn)
    try:
        adapter.conversation_store("dana").save(iid, [{"role": "user", "content": "said there"}])
    finally:
        adapter.close()
    program(local, "update", "intake", "--subject", SUBJECT, "--deferred", "form", "--reason", "here")
    program(pg_dsn, "update", "intake", "--subject", SUBJECT, "--declined", "form", "--reason", "there")
    # And new records on the source side, which must arrive all the same.
    other = chat(local, "erin", "Erin Vale\nCD5678\n")
    program(local, "start", "client-intake", "--subject", "firm:1/matter:3")

    result, report = copy(local, pg_dsn)
    assert result.exit_code == 1
    assert list(report["conversations"]["diverged"]) == [iid]
    assert "1 in the target" not in report["conversations"]["diverged"][iid]  # says what differs
    assert list(report["goal_programs"]["diverged"]) == [f"{SUBJECT}/client-intake"]
    assert "version 3" in report["goal_programs"]["diverged"][f"{SUBJECT}/client-intake"]
    assert report["conversations"]["copied"] == 1 and report["goal_programs"]["copied"] == 1
    assert pg_document(pg_dsn, other) == ConversationStore(local).whole(other)
    assert len(history(pg_dsn, "firm:1/matter:3")) == 1
    # Neither side's version was written over.
    assert "said there" in json.dumps(pg_document(pg_dsn, iid))
    assert "there" in json.dumps(history(pg_dsn)[-1])

    plain = invoke("store", "copy", "--from", local, "--to", pg_dsn)
    assert plain.exit_code == 1
    assert f"not copied (diverged): conversation of {iid}" in plain.stderr
    assert f"not copied (diverged): goal program {SUBJECT}/client-intake" in plain.stderr
    assert "Verified" not in plain.stdout


def test_a_conversation_goes_only_beside_its_instance_of_the_same_subject(team, pg_dsn, tmp_path):
    local, iid = team
    stray = "form_mx0000aa_aaaaaa"  # a conversation file whose instance the folder does not hold
    ConversationStore(local).save(stray, [{"role": "user", "content": "hello"}])
    result, report = copy(local, pg_dsn)
    assert result.exit_code == 1
    assert list(report["conversations"]["refused"]) == [stray]
    assert report["conversations"]["copied"] == 1
    assert pg_document(pg_dsn, stray) is None
    plain = invoke("store", "copy", "--from", local, "--to", pg_dsn)
    assert f"not copied: conversation of {stray}: its instance is not in the source" in plain.stderr


def test_the_target_refuses_a_conversation_whose_instance_there_is_another_subjects(pg_dsn):
    from formctl.store.copy import conversation_outcome

    adapter = PostgresAdapter(pg_dsn)
    try:
        runner_adapter = adapter
        from clitools import FormRegistry, FormRunner

        runner = FormRunner(runner_adapter, registry=FormRegistry.from_toml(FORMS / "registry.toml"), subject="dana")
        iid = runner.start("travel-claim").view.instance_id
        document = {"format": 1, "instance_id": iid, "saved_at": "2026-01-01T00:00:00.000Z", "messages": []}
        assert adapter.import_conversations([(iid, "mallory", document)]) == [
            ("refused", "its instance in the target is another subject's")
        ]
        assert adapter.conversation_store("mallory").load(iid) == []
        assert adapter.import_conversations([(iid, "dana", document)]) == [conversation_outcome(None, document)]
    finally:
        adapter.close()


def test_folder_conversations_go_only_beside_an_instance_of_the_same_subject(tmp_path):
    from clitools import start
    from formctl import JsonFileAdapter

    store = str(tmp_path / "s")
    iid = start(store, subject="dana")
    document = {"format": 1, "instance_id": iid, "saved_at": "2026-01-01T00:00:00.000Z", "messages": []}
    adapter = JsonFileAdapter(store)
    assert adapter.import_conversations([(iid, "mallory", document)]) == [
        ("refused", "its instance in the target is another subject's")
    ]
    assert not Path(store, "conversations", f"{iid}.jsonl").exists()


def test_a_read_only_user_copies_a_database_out_whole_and_the_copy_writes_nothing_there(team, pg_dsn, tmp_path):
    import psycopg
    from psycopg.conninfo import make_conninfo

    local, iid = team
    bare = str(tmp_path / "forms-only")
    chat(bare, "dana", "Dana Reeve\nAB1234\n")
    ok(copy(local, pg_dsn)[0])
    schema = pg_dsn.rsplit("search_path%3D", 1)[1]
    reader = f"reader_{schema}"
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f'CREATE ROLE "{reader}" LOGIN')
        conn.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO "{reader}"')
        conn.execute(f'GRANT SELECT ON ALL TABLES IN SCHEMA "{schema}" TO "{reader}"')
    try:
        as_reader = make_conninfo(pg_dsn, user=reader)
        result, report = copy(as_reader, str(tmp_path / "backup"))
        assert result.exit_code == 0, result.stdout + result.stderr
        assert report["conversations"]["copied"] == 1 and report["goal_programs"]["copied"] == 1
        assert ConversationStore(str(tmp_path / "backup")).whole(iid) == ConversationStore(local).whole(iid)
    finally:
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute(f'DROP OWNED BY "{reader}"')
            conn.execute(f'DROP ROLE "{reader}"')


def test_copying_out_of_a_database_where_no_program_was_started_changes_nothing_there(pg_dsn, tmp_path):
    import psycopg

    local = str(tmp_path / "local")
    chat(local, "dana", "Dana Reeve\nAB1234\n")
    ok(copy(local, pg_dsn)[0])
    # This test's own schema only: other tests, running at the same time, make and drop theirs.
    ours = (
        "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = current_schema() AND c.relname LIKE 'formctl%'"
    )
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        before = conn.execute(ours).fetchone()[0]
    assert before > 0  # the store's tables are there to count
    ok(copy(pg_dsn, str(tmp_path / "backup"))[0])
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        assert conn.execute(ours).fetchone()[0] == before
        assert conn.execute("SELECT count(*) FROM formctl_goal_heads").fetchone()[0] == 0
