"""Goal-program benchmark: the cost of an update and of ``inspect()`` as the history grows.

    python benchmarks/goals.py [--rounds N] [--pg DSN] [--no-fsync]

For each store (in memory; the JSON folder, with its fsyncs unless --no-fsync; PostgreSQL when
--pg DSN or FORMCTL_BENCH_PG_DSN is given) and each history length (10 and 1,000 snapshots),
a program of 3 goals × 10 items is brought to that many versions by host updates, then timed:

* ``update``: one host update (one item completed or reopened, alternately) through
  ``GoalRunner.update``: read the head, check, commit (the JSON store appends one history
  line, synced, and replaces the head file);
* ``inspect``: ``GoalRunner.inspect()`` from a runner as a chat holds it;
* ``history``: ``GoalRunner.history()``, which reads every snapshot (for scale).

Then the bytes: the history on disk per version, beside what it would be if every snapshot
carried its definitions (the naive layout), to show what naming definitions by digest saves.

Target: update and inspect at 1,000 snapshots within 1.5x of their cost at 10 (the head is
read and written alone; the history is only appended to).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

from formctl import Goal, GoalRunner, GoalScope, Item, JsonFileAdapter, MemoryAdapter, define_program  # noqa: E402
from formctl.goals.state import state_to_json  # noqa: E402
from formctl.store import _durable  # noqa: E402

SIZES = (10, 1000)
PROGRAM = define_program(
    "bench",
    goals=[
        Goal(
            f"g{n}",
            title=f"Goal {n}",
            objective="An objective of about the length a host writes for one.",
            items=[Item(f"i{m}", label=f"Checklist item {n}.{m} with a realistic label") for m in range(10)],
        )
        for n in range(3)
    ],
)
SCOPE = GoalScope(subject="firm:1/matter:2", key="intake")


def toggle(runner: GoalRunner, n: int) -> None:
    """One version: item i{n % 10} of goal g2 completed on even passes, reopened on odd ones."""
    key = f"i{n % 10}"
    status = runner.inspect()
    assert status is not None
    item = status.item("g2", key)
    assert item is not None
    if item.disposition == "completed":
        runner.update(goal="g2", reopened=[key], reason=f"pass {n}")
    else:
        runner.update(goal="g2", completed=[key], reason=f"pass {n}")


def median_ms(fn, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def pg_adapter(dsn: str):
    import psycopg

    from formctl.store.postgres import PostgresAdapter

    schema = f"bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    sep = "&" if "?" in dsn else "?"
    return PostgresAdapter(f"{dsn}{sep}options=-csearch_path%3D{schema}"), schema


def bench_store(name: str, make, rounds: int) -> list[dict]:
    rows = []
    for size in SIZES:
        adapter, cleanup = make()
        try:
            runner = GoalRunner(adapter, scope=SCOPE, actor="bench")
            runner.start(PROGRAM)
            n = 0
            while (runner.inspect().version) < size:
                toggle(runner, n)
                n += 1
            update = median_ms(lambda: toggle(runner, n + 1), rounds)
            inspect = median_ms(runner.inspect, rounds)
            history = median_ms(runner.history, 3)
            versions = runner.inspect().version
            snapshots = runner.history()
            naive = sum(len(json.dumps(state_to_json(_state(s)))) for s in snapshots)
            stored = _history_bytes(adapter)
            rows.append(
                {
                    "store": name,
                    "snapshots": size,
                    "update_ms": update,
                    "inspect_ms": inspect,
                    "history_ms": history,
                    "versions": versions,
                    "naive_bytes_per_version": naive / len(snapshots),
                    "stored_bytes_per_version": (stored / versions) if stored is not None else None,
                }
            )
        finally:
            cleanup()
    return rows


def _state(status):
    """The stored snapshot a status was built from (for the naive size: everything inline)."""
    from formctl.goals.state import GoalState

    return GoalState(
        scope=status.scope,
        version=status.version,
        program=status.program,
        progress=dict(status.progress),
        created_at=status.created_at,
        updated_at=status.updated_at,
        actor=status.actor,
        source=status.source,
        change=status.change,
        reason=status.reason,
        transitions=status.transitions,
    )


def _history_bytes(adapter) -> int | None:
    if isinstance(adapter, JsonFileAdapter):
        folder = os.path.join(adapter.directory, "goals")
        return sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder) if f.endswith(".history.jsonl"))
    store = adapter.goal_store() if hasattr(adapter, "goal_store") else None
    if store is not None and type(store).__name__ == "PostgresGoalStore":
        import psycopg

        with psycopg.connect(store.dsn, autocommit=True) as conn:
            row = conn.execute(
                "SELECT coalesce(sum(pg_column_size(state) + length(digest)), 0) FROM formctl_goal_history"
            ).fetchone()
            defs = conn.execute(
                "SELECT coalesce(sum(pg_column_size(definition)), 0) FROM formctl_goal_programs"
            ).fetchone()
        return int(row[0]) + int(defs[0])
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--pg", default=os.environ.get("FORMCTL_BENCH_PG_DSN"))
    parser.add_argument("--no-fsync", action="store_true", help="JSON store without its fsyncs (a tmpfs-like disk).")
    parser.add_argument("--quick", action="store_true", help="five rounds (.ci/run)")
    args = parser.parse_args()
    if args.quick:
        args.rounds = 5
    if args.no_fsync:
        _durable.fsync_enabled = False

    def memory():
        return MemoryAdapter(), lambda: None

    def jsonfile():
        folder = tempfile.mkdtemp(prefix="formctl-goals-bench-")
        return JsonFileAdapter(folder), lambda: shutil.rmtree(folder, ignore_errors=True)

    stores = [("memory", memory), ("jsonfile" + (" (no fsync)" if args.no_fsync else ""), jsonfile)]
    if args.pg:

        def postgres():
            import psycopg

            adapter, schema = pg_adapter(args.pg)

            def cleanup():
                adapter.goal_store().close()
                adapter.close()
                with psycopg.connect(args.pg, autocommit=True) as conn:
                    conn.execute(f"DROP SCHEMA {schema} CASCADE")

            return adapter, cleanup

        stores.append(("postgres", postgres))

    rows = []
    for name, make in stores:
        rows += bench_store(name, make, args.rounds)
    print(
        f"{'store':<22}{'snapshots':>10}{'update ms':>11}{'inspect ms':>12}{'history ms':>12}{'B/version':>11}{'naive B/v':>11}"
    )
    for r in rows:
        stored = f"{r['stored_bytes_per_version']:.0f}" if r["stored_bytes_per_version"] is not None else "-"
        print(
            f"{r['store']:<22}{r['snapshots']:>10}{r['update_ms']:>11.3f}{r['inspect_ms']:>12.3f}"
            f"{r['history_ms']:>12.1f}{stored:>11}{r['naive_bytes_per_version']:>11.0f}"
        )
    by = {(r["store"], r["snapshots"]): r for r in rows}
    print()
    for name, _ in stores:
        small, big = by[(name, SIZES[0])], by[(name, SIZES[-1])]
        print(
            f"{name}: update at {SIZES[-1]} / at {SIZES[0]} = {big['update_ms'] / small['update_ms']:.2f}x, "
            f"inspect {big['inspect_ms'] / small['inspect_ms']:.2f}x, history {big['history_ms'] / small['history_ms']:.0f}x"
        )


if __name__ == "__main__":
    main()
