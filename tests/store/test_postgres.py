"""PostgresAdapter's own promises, beyond the contract it shares with the other adapters
(those run in test_jsonfile.py, test_store_concurrency.py and test_store_crash.py).

A password never reaches a message; an unreachable server, a wrong password and a restart
are one clear line naming the server; the answer log cannot be rewritten even by hand; the
schema is versioned; damage is reported, not papered over; and a write wakes a watcher.
"""

from __future__ import annotations

import time

import psycopg
import pytest

from formctl.errors import ConflictError, StoreError
from formctl.forms.instance import Commit, DispatchState, Entry, EntryCommit, Provenance, now_iso
from formctl.store import _pgschema, postgres
from formctl.store._pgconn import describe_server, is_dsn, mask_dsn
from formctl.store.postgres import PostgresAdapter


def prov() -> Provenance:
    return Provenance("test", "tester", now_iso())


def fill(adapter, instance, field, value):
    seq = instance.revision_seq + 1
    commit = Commit(entries={field: EntryCommit((Entry(seq, value, prov()),))}, revision_seq=seq)
    return adapter.commit_instance(instance.id, commit, if_version=instance.version, provenance=prov())


def sql(dsn: str, statement: str, params=()):
    with psycopg.connect(dsn, autocommit=True) as conn:
        cur = conn.execute(statement, params)
        return cur.fetchall() if cur.description else None


# --------------------------------------------------------------------------- connection strings


@pytest.mark.parametrize(
    "dsn, shown",
    [
        ("postgresql://ann:s3cr%40t@db.example.com:6432/forms", "postgresql://ann:***@db.example.com:6432/forms"),
        (
            "postgres://ann@db/forms?password=s3cret&sslmode=require",
            "postgres://ann@db/forms?password=***&sslmode=require",
        ),
        ("postgresql:///forms?host=/run/pg", "postgresql:///forms?host=/run/pg"),
        ("host=db user=ann password='a b\\'c' dbname=forms", "host=db user=ann password=*** dbname=forms"),
    ],
)
def test_a_dsn_is_shown_without_its_password(dsn, shown):
    assert mask_dsn(dsn) == shown
    assert "s3c" not in mask_dsn(dsn)


def test_which_stores_are_databases_and_where_they_point(monkeypatch):
    assert is_dsn("postgresql://x/y") and is_dsn("POSTGRES://x/y")
    assert not is_dsn(".formctl") and not is_dsn("/srv/postgresql/store") and not is_dsn(None)
    monkeypatch.delenv("PGHOST", raising=False)
    monkeypatch.delenv("PGPORT", raising=False)
    assert describe_server("postgresql://ann:pw@db.example.com/forms") == "db.example.com:5432"
    assert describe_server("postgresql://[::1]:6000/forms") == "::1:6000"
    assert describe_server("postgresql:///forms?host=/run/pg") == "the socket in /run/pg (port 5432)"
    monkeypatch.setenv("PGHOST", "pg.internal")
    assert describe_server("postgresql:///forms") == "pg.internal:5432"


def test_a_wrong_password_is_one_line_naming_the_host_never_the_password(pg_server):
    dsn = pg_server.tcp_dsn(password="hunter2-wrong")
    adapter = PostgresAdapter(dsn)
    with pytest.raises(StoreError) as caught:
        adapter.get_instance("form_1_abcdef")
    message = caught.value.message
    assert "hunter2" not in message and "\n" not in message
    assert message.startswith("Cannot connect to the PostgreSQL store at 127.0.0.1:")
    assert "password authentication failed" in message
    assert "hunter2" not in repr(adapter) and "hunter2" not in adapter.identifier


def test_an_unreachable_server_is_one_line_naming_the_host():
    adapter = PostgresAdapter("postgresql://ann:pw@127.0.0.1:1/forms", connect_timeout=3)
    with pytest.raises(StoreError) as caught:
        adapter.find_latest_unclosed("alice")
    assert caught.value.message == (
        "Cannot connect to the PostgreSQL store at 127.0.0.1:1: no server is running there (connection refused)."
    )


# --------------------------------------------------------------------------- the schema


