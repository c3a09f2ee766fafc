"""A PostgreSQL commit in one round trip (docs/store-postgres.md, "A commit in one round trip"):
one statement when the adapter's copy of the instance is current, the locked read-check-write
when it is not, and compare-and-set on every write either way."""

from __future__ import annotations

import tempfile
import threading
import time

import psycopg
import pytest

from formctl.errors import ConflictError
from formctl.forms.instance import Commit, DispatchState, Entry, EntryCommit, Provenance, now_iso
from formctl.store.postgres import PostgresAdapter


def prov() -> Provenance:
    return Provenance("test", "tester", now_iso())


def fill(adapter, instance, field, value, *, if_version=None):
    seq = instance.revision_seq + 1
    commit = Commit(entries={field: EntryCommit((Entry(seq, value, prov()),))}, revision_seq=seq)
    version = instance.version if if_version is None else if_version
    return adapter.commit_instance(instance.id, commit, if_version=version, provenance=prov())


def round_trips(adapter, action) -> int:
    """How many times the server said ReadyForQuery while ``action`` ran on ``adapter``'s
    connection: one per round trip (libpq's protocol trace)."""
    conn = adapter._connection()
    with tempfile.TemporaryFile("w+") as trace:
        conn.pgconn.trace(trace.fileno())
        try:
            action()
        finally:
            conn.pgconn.untrace()
        trace.seek(0)
        return sum(1 for line in trace if "ReadyForQuery" in line)


def test_a_commit_is_one_round_trip_when_the_adapters_copy_is_current(pg_adapter):
    instance = pg_adapter.create_instance("f", 1, "dana", prov())
    instance = fill(pg_adapter, instance, "a", "warm")
    holder = {}
    assert round_trips(pg_adapter, lambda: holder.update(i=fill(pg_adapter, instance, "b", "one"))) == 1
    pg_adapter.one_trip = False  # the commit as it was
    assert round_trips(pg_adapter, lambda: fill(pg_adapter, holder["i"], "c", "five")) == 5
    again = PostgresAdapter(pg_adapter.dsn).get_instance(instance.id)
    assert [again.entries[f].in_force.value for f in "abc"] == ["warm", "one", "five"]


def test_a_stale_copy_takes_the_locked_path_and_nothing_another_writer_did_is_lost(pg_dsn):
    mine, theirs = PostgresAdapter(pg_dsn), PostgresAdapter(pg_dsn)
    try:
        instance = fill(mine, mine.create_instance("f", 1, "dana", prov()), "a", "1")
        # A dispatch record moves the row's writes, not the version: my copy is stale but the
        # version I commit against is right, so my commit lands, on top of their record.
        theirs.record_dispatch(instance.id, "notify", DispatchState("notify", "done", 1, now_iso()), prov())
        after = fill(mine, instance, "b", "2")
        assert "notify" in after.dispatches and after.entries["b"].in_force.value == "2"
        stored = theirs.get_instance(instance.id)
        assert stored == after
        # Their commit moves the version: mine, against the old one, is refused, and writes nothing.
        fill(theirs, stored, "c", "theirs")
        with pytest.raises(ConflictError):
            fill(mine, after, "c", "mine")
        assert PostgresAdapter(pg_dsn).get_instance(instance.id).entries["c"].in_force.value == "theirs"
    finally:
        mine.close()
        theirs.close()


def test_a_one_trip_commit_cut_off_by_the_server_is_made_once_on_a_new_connection(pg_dsn):
    adapter = PostgresAdapter(pg_dsn)
    try:
        instance = fill(adapter, adapter.create_instance("f", 1, "dana", prov()), "a", "1")
        with psycopg.connect(pg_dsn, autocommit=True) as admin:
            admin.execute(
                "CREATE FUNCTION slow() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(2); "
                "RETURN NEW; END $$"
            )
            admin.execute("CREATE TRIGGER slow BEFORE UPDATE ON formctl_instances FOR EACH ROW EXECUTE FUNCTION slow()")
            (pid,) = adapter._connection().execute("SELECT pg_backend_pid()").fetchone()

            def cut() -> None:
                # Once the commit is inside the trigger's sleep (not after a guessed half second):
                # cut off mid-statement.
                deadline = time.monotonic() + 30
                query = "SELECT wait_event FROM pg_stat_activity WHERE pid = %s"
                while admin.execute(query, (pid,)).fetchone() != ("PgSleep",):
                    assert time.monotonic() < deadline, "the commit never reached the slow trigger"
                    time.sleep(0.005)
                admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
                admin.execute("DROP TRIGGER slow ON formctl_instances")

            killer = threading.Thread(target=cut)
            killer.start()
            after = fill(adapter, instance, "b", "2")  # cut off mid-statement, rolled back, made again
            killer.join()
        assert after.version == instance.version + 1
        assert adapter._connection().execute("SELECT pg_backend_pid()").fetchone()[0] != pid  # it was cut off
        with psycopg.connect(pg_dsn) as conn:
            (count,) = conn.execute("SELECT count(*) FROM formctl_revisions WHERE field = 'b'").fetchone()
        assert count == 1 and PostgresAdapter(pg_dsn).get_instance(instance.id) == after
    finally:
        adapter.close()
