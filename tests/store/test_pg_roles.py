"""A team's store set up the way the README says a DBA sets it up ("A team's roles: least
privilege"): its SQL block run as written, then every command a support person runs as a
staff role with DML only, and the reading ones as the reporting role. Nothing may print
"permission denied", and nothing of anybody's is lost."""

from __future__ import annotations

import json
import re
from pathlib import Path

import psycopg
import pytest

from clitools import Cli, invoke
from fixture_project import FORMS
from tool_fuzz import AWAITING as CLAIM_OVER_CAP

README = Path(__file__).resolve().parents[2] / "README.md"

# The rest of a claim over the 750 cap, after the chat's answers: it waits for Finance's approval.
AWAITING = {k: v for k, v in CLAIM_OVER_CAP.items() if k not in ("full_name", "staff_id", "email")}


def readme_sql() -> str:
    """The SQL block of the README's "A team's roles" section, exactly as written there."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("### A team's roles") :]
    return section[section.index("```sql\n") + len("```sql\n") : section.index("```", section.index("```sql\n") + 6)]


def run_as_psql(sql: str, dsn_for) -> None:
    """Each statement as psql runs it (autocommit), ``\\connect DB`` switching database."""
    conn = psycopg.connect(dsn_for("postgres"), autocommit=True)
    try:
        statement = ""
        for line in sql.splitlines():
            if line.startswith("\\connect "):
                conn.close()
                conn = psycopg.connect(dsn_for(line.split()[1]), autocommit=True)
                continue
            statement += line + "\n"
            if statement.rstrip().endswith(";"):
                conn.execute(statement)
                statement = ""
        assert not statement.strip(), f"an unfinished statement in the README: {statement!r}"
    finally:
        conn.close()


ROLES = ("ann", "ben", "rita", "forms_staff", "forms_reporting", "forms_owner")


def _drop_team(cluster) -> None:
    """The README's database and roles gone, whatever an earlier test on this cluster left."""
    with psycopg.connect(cluster.dsn("postgres"), autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS forms WITH (FORCE)")
        for role in ROLES:
            conn.execute(f"DROP ROLE IF EXISTS {role}")


@pytest.fixture
def team(private_pg):
    cluster = private_pg.cluster
    sql = readme_sql()
    passwords = dict(re.findall(r"CREATE ROLE (\w+) LOGIN PASSWORD '([^']+)'", sql))
    # The cluster is lent to this process's tests one after another: a set-up that failed half-way
    # in an earlier test must not fail this one with "database forms already exists".
    _drop_team(cluster)
    run_as_psql(sql, lambda db: cluster.dsn(db))
    with psycopg.connect(cluster.dsn("postgres")) as conn:  # every login role's password is SCRAM
        stored = conn.execute("SELECT rolname, rolpassword FROM pg_authid WHERE rolname = ANY(%s)", (list(passwords),))
        assert all(secret.startswith("SCRAM-SHA-256$") for _, secret in stored.fetchall())

    def dsn(role: str) -> str:
        return f"postgresql://{role}:{passwords[role]}@127.0.0.1:{cluster.port}/forms?options=-csearch_path%3Dformctl"

    yield dsn
    _drop_team(cluster)


def ok(result, *args):
    said = result.stdout + result.stderr
    assert result.exit_code == 0, (args, said)
    assert "permission denied" not in said.lower() and "could not save" not in said.lower(), (args, said)
    return result


@pytest.fixture(autouse=True)
def forms(monkeypatch):
    monkeypatch.setenv("FORMCTL_FORMS", str(FORMS))


@pytest.mark.e2e
def test_the_readme_roles_run_every_support_command_and_nothing_says_permission_denied(team, tmp_path, monkeypatch):
    owner, ann, ben, rita = (Cli(team(role)) for role in ("forms_owner", "ann", "ben", "rita"))
    # store init: staff cannot create the tables and are told whom to ask; the owner can.
    refused = ann("store", "init")
    assert refused.exit_code == 1 and "ask the owner of the schema to run formctl store init" in refused.stderr
    assert "permission denied" not in refused.stderr
    assert "tables created" in ok(owner("store", "init"), "init").stdout
    assert "already set up" in ok(ann("store", "init"), "init again").stdout  # changes nothing

    # As staff: a chat on one machine, a colleague resuming it on another.
    for machine in ("ann", "ben"):
        (tmp_path / machine).mkdir()
    monkeypatch.chdir(tmp_path / "ann")
    ok(ann("run", "travel-claim", "--offline", "--subject", "dana", input="Dana Reeve\nAB1234\n"), "run")
    (row,) = json.loads(ok(ann("instances", "--json")).stdout)["instances"]
    iid = row["instance_id"]
    monkeypatch.chdir(tmp_path / "ben")
    resumed = ok(ben("resume", iid, "--offline", input="dana@example.com\n"), "resume")
    assert "saved Work email" in resumed.stdout
    ok(ben("fill", iid, *(f"{k}={v}" for k, v in AWAITING.items())), "fill")
    assert json.loads(ok(ben("export", iid, "--json")).stdout)["status"] == "awaiting"
    ok(ann("resolve", iid, "--as", "sam"), "resolve")
    assert json.loads(ok(ann("export", iid, "--json")).stdout)["status"] == "ready"
    ok(ann("run", "travel-claim", "--offline", "--subject", "lee", input="Lee Park\nLP1234\nlee@example.com\n"))
    (second,) = [
        r["instance_id"]
        for r in json.loads(ok(ann("instances", "--json")).stdout)["instances"]
        if r["instance_id"] != iid
    ]
    ok(ann("fill", second, *(f"{k}={v}" for k, v in AWAITING.items())), "fill")
    ok(ann("withdraw", second, "--reason", "wrong dates"), "withdraw")
    # a goal program: started and updated on a store fresh from store init
    subject = "firm:1/matter:2"
    ok(ben("program", "start", "client-intake", "--subject", subject), "program start")
    ok(ben("program", "update", "identity", "--subject", subject, "--completed", "client"), "program update")

    # Both chats' turns are in the conversation everyone reads back.
    with psycopg.connect(team("rita")) as conn:
        chats = conn.execute(
            "SELECT count(DISTINCT chat) FROM formctl_conversation_turns WHERE instance_id = %s", (iid,)
        )
        assert chats.fetchone()[0] == 2

    # As reporting: list, export, and a backup out of the database.
    listed = json.loads(ok(rita("instances", "--json"), "instances").stdout)["instances"]
    assert {r["instance_id"] for r in listed} == {iid, second}
    assert json.loads(ok(rita("export", iid, "--json"), "export").stdout)["values"]["email"] == "dana@example.com"
    backup = tmp_path / "backup"
    copied = ok(invoke("store", "copy", "--from", team("rita"), "--to", str(backup)), "copy out")
    assert "Verified" in copied.stdout
    assert json.loads(ok(Cli(str(backup))("program", "history", "--subject", subject, "--json")).stdout)["history"]
    refused = rita("fill", iid, "purpose=Training")  # reporting reads only, and is told so in one line
    assert refused.exit_code == 1 and len(refused.stderr.strip().splitlines()) == 1
    assert "read-only for this user" in refused.stderr and "nothing was saved" in refused.stderr
    assert "permission denied" not in refused.stderr
    assert Path(backup, "conversations", f"{iid}.jsonl").exists()