def test_only_store_init_creates_the_schema_and_it_is_versioned(pg_bare_dsn):
    adapter = PostgresAdapter(pg_bare_dsn)
    try:
        for attempt in (adapter.find_instances, lambda: adapter.create_instance("travel", 1, "alice", prov())):
            with pytest.raises(StoreError) as refused:  # never read as empty, never created behind the owner
                attempt()
            assert (
                "has no formctl tables" in refused.value.message and "run formctl store init" in refused.value.message
            )
        assert sql(pg_bare_dsn, "SELECT to_regclass('formctl_instances') IS NULL") == [(True,)]
        assert adapter.init() == (0, _pgschema.SCHEMA_VERSION)
        adapter.create_instance("travel", 1, "alice", prov())
        assert sql(pg_bare_dsn, "SELECT version FROM formctl_schema") == [(_pgschema.SCHEMA_VERSION,)]
        assert PostgresAdapter(pg_bare_dsn).init() == (_pgschema.SCHEMA_VERSION, _pgschema.SCHEMA_VERSION)
    finally:
        adapter.close()


def test_a_schema_newer_than_this_formctl_is_refused_untouched(pg_adapter, pg_dsn):
    pg_adapter.init()
    sql(pg_dsn, "UPDATE formctl_schema SET version = 99")
    with pytest.raises(StoreError, match="schema version 99, newer than this formctl knows"):
        PostgresAdapter(pg_dsn).find_instances()
    assert sql(pg_dsn, "SELECT version FROM formctl_schema") == [(99,)]


def test_the_answer_log_cannot_be_rewritten_even_by_hand(pg_adapter, pg_dsn):
    inst = fill(pg_adapter, pg_adapter.create_instance("travel", 1, "alice", prov()), "name", "Ada")
    for statement in (
        "UPDATE formctl_revisions SET value = '\"Bob\"'",
        "DELETE FROM formctl_revisions",
        "TRUNCATE formctl_revisions CASCADE",
    ):
        with pytest.raises(psycopg.errors.IntegrityConstraintViolation, match="append-only"):
            sql(pg_dsn, statement)
    assert pg_adapter.get_instance(inst.id).in_force_values() == {"name": "Ada"}


# --------------------------------------------------------------------------- values


def test_values_come_back_exactly_as_given(pg_adapter, pg_dsn):
    value = {"zeta": 1, "alpha": [1.5, None, True], "big": 10**30, "text": "ünï\u0000code"}
    inst = fill(pg_adapter, pg_adapter.create_instance("travel", 1, "alice", prov()), "v", value)
    got = PostgresAdapter(pg_dsn).get_instance(inst.id).entries["v"].revisions[0].value
    assert got == value and list(got) == ["zeta", "alpha", "big", "text"]  # json keeps key order; jsonb would not


def test_a_value_that_cannot_be_stored_is_refused_and_nothing_is_written(pg_adapter):
    inst = pg_adapter.create_instance("travel", 1, "alice", prov())
    with pytest.raises(StoreError, match="cannot be stored as JSON"):
        fill(pg_adapter, inst, "v", float("nan"))
    with pytest.raises(StoreError, match="cannot be stored in PostgreSQL"):
        pg_adapter.commit_instance(inst.id, Commit(blocked_on="nul\u0000here"), if_version=1, provenance=prov())
    assert pg_adapter.get_instance(inst.id).version == 1
    assert fill(pg_adapter, inst, "v", 1).version == 2


# --------------------------------------------------------------------------- between adapters


def test_compare_and_set_and_fresh_reads_hold_between_two_adapters(pg_dsn):
    a, b = PostgresAdapter(pg_dsn), PostgresAdapter(pg_dsn)
    inst = a.create_instance("travel", 1, "alice", prov())
    seen_by_b = b.get_instance(inst.id)
    fill(a, inst, "name", "Ada")
    with pytest.raises(ConflictError):
        fill(b, seen_by_b, "name", "Bob")
    assert b.conflicts == 1
    assert b.get_instance(inst.id).in_force_values() == {"name": "Ada"}  # b's cached copy was refreshed
    a.record_dispatch(inst.id, "k", DispatchState("h", "ok", 1, now_iso()), prov())
    assert b.get_instance(inst.id).dispatches["k"].status == "ok"  # a dispatch is seen too (no version bump)
    assert b.find_latest_unclosed("alice").dispatches["k"].status == "ok"


