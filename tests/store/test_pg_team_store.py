"""The PostgreSQL store as a support team meets it (docs/store-postgres.md): a database at an
older schema is never read as empty; ``store copy`` reports an instance written on both sides
with what differs and copies the rest; a database copies back into a folder a person can
read; text a store cannot hold is refused at every door, naming the instance; and the words
fit the store in use."""

from __future__ import annotations

import getpass
import json
import os
import shutil

import psycopg
import pytest

from clitools import Cli, invoke, start
from fixture_project import FORMS
from formctl import FormRegistry, FormRunner, JsonFileAdapter
from formctl.errors import InvalidArgumentError
from formctl.forms.instance import Provenance, now_iso
from formctl.store.postgres import PostgresAdapter


def runner(adapter, subject="dana", actor="host"):
    return FormRunner(adapter, registry=FormRegistry.from_toml(FORMS / "registry.toml"), subject=subject, actor=actor)


def ok(result):
    assert result.exit_code == 0, result.stdout + result.stderr
    return result


def values(store: str, iid: str) -> dict:
    return json.loads(ok(Cli(store)("export", iid, "--json")).stdout).get("values", {})


# --------------------------------------------------------------------------- an older schema


def _make_schema_1(dsn: str, store: str) -> list[str]:
    """Instances written by today's formctl, then the tables taken back to schema 1 (no ``how``
    column, no conversation tables): what a database written by the formctl of a year ago
    looks like."""
    iids = [start(store, {"full_name": f"Person {n}"}, subject=f"p{n}") for n in range(3)]
    ok(invoke("store", "copy", "--from", store, "--to", dsn))
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("ALTER TABLE formctl_revisions DROP COLUMN how")
        conn.execute("DROP TABLE formctl_conversation_turns, formctl_conversation_heads")
        conn.execute("UPDATE formctl_schema SET version = 1")
    return iids


def test_a_database_at_an_older_schema_is_refused_in_one_line_never_read_as_empty(pg_dsn, tmp_path):
    iids = _make_schema_1(pg_dsn, str(tmp_path / "local"))
    for args in (["instances"], ["inspect", iids[0]], ["export", iids[0]], ["history", iids[0]]):
        result = Cli(pg_dsn)(*args)
        assert result.exit_code == 1, (args, result.stdout)
        (line,) = result.stderr.strip().splitlines()
        assert "schema version 1, older than this formctl's 3: formctl store init upgrades it" in line
        assert "first write" not in line
        assert "No form instance" not in result.stdout + result.stderr and "no instances" not in result.stdout
    check = Cli(pg_dsn)("store", "check")
    assert check.exit_code == 1 and "schema version 1" in check.stdout and "no formctl tables" not in check.stdout
    copy = invoke("store", "copy", "--from", pg_dsn, "--to", str(tmp_path / "backup"))
    assert copy.exit_code == 1 and "Verified" not in copy.stdout and "schema version 1" in copy.stderr

    upgraded = ok(Cli(pg_dsn)("store", "init"))
    assert "schema upgraded from version 1 (schema version 3)" in upgraded.stdout
    listed = json.loads(ok(Cli(pg_dsn)("instances", "--json")).stdout)["instances"]
    assert sorted(row["instance_id"] for row in listed) == sorted(iids)
    assert values(pg_dsn, iids[1]) == {"full_name": "Person 1"}


def test_a_write_to_an_older_schema_is_refused_as_the_message_says_until_store_init_upgrades_it(pg_dsn, tmp_path):
    """Nothing but ``store init`` changes the tables: ``run`` says so in one line (not that the
    first write upgrades them), and after ``store init`` the same command works."""
    iids = _make_schema_1(pg_dsn, str(tmp_path / "local"))
    run = Cli(pg_dsn)("run", "travel-claim", "--offline", "--subject", "p2", input="AB1234\n")
    assert run.exit_code == 1
    (line,) = run.stderr.strip().splitlines()
    assert "schema version 1" in line and "formctl store init upgrades it" in line and "first write" not in line
    with psycopg.connect(pg_dsn) as conn:
        assert conn.execute("SELECT version FROM formctl_schema").fetchone()[0] == 1  # nothing was changed
    ok(Cli(pg_dsn)("store", "init"))
    ok(Cli(pg_dsn)("run", "travel-claim", "--offline", "--subject", "p2", input="AB1234\n"))
    assert values(pg_dsn, iids[2]) == {"full_name": "Person 2", "staff_id": "AB1234"}


