"""The support desk's reads on a large store: ``find``, ``stats`` and ``export --form``.

    python benchmarks/desk.py [--claims N] [--dsn DSN] [--rounds N] [--quick]

Builds N generated travel claims (tests/helpers/claims.py: 10,000 by default, 1,000 with
--quick) in a folder store and in PostgreSQL (a throwaway cluster unless --dsn), then times:

1. ``runner.find("maria lopez")`` (and a word found in every claim, "example", limit 50):
   warm (the same runner asked again, as a desk's process does) and first (a new adapter and
   runner in this process, its first search: on the folder store that reads the index file);
   wall time, and this process's CPU time (on a shared machine the wall time swings with the
   load; PostgreSQL's own work is in the wall time only);
2. ``runner.stats("travel-claim")``: the folder store's one pass over every claim, and
   PostgreSQL's SQL aggregates;
3. ``export --form travel-claim --format csv``'s rows, streamed, counted and dropped.

Targets (issue 42): find among 10,000, warm, <= 50 ms on the folder store and <= 20 ms on
PostgreSQL.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "src"))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "helpers"))

import pg_cluster  # noqa: E402

from formctl.forms.reading import Scope  # noqa: E402
from formctl.forms.registry import FormRegistry  # noqa: E402
from formctl.forms.runner import FormRunner  # noqa: E402
from formctl.store.jsonfile import JsonFileAdapter  # noqa: E402
from formctl.store.postgres import PostgresAdapter  # noqa: E402
from helpers.claims import generate  # noqa: E402

REGISTRY = os.path.join(HERE, "..", "forms", "registry.toml")


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:8.2f} ms"


def _runner(make) -> FormRunner:
    return FormRunner(make(), registry=FormRegistry.from_toml(REGISTRY), subject="bench")


def _timed(fn) -> tuple[float, float, object]:
    """Wall and this process's CPU seconds of ``fn()``, and its result: on a machine others share,
    CPU time says what the work costs when wall time swings with the load."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def bench(name: str, make, rounds: int) -> None:
    print(f"{name}:")
    for text, label in (("maria lopez", "find 'maria lopez'"), ("example", "find 'example' (every claim)")):
        cold_runner = _runner(make)
        cold_runner.compiled("travel-claim")  # the forms compiled: the store's part is timed
        cold, cold_cpu, found = _timed(lambda: cold_runner.find(text))
        cold_runner.adapter.close()
        runner = _runner(make)
        runner.find(text)
        times = [_timed(lambda: runner.find(text))[:2] for _ in range(rounds)]
        runner.adapter.close()
        wall = statistics.median(t[0] for t in times)
        cpu = statistics.median(t[1] for t in times)
        print(
            f"  {label:30} warm {_ms(wall)} (cpu {_ms(cpu)})  first {_ms(cold)} (cpu {_ms(cold_cpu)})"
            f"  ({len(found)} found)"
        )
    runner = _runner(make)
    runner.compiled("travel-claim")
    wall, cpu, data = _timed(lambda: runner.stats("travel-claim"))
    print(f"  {'stats travel-claim':30} {_ms(wall)} (cpu {_ms(cpu)})  ({data['started']} claims)")
    wall, cpu, rows = _timed(lambda: sum(1 for _ in runner.export_rows(Scope("travel-claim"))))
    print(f"  {'export rows, streamed':30} {_ms(wall)} (cpu {_ms(cpu)})  ({rows} rows)")
    runner.adapter.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--claims", type=int, default=10_000)
    parser.add_argument("--dsn", help="a PostgreSQL database to use (tables go in a new schema)")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--quick", action="store_true", help="1,000 claims, few rounds: a smoke run")
    args = parser.parse_args()
    if args.quick:
        args.claims, args.rounds = 1000, 5
    with (
        pg_cluster.bench_schema(args.dsn, "desk") as dsn,
        tempfile.TemporaryDirectory(prefix="formctl-desk-") as folder,
    ):
        store = os.path.join(folder, "store")
        print(f"{args.claims} generated travel claims")
        owner = PostgresAdapter(dsn)
        owner.init()  # formctl store init: the only thing that creates the tables
        owner.close()
        for make in (lambda: JsonFileAdapter(store), lambda: PostgresAdapter(dsn)):
            adapter = make()
            generate(adapter, args.claims)
            adapter.close()
        import psycopg

        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("ANALYZE")
        bench("folder store", lambda: JsonFileAdapter(store), args.rounds)
        bench("PostgreSQL", lambda: PostgresAdapter(dsn), args.rounds)


if __name__ == "__main__":
    main()