# --------------------------------------------------------------------------- damage


def test_an_instance_missing_answers_is_reported_and_never_stands_in_silently(pg_adapter, pg_dsn):
    good = fill(pg_adapter, pg_adapter.create_instance("travel", 1, "alice", prov()), "name", "Ada")
    bad = fill(pg_adapter, pg_adapter.create_instance("travel", 1, "bob", prov()), "name", "Bo")
    bad = fill(pg_adapter, bad, "name", "Bob")
    sql(pg_dsn, "ALTER TABLE formctl_revisions DISABLE TRIGGER USER")  # what only a person could do
    sql(pg_dsn, "DELETE FROM formctl_revisions WHERE instance_id = %s AND pos = 0", (bad.id,))
    fresh = PostgresAdapter(pg_dsn)
    with pytest.raises(StoreError, match=f"instance {bad.id}: field 'name' has revision 1 where 0 was due"):
        fresh.get_instance(bad.id)
    with pytest.raises(StoreError):
        fresh.find_latest_unclosed("bob")  # never an older one, or none, in its place
    damaged: list = []
    assert [i.id for i in fresh.find_instances(damaged=damaged)] == [good.id]
    assert len(damaged) == 1 and bad.id in damaged[0].message
    report = fresh.check()
    assert not report.ok and [p.path for p in report.problems] == [f"{fresh.display} instance {bad.id}"]
    assert report.instances == 1


# --------------------------------------------------------------------------- the server going away


@pytest.mark.e2e
def test_a_server_restart_between_operations_is_invisible_and_a_stopped_server_is_one_line(private_pg, monkeypatch):
    # A stopped server: fail after 0.2 s of retrying, not 8 (how long is not the point here; the
    # restart is over before the next call, which needs no patience to reconnect).
    monkeypatch.setattr(postgres, "RECONNECT_PATIENCE", 0.2)
    pg_server = private_pg
    adapter = PostgresAdapter(pg_server.dsn, connect_timeout=3)
    inst = fill(adapter, adapter.create_instance("travel", 1, "alice", prov()), "name", "Ada")
    pg_server.restart()
    inst = fill(adapter, inst, "name", "Ada L")  # the dead connection is replaced: nothing was lost or doubled
    assert adapter.get_instance(inst.id).version == 3
    pg_server.stop()
    try:
        with pytest.raises(StoreError) as caught:
            fill(adapter, inst, "name", "Ada Lovelace")
        assert "\n" not in caught.value.message
        assert caught.value.message.startswith("Cannot connect to the PostgreSQL store at the socket in ")
    finally:
        pg_server.start()
    inst = fill(adapter, inst, "name", "Ada Lovelace")
    assert [e.value for e in adapter.get_instance(inst.id).entries["name"].revisions] == [
        "Ada",
        "Ada L",
        "Ada Lovelace",
    ]


# --------------------------------------------------------------------------- live updates