# --------------------------------------------------------------------------- copying both ways


def test_an_instance_written_on_both_sides_is_reported_with_what_differs_and_never_blocks_the_rest(pg_dsn, tmp_path):
    local = str(tmp_path / "local")
    dana = start(local, {"full_name": "Dana Reeve"})
    sam = start(local, {"full_name": "Sam Jones"}, subject="sam")
    lee = start(local, {"full_name": "Lee Park"}, subject="lee")
    kim = start(local, {"full_name": "Kim Ode"}, subject="kim")
    ok(invoke("store", "copy", "--from", local, "--to", pg_dsn))

    # dana: one answer on each side (same version, different answers)
    ok(Cli(local)("fill", dana, "staff_id=AA1111"))
    ok(Cli(pg_dsn)("fill", dana, "staff_id=BB2222"))
    # sam: the target is ahead, but the source has an answer the target does not
    ok(Cli(local)("fill", sam, "staff_id=SJ1111"))
    ok(Cli(pg_dsn)("fill", sam, "staff_id=SJ2222"))
    ok(Cli(pg_dsn)("fill", sam, "email=sam@example.com"))
    # lee: the source is ahead, and the target has an answer the source does not
    ok(Cli(local)("fill", lee, "staff_id=LP1111"))
    ok(Cli(local)("fill", lee, "email=lee@example.com"))
    ok(Cli(pg_dsn)("fill", lee, "staff_id=LP2222"))
    # kim: only the source moved on, the ordinary case
    ok(Cli(local)("fill", kim, "staff_id=KO1234"))

    for _ in range(2):  # and the same again on a re-run: nothing else is ever held back
        result = invoke("store", "copy", "--from", local, "--to", pg_dsn)
        assert result.exit_code == 1, result.stdout
        said = result.stderr
        for iid, mine, theirs in ((dana, "AA1111", "BB2222"), (sam, "SJ1111", "SJ2222"), (lee, "LP1111", "LP2222")):
            (line,) = [x for x in said.splitlines() if iid in x]
            assert line.startswith(f"not copied (diverged): {iid}: written on both sides")
            me = getpass.getuser()  # a host command acts as the login name (no --as)
            assert f"staff_id: source has '{mine}' by {me}, target has '{theirs}' by {me}" in line
        assert "3 instance(s) not copied: written on both sides" in said and "Verified" not in result.stdout
        assert values(pg_dsn, kim)["staff_id"] == "KO1234"
        assert values(pg_dsn, dana)["staff_id"] == "BB2222" and values(pg_dsn, lee)["staff_id"] == "LP2222"
    report = json.loads(invoke("store", "copy", "--from", local, "--to", pg_dsn, "--json").stdout)
    assert sorted(report["diverged"]) == sorted([dana, sam, lee]) and report["verified"] is False
    assert report["unchanged"] == 1  # kim, copied the first time round


def test_a_database_copies_into_a_folder_a_person_can_read_verified_and_kept_up_to_date(pg_dsn, tmp_path):
    work = PostgresAdapter(pg_dsn)
    try:
        r = runner(work)
        dana = r.start("travel-claim", seed={"full_name": "Dana Reeve"}).view.instance_id
        r.fill({"staff_id": "DR1234"}, instance_id=dana)
        r.undo("staff_id", instance_id=dana)
        sam = runner(work, subject="sam").start("travel-claim", seed={"full_name": "Sam Jones"}).view.instance_id
    finally:
        work.close()
    backup = str(tmp_path / "backup")
    first = ok(invoke("store", "copy", "--from", pg_dsn, "--to", backup))
    assert "2 copied" in first.stdout and "Verified" in first.stdout
    for iid in (dana, sam):  # the same history, versions and timestamps on both sides
        there = json.loads(ok(Cli(backup)("history", iid, "--json")).stdout)
        assert there == json.loads(ok(Cli(pg_dsn)("history", iid, "--json")).stdout)
    snapshot = json.loads((tmp_path / "backup" / "instances" / f"{dana}.json").read_text(encoding="utf-8"))
    assert snapshot["instance"]["id"] == dana  # one readable JSON file per instance
    ok(Cli(backup)("store", "check"))

    again = ok(invoke("store", "copy", "--from", pg_dsn, "--to", backup, "--json"))
    assert (json.loads(again.stdout)["copied"], json.loads(again.stdout)["unchanged"]) == (0, 2)
    ok(Cli(pg_dsn)("fill", sam, "staff_id=SJ1234"))
    third = ok(invoke("store", "copy", "--from", pg_dsn, "--to", backup))
    assert "0 copied, 1 brought up to date, 1 already there" in third.stdout and "Verified" in third.stdout
    assert values(backup, sam)["staff_id"] == "SJ1234"
    ok(Cli(backup)("fill", sam, "email=sam@example.com"))  # the backup is a working store too
    assert values(backup, sam)["email"] == "sam@example.com"


