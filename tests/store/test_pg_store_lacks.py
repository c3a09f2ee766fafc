"""A PostgreSQL store never reads as empty because of what it lacks (docs/store-postgres.md,
"Schema versions"): a missing or emptied version record, a search_path naming no schema, a
database nobody ran ``store init`` on. Each is one line saying what to run; ``store check``
reports it; nothing is written until it is run."""

from __future__ import annotations

import json

import psycopg
import pytest

from clitools import Cli, invoke, start
from pg_server import with_options


@pytest.fixture
def store_with_claims(pg_dsn, tmp_path):
    local = str(tmp_path / "local")
    iids = [start(local, {"full_name": f"Person {n}"}, subject=f"p{n}") for n in range(2)]
    assert invoke("store", "copy", "--from", local, "--to", pg_dsn).exit_code == 0
    return pg_dsn, iids


def one_line(result) -> str:
    assert result.exit_code == 1, result.stdout
    (line,) = result.stderr.strip().splitlines()
    return line


@pytest.mark.parametrize("lose", ["DROP TABLE formctl_schema", "DELETE FROM formctl_schema"])
def test_a_store_without_its_version_record_is_refused_in_one_line_and_store_init_records_it(store_with_claims, lose):
    dsn, iids = store_with_claims
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(lose)
    db = Cli(dsn)
    for args in (["instances"], ["export", iids[0]], ["fill", iids[0], "staff_id=AB1234"]):
        line = one_line(db(*args))
        assert "no record of their schema version" in line and "Run formctl store init" in line, args
    assert "no instances" not in db("instances").stdout
    check = db("store", "check")
    assert check.exit_code == 1 and "no record of their schema version" in check.stdout
    assert "tables" in db("store", "init").stdout  # reads the version off the tables and records it
    with psycopg.connect(dsn) as conn:
        assert conn.execute("SELECT version FROM formctl_schema").fetchall() == [(3,)]
    listed = json.loads(db("instances", "--json").stdout)["instances"]
    assert sorted(r["instance_id"] for r in listed) == sorted(iids)  # every answer kept


def test_a_search_path_naming_a_missing_schema_is_named(pg_server):
    dsn = with_options(pg_server.dsn, "-csearch_path=no_such_schema")
    for args in (["instances"], ["store", "init"]):
        line = one_line(Cli(dsn)(*args))
        assert "no_such_schema" in line and "names no schema that exists" in line, args
        assert "no schema has been selected" not in line


def test_a_database_nobody_set_up_says_to_run_store_init_and_creates_nothing(pg_bare_dsn):
    db = Cli(pg_bare_dsn)
    line = one_line(db("run", "travel-claim", "--offline", input="Dana Reeve\n"))
    assert "has no formctl tables" in line and "run formctl store init" in line
    check = db("store", "check")
    assert check.exit_code == 1 and "has no formctl tables" in check.stdout
    with psycopg.connect(pg_bare_dsn) as conn:
        assert conn.execute("SELECT to_regclass('formctl_instances')").fetchone()[0] is None


def test_a_service_files_host_and_port_are_named_when_it_cannot_connect(tmp_path, monkeypatch):
    services = tmp_path / "pg_service.conf"
    services.write_text("[teamdb]\nhost=127.0.0.1\nport=1\ndbname=forms\n")
    monkeypatch.setenv("PGSERVICEFILE", str(services))
    line = one_line(Cli("service=teamdb")("instances"))
    assert "at 127.0.0.1:1:" in line and "local PostgreSQL socket" not in line


def test_copying_a_folder_with_no_instances_verifies(pg_dsn, tmp_path):
    folder = tmp_path / ".formctl"  # what a terminal chat on PostgreSQL leaves in the folder
    folder.mkdir()
    (folder / "lock").write_text("")
    (folder / "input_history").write_text("\n# 2026-12-06\n+Dana Reeve\n")
    result = invoke("store", "copy", "--from", str(folder), "--to", pg_dsn)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "Verified" in result.stdout and "NOT verified" not in result.stderr