@pytest.fixture
def other_schema_store(pg_server):
    """A store in another schema of the same database as ``pg_dsn``'s: the two share the
    notification channel, and nothing else."""
    import uuid

    from pg_server import with_options

    schema = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(pg_server.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    other = PostgresAdapter(with_options(pg_server.dsn, f"-csearch_path={schema}"))
    other.init()
    yield other
    other.close()
    with psycopg.connect(pg_server.dsn, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


def heard_until(watcher, instance_id: str, timeout: float = 10.0) -> set[str]:
    """Every id the watcher hears up to and including a write to ``instance_id``. The server
    delivers notifications in the order their transactions committed, so whatever was committed
    before that write has been heard too when this returns, and nothing of it is still to come:
    a write made for the purpose (a marker) ends a wait for quiet without waiting for a timeout."""
    heard: set[str] = set()
    deadline = time.monotonic() + timeout
    while instance_id not in heard:
        left = deadline - time.monotonic()
        assert left > 0, f"no write to {instance_id} heard in {timeout} s (heard {sorted(heard)})"
        more = watcher.wait(left)
        assert more is not None, "the watcher lost the server"
        heard |= more
    return heard


def test_a_watcher_hears_only_its_own_store_not_another_schema_of_the_same_database(pg_dsn, other_schema_store):
    other = other_schema_store
    ours = PostgresAdapter(pg_dsn)
    mine = ours.create_instance("travel", 1, "alice", prov())
    theirs = other.create_instance("travel", 1, "bob", prov())
    watcher = ours.watch()
    try:
        watcher.wait(0)  # listening now
        fill(other, theirs, "name", "Bo")
        fill(ours, mine, "name", "Ada")
        marker = ours.create_instance("travel", 1, "carol", prov())  # committed last: heard last
        heard = heard_until(watcher, marker.id)
        assert mine.id in heard
        assert theirs.id not in heard  # the other team's write, on the same channel, is not ours
    finally:
        watcher.close()
        ours.close()


def test_another_schemas_write_does_not_end_the_wait_for_a_write_of_ours(pg_dsn, other_schema_store):
    # Two stores in two schemas of one database share the notification channel: hearing only
    # the other's write is no change of ours, and the wait goes on until ours (or the timeout).
    import threading

    other = other_schema_store
    ours = PostgresAdapter(pg_dsn)
    mine = ours.create_instance("travel", 1, "alice", prov())
    theirs = other.create_instance("travel", 1, "bob", prov())
    watcher = ours.watch()
    # Ours comes 0.2 s after theirs: a wait that ended on theirs would have returned by then
    # (it is heard within milliseconds); with both at once the wait would see ours beside it.
    later = threading.Timer(0.2, lambda: fill(ours, mine, "name", "Ada"))
    try:
        watcher.wait(0)  # listening now
        heard_until(watcher, ours.create_instance("travel", 1, "carol", prov()).id)  # quiet from here
        fill(other, theirs, "name", "Bo")  # heard first
        later.start()
        assert watcher.wait(10) == {mine.id}
    finally:
        later.join()
        watcher.close()
        ours.close()


def test_writes_of_ours_committed_while_the_watcher_sorts_another_stores_are_all_heard(pg_dsn, other_schema_store):
    # The watcher asks which ids it heard are its store's on its listening connection; a write
    # of ours whose notification arrives during that question must still be heard (psycopg
    # before 3.2.4 dropped notifications received outside Connection.notifies()).
    import threading

    other = other_schema_store
    ours = PostgresAdapter(pg_dsn)
    theirs = other.create_instance("travel", 1, "bob", prov())
    watcher = ours.watch()
    stop = threading.Event()

    def busy_neighbour() -> None:  # another team's writes, each one a question the watcher asks
        current = theirs
        while not stop.is_set():
            current = fill(other, current, "name", "Bo")

    neighbour = threading.Thread(target=busy_neighbour)
    try:
        watcher.wait(0)  # listening now
        neighbour.start()
        mine = [ours.create_instance("travel", 1, f"person-{n}", prov()).id for n in range(30)]
        heard = heard_until(watcher, mine[-1], timeout=20)
        assert set(mine) <= heard
    finally:
        stop.set()
        if neighbour.is_alive():
            neighbour.join()
        watcher.close()
        ours.close()


def test_a_commit_wakes_a_watcher_and_a_refused_one_does_not(pg_dsn):
    writer = PostgresAdapter(pg_dsn)
    inst = writer.create_instance("travel", 1, "alice", prov())
    watcher = PostgresAdapter(pg_dsn).watch()
    try:
        watcher.wait(0)  # listening now
        heard_until(watcher, writer.create_instance("travel", 1, "bob", prov()).id)  # quiet from here
        fill(writer, inst, "name", "Ada")
        assert watcher.wait(5) == {inst.id}
        with pytest.raises(ConflictError):
            fill(writer, inst, "name", "stale")
        # A write committed after the refused one is heard after anything the refused one sent:
        # hearing it alone proves that a rolled-back write sends nothing, without a timeout.
        marker = writer.create_instance("travel", 1, "carol", prov())
        assert heard_until(watcher, marker.id) == {marker.id}
    finally:
        watcher.close()
        writer.close()