def test_copying_a_store_onto_itself_is_refused(pg_dsn, tmp_path):
    same = invoke("store", "copy", "--from", pg_dsn, "--to", pg_dsn)
    assert same.exit_code == 2 and "the same store" in same.stderr
    from_nowhere = invoke("store", "copy", "--from", str(tmp_path / "missing"), "--to", pg_dsn)
    assert from_nowhere.exit_code == 1 and "nothing to copy" in from_nowhere.stderr


# --------------------------------------------------------------------------- text at every door


@pytest.mark.parametrize("kind", ["json", "postgres"])
@pytest.mark.parametrize("where", ["actor", "subject"])
def test_text_no_store_can_hold_is_refused_at_the_door_and_nothing_is_left_behind(kind, where, pg_dsn, tmp_path):
    adapter = JsonFileAdapter(str(tmp_path / "s")) if kind == "json" else PostgresAdapter(pg_dsn)
    try:
        bad = runner(adapter, **{where: "Dana\x00Reeve"})
        with pytest.raises(InvalidArgumentError, match="NUL"):
            bad.start("travel-claim", seed={"full_name": "Dana Reeve"})
        with pytest.raises(InvalidArgumentError, match="NUL"):
            adapter.create_instance("travel-claim", 1, "dana", Provenance("cli", "a\x00b", now_iso()))
        assert adapter.find_instances() == []  # no empty instance left behind
    finally:
        adapter.close()


def test_an_instance_a_store_cannot_hold_is_named_and_the_rest_are_copied(pg_dsn, tmp_path):
    local = tmp_path / "local"
    good = start(str(local), {"full_name": "Sam Jones"}, subject="sam")
    bad = start(str(local), {"full_name": "Dana Reeve"})
    # A file written by an older formctl, whose subject holds a NUL (JSON can, PostgreSQL cannot).
    path = local / "instances" / f"{bad}.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["instance"]["subject"] = "dana\x00"
    path.write_text(json.dumps(doc), encoding="utf-8")
    shutil.rmtree(local / "index.jsonl", ignore_errors=True)
    if os.path.exists(local / "index.jsonl"):
        os.unlink(local / "index.jsonl")
    result = invoke("store", "copy", "--from", str(local), "--to", pg_dsn)
    assert result.exit_code == 1
    (line,) = [x for x in result.stderr.splitlines() if bad in x]
    assert line.startswith(f"not copied: {bad}: the database cannot hold it") and "NUL" in line.upper()
    assert values(pg_dsn, good) == {"full_name": "Sam Jones"}


# --------------------------------------------------------------------------- words for the store in use


def test_the_words_fit_the_store_in_use(pg_dsn, tmp_path, monkeypatch):
    assert "local store folder" not in invoke("store", "-h").stdout
    ok(Cli(pg_dsn)("store", "init"))
    start(str(tmp_path / "local"), {"full_name": "Dana Reeve"})
    ok(invoke("store", "copy", "--from", str(tmp_path / "local"), "--to", pg_dsn))
    check = ok(Cli(pg_dsn)("store", "check"))
    assert "1 instance(s), 1 answer revision(s) read — ok" in check.stdout and "file" not in check.stdout
    assert json.loads(ok(Cli(pg_dsn)("store", "check", "--json")).stdout)["revisions_read"] == 1
    port = Cli("postgresql://ann:Summer50@localhost:54x2/forms")("instances")
    assert port.exit_code == 1 and "the port after the host is not a number" in port.stderr
    # a store that cannot be reached is not a damaged file
    monkeypatch.chdir(tmp_path)
    down = Cli("postgresql:///forms?host=/nonexistent")("run", "travel-claim", "--offline")
    assert down.exit_code == 1 and "Cannot connect to the PostgreSQL store" in down.stderr
    assert "restore the file" not in down.stderr and "damaged files" not in down.stderr
