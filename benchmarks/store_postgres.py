"""The PostgreSQL store beside the JSON store, in one run: what sharing a store costs.

    python benchmarks/store_postgres.py [--dsn DSN] [--commits N] [--instances N] [--fills N] [--quick]

Without ``--dsn`` a throwaway cluster is started in a temporary folder (``initdb`` as an
unprivileged user, ``fsync`` on, a Unix socket: tests/helpers/pg_cluster.py) and removed at
the end. Each figure is taken for both stores in the same run, interleaved where it is a
rate, so both see the same load on the disk and the CPU.

1. Durable commits of one fill (one revision of one field) on a 40-field instance through
   ``commit_instance``, one writer: commits per second, latency median and p95.
2. Where a PostgreSQL commit's time goes, measured alongside: a bare round trip
   (``SELECT 1``), a bare durable transaction on the same server (``BEGIN; UPDATE one row;
   COMMIT``: the WAL flush), the same commits with ``synchronous_commit = off`` (no
   flush: what is left is formctl's work and the round trips), and the commit as it was
   before it became one statement (the locked path, still taken when the adapter's copy is
   stale), so "commit / bare durable transaction" is printed before and after, same run.
3. ``find_latest_unclosed`` with 10,000 instances (a quarter of the subjects' newest one
   abandoned): warm (an adapter that has looked before, as in a chat), and cold (a new
   adapter; for PostgreSQL that includes opening the connection, given apart).
4. Four processes filling through ``FormRunner``: on one instance (they queue on its lock),
   and on four instances (the JSON store still has one lock for the folder; PostgreSQL locks
   rows). Fills per second of wall time.
5. A chat's conversation (docs/store-postgres.md, "Conversations"): the round trips of one
   save of an exchange and of one turn number given out, counted off libpq's own trace of the
   messages the client sends (each ``Sync`` or simple ``Query`` is one round trip), and their
   latency beside a commit's.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "src"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "helpers"))

import pg_cluster  # noqa: E402

from formctl.forms.exchange import ExchangeSave  # noqa: E402
from formctl.forms.instance import Commit, Entry, EntryCommit, Provenance, now_iso  # noqa: E402
from formctl.store.jsonfile import JsonFileAdapter  # noqa: E402
from formctl.store.postgres import PostgresAdapter  # noqa: E402

FIELDS = [f"s{i // 5}_f{i % 5}" for i in range(40)]
WORKER = os.path.join(HERE, "..", "tests", "helpers", "store_concurrency_child.py")


def prov() -> Provenance:
    return Provenance("bench", "agent", now_iso())


def _ms(seconds: float) -> float:
    return seconds * 1e3


def _p95(times: list[float]) -> float:
    return sorted(times)[max(0, int(len(times) * 0.95) - 1)]


class Committer:
    def __init__(self, adapter) -> None:
        self.adapter = adapter
        self.inst = adapter.create_instance("bench-8x5", 1, "bench", prov())
        self.times: list[float] = []
        self.n = 0

    def run(self, count: int, *, timed: bool = True) -> None:
        for _ in range(count):
            self.n += 1
            seq = self.inst.revision_seq + 1
            commit = Commit(
                entries={FIELDS[self.n % 40]: EntryCommit((Entry(seq, f"answer {seq}", prov()),))}, revision_seq=seq
            )
            t0 = time.perf_counter()
            self.inst = self.adapter.commit_instance(
                self.inst.id, commit, if_version=self.inst.version, provenance=prov()
            )
            if timed:
                self.times.append(time.perf_counter() - t0)


def _bare(dsn: str, sql_setup: list[str], statement: list[str], count: int) -> list[float]:
    import psycopg

    times = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        for s in sql_setup:
            conn.execute(s)
        for _ in range(count):
            t0 = time.perf_counter()
            for s in statement:
                conn.execute(s)
            times.append(time.perf_counter() - t0)
    return times


def bench_commits(folder: str, dsn: str, total: int) -> None:
    json_c = Committer(JsonFileAdapter(os.path.join(folder, "commits")))
    pg_c = Committer(PostgresAdapter(dsn))
    before_c = Committer(PostgresAdapter(dsn))
    before_c.adapter.one_trip = False  # the commit as it was: BEGIN; SELECT ... FOR UPDATE; INSERT; UPDATE; COMMIT
    # One options= with both settings: a second options= would replace the search_path (the schema).
    async_c = Committer(PostgresAdapter(dsn.replace("options=", "options=-csynchronous_commit%3Doff%20", 1)))
    for c in (json_c, pg_c, before_c, async_c):
        c.run(10, timed=False)
    rtt, flush = [], []
    batch = 20
    for _ in range(max(1, total // batch)):
        json_c.run(batch)
        pg_c.run(batch)
        before_c.run(batch)
        async_c.run(batch)
        rtt += _bare(dsn, [], ["SELECT 1"], batch // 4)
        flush += _bare(
            dsn,
            [
                "CREATE TABLE IF NOT EXISTS bench_floor (n int)",
                "INSERT INTO bench_floor SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM bench_floor)",
            ],
            ["BEGIN", "UPDATE bench_floor SET n = n + 1", "COMMIT"],
            batch // 4,
        )

    print(
        f"1. Durable commit of one fill, one writer ({len(json_c.times)} commits each, interleaved in batches of {batch})"
    )
    print(f"{'':>34} {'commits/s':>10} {'median ms':>10} {'p95 ms':>8}")
    for name, c in (
        ("JSON store", json_c),
        ("PostgreSQL", pg_c),
        ("PostgreSQL, locked path (before)", before_c),
        ("PostgreSQL, synchronous_commit=off", async_c),
    ):
        print(
            f"{name:>34} {len(c.times) / sum(c.times):>10.0f} {_ms(statistics.median(c.times)):>10.3f}"
            f" {_ms(_p95(c.times)):>8.3f}"
        )
    print(
        f"{'PostgreSQL / JSON (median)':>34} {statistics.median(pg_c.times) / statistics.median(json_c.times):>9.2f}x"
    )
    print()
    med = statistics.median
    commit, no_flush, before = med(pg_c.times), med(async_c.times), med(before_c.times)
    print("2. Where a PostgreSQL commit's time goes (medians, same run)")
    print(f"   one round trip (SELECT 1)                         {_ms(med(rtt)):8.3f} ms")
    print(f"   bare durable transaction (BEGIN; UPDATE; COMMIT)  {_ms(med(flush)):8.3f} ms   the WAL flush floor")
    print(
        f"   formctl commit, synchronous_commit=off            {_ms(no_flush):8.3f} ms   formctl's work + round trips"
    )
    print(f"   formctl commit, before (locked path, 5 round trips) {_ms(before):6.3f} ms")
    print(f"   formctl commit (one round trip)                   {_ms(commit):8.3f} ms")
    print(
        f"   -> the flush is {100 * (commit - no_flush) / commit:.0f}% of a commit; "
        f"commit / bare durable transaction: before {before / med(flush):.2f}x, now {commit / med(flush):.2f}x"
    )
    for c in (json_c, pg_c, before_c, async_c):
        c.adapter.close()


def _seed_json(store: str, count: int, subjects: list[str]) -> None:
    from formctl.store import _durable

    adapter = JsonFileAdapter(store)
    _durable.fsync_enabled = False  # seeding only: the lookups below read, they do not write
    try:
        p = prov()
        for k in range(count):
            inst = adapter.create_instance("travel-claim", 1, subjects[k % len(subjects)], p)
            if k % 4 == 0:
                adapter.commit_instance(inst.id, Commit(status="abandoned"), if_version=1, provenance=p)
    finally:
        _durable.fsync_enabled = True
        adapter.close()


def _seed_pg(dsn: str, count: int, subjects: list[str]) -> None:
    from formctl.store.base import new_instance

    adapter = PostgresAdapter(dsn)
    batch = []
    for k in range(count):
        inst = new_instance("travel-claim", 1, subjects[k % len(subjects)], now=now_iso())
        if k % 4 == 0:
            inst.status, inst.version = "abandoned", 2
        batch.append(inst)
        if len(batch) == 500:
            adapter.import_instances(batch)
            batch = []
    adapter.import_instances(batch)
    adapter._run(lambda cur: cur.execute("ANALYZE formctl_instances"), write=True)
    adapter.close()


def bench_lookup(folder: str, dsn: str, count: int, rounds: int) -> None:
    subjects = [f"person-{k}" for k in range(max(1, count // 2))]
    store = os.path.join(folder, "lookup")
    t0 = time.perf_counter()
    _seed_json(store, count, subjects)
    t1 = time.perf_counter()
    _seed_pg(dsn, count, subjects)
    t2 = time.perf_counter()
    rng = random.Random(1)
    rows = []
    for name, make in (("JSON store", lambda: JsonFileAdapter(store)), ("PostgreSQL", lambda: PostgresAdapter(dsn))):
        adapter = make()
        adapter.find_latest_unclosed(subjects[0])
        warm = []
        for _ in range(rounds):
            s = rng.choice(subjects)
            t = time.perf_counter()
            adapter.find_latest_unclosed(s)
            warm.append(time.perf_counter() - t)
        adapter.close()
        cold, connect = [], []
        for _ in range(20):
            fresh = make()
            t = time.perf_counter()
            if isinstance(fresh, PostgresAdapter):
                fresh._run(lambda cur: None)  # open the connection: timed apart
                connect.append(time.perf_counter() - t)
                t = time.perf_counter()
            fresh.find_latest_unclosed(rng.choice(subjects))
            cold.append(time.perf_counter() - t)
            fresh.close()
        rows.append((name, warm, cold, connect))
    print(
        f"3. find_latest_unclosed with {count:,} instances ({rounds} warm lookups, 20 cold;"
        f" seeding took {t1 - t0:.1f} s for JSON without fsync, {t2 - t1:.1f} s for PostgreSQL)"
    )
    print(f"{'':>12} {'warm median ms':>15} {'warm p95 ms':>12} {'cold median ms':>15} {'connect ms':>11}")
    for name, warm, cold, connect in rows:
        conn = f"{_ms(statistics.median(connect)):>11.3f}" if connect else f"{'-':>11}"
        print(
            f"{name:>12} {_ms(statistics.median(warm)):>15.3f} {_ms(_p95(warm)):>12.3f}"
            f" {_ms(statistics.median(cold)):>15.3f} {conn}"
        )


def _writers(store: str, instance_ids: list[str], fills: int) -> tuple[float, int]:
    """Four helper processes, each filling its instance (all the same one, or one each)."""
    procs = [
        subprocess.Popen(
            [sys.executable, WORKER, store, instance_ids[w % len(instance_ids)], str(w), str(fills)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for w in range(4)
    ]
    for p in procs:
        assert p.stdout.readline().strip() == "ready"
    t0 = time.perf_counter()
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    conflicts = 0
    import json

    for p in procs:
        out, _ = p.communicate(timeout=600)
        assert p.returncode == 0
        conflicts += json.loads(out.strip().splitlines()[-1])["adapter_conflicts"]
    return time.perf_counter() - t0, conflicts


def bench_writers(folder: str, dsn: str, fills: int) -> None:
    print(f"4. Four processes x {fills} fills through FormRunner (fills per second of wall time)")
    print(f"{'':>12} {'one instance':>13} {'four instances':>15} {'conflicts':>10}")
    for name, store, make in (
        ("JSON store", os.path.join(folder, "writers"), JsonFileAdapter),
        ("PostgreSQL", dsn, PostgresAdapter),
    ):
        adapter = make(store)
        one = [adapter.create_instance("race", 1, "race", prov()).id]
        four = [adapter.create_instance("race", 1, f"race{k}", prov()).id for k in range(4)]
        adapter.close()
        t_one, c_one = _writers(store, one, fills)
        t_four, c_four = _writers(store, four, fills)
        print(f"{name:>12} {4 * fills / t_one:>13.0f} {4 * fills / t_four:>15.0f} {c_one + c_four:>10}")


def round_trips(adapter: PostgresAdapter, action) -> int:
    """The round trips ``action()`` makes on ``adapter``'s connection, counted off libpq's trace:
    each ``Sync`` (the extended protocol) or ``Query`` (the simple one) the client sends."""
    from psycopg.pq import Trace

    conn = adapter._connection()
    with tempfile.TemporaryFile("w+") as fh:
        conn.pgconn.trace(fh.fileno())
        conn.pgconn.set_trace_flags(Trace.SUPPRESS_TIMESTAMPS)
        try:
            action()
        finally:
            conn.pgconn.untrace()
        fh.seek(0)
        sent = [line.split("\t") for line in fh.read().splitlines() if line.startswith("F")]
    return sum(1 for fields in sent if len(fields) > 2 and fields[2].split(" ")[0] in ("Sync", "Query"))


def bench_conversations(dsn: str, saves: int) -> None:
    adapter = PostgresAdapter(dsn)
    instance = adapter.create_instance("bench-8x5", 1, "bench", prov())
    store = adapter.conversation_store("bench")
    said = {"role": "user", "content": [{"type": "text", "text": "Dana Reeve, AB1234"}]}
    answer = {"role": "assistant", "content": [{"type": "text", "text": "Thanks, Dana. Your work email?"}]}
    claims, saving, trips_claim, trips_save = [], [], 0, 0
    store.claim(instance.id, exchange=True, turn=True, known=(0, 0))  # the connection opened, not counted
    store.save_exchange(instance.id, ExchangeSave(1, "bench", [said, answer], [(1, "Dana Reeve, AB1234")]))
    for n in range(2, saves + 2):
        t0 = time.perf_counter()
        trips_claim += round_trips(
            adapter, lambda: store.claim(instance.id, exchange=True, turn=True, known=(n - 1, n - 1))
        )
        t1 = time.perf_counter()
        trips_save += round_trips(
            adapter,
            lambda: store.save_exchange(
                instance.id, ExchangeSave(n, "bench", [said, answer], [(n, "Dana Reeve, AB1234")])
            ),
        )
        t2 = time.perf_counter()
        claims.append(t1 - t0)
        saving.append(t2 - t1)
    kept = store.conversation(instance.id)
    assert len(kept.parts) == saves + 1 and kept.turns == saves + 1
    med = statistics.median
    print(f"5. A chat's conversation on PostgreSQL ({saves} exchanges, each numbered and saved)")
    print(f"   save of one exchange: {trips_save / saves:.2f} round trip(s), median {_ms(med(saving)):.3f} ms")
    print(f"   a turn number given out: {trips_claim / saves:.2f} round trip(s), median {_ms(med(claims)):.3f} ms")
    adapter.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", help="a PostgreSQL database to use (its formctl_* tables are created in a new schema)")
    parser.add_argument("--commits", type=int, default=400)
    parser.add_argument("--instances", type=int, default=10_000)
    parser.add_argument("--fills", type=int, default=200, help="fills per writer process")
    parser.add_argument("--quick", action="store_true", help="smaller counts, for a smoke run")
    args = parser.parse_args()
    if args.quick:
        args.commits, args.instances, args.fills = 60, 1000, 30
    cluster = None
    dsn = args.dsn
    if dsn is None:
        cluster = pg_cluster.create()
        dsn = cluster.dsn()
        pg_cluster.wait_ready(dsn)
    import psycopg

    schema = f"bench_{os.getpid()}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    dsn_s = dsn + ("&" if "?" in dsn else "?") + f"options=-csearch_path%3D{schema}"
    try:
        PostgresAdapter(dsn_s).init()  # formctl store init: the only thing that creates the tables
        with tempfile.TemporaryDirectory(prefix="formctl-pg-bench-") as folder:
            bench_commits(folder, dsn_s, args.commits)
            print()
            bench_lookup(folder, dsn_s, args.instances, 300 if not args.quick else 50)
            print()
            bench_writers(folder, dsn_s, args.fills)
            print()
            bench_conversations(dsn_s, 50 if args.quick else 300)
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")
        if cluster is not None:
            cluster.destroy()


if __name__ == "__main__":
    main()
