"""Store benchmark: the cost of a durable commit, and of finding a subject's open form.

    python benchmarks/store.py [--dir DIR] [--commits N] [--quick]

1. Durable commits per second for one fill (one revision of one field) on a 40-field
   instance whose log already holds 0, 1,000 and 10,000 revisions, through
   ``JsonFileAdapter.commit_instance`` (compactions included, amortised).
2. The floor: one bare ``write + fsync + os.replace + fsync(dir)`` of the same bytes on the
   same disk: the instance file's bytes (what rewriting the file on every commit would
   cost, at each log size) and one journal record's bytes.
3. ``find_open_instance`` with 10, 1,000 and 10,000 instances in the store: warm (an
   adapter that has looked before, as in a chat session) and cold (a new adapter, as in
   one ``formctl`` command, which loads the index first).

Targets: commit on a small instance <= 1.5x the floor of its file's bytes; commit at 1,000
revisions <= 2x the commit at 0; open-form lookup with 10,000 instances <= 20 ms.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

from formctl.forms.instance import Commit, Entry, EntryCommit, FieldLog, Provenance, now_iso  # noqa: E402
from formctl.store.jsonfile import JsonFileAdapter, _snapshot_bytes, commit_to_json  # noqa: E402
from formctl.store._journal import frame  # noqa: E402

FIELDS = [f"s{i // 5}_f{i % 5}" for i in range(40)]


def prov() -> Provenance:
    return Provenance("bench", "agent", now_iso())


def seeded_entries(revisions: int) -> dict[str, FieldLog]:
    p = prov()
    logs: dict[str, list[Entry]] = {f: [] for f in FIELDS}
    for seq in range(1, revisions + 1):
        logs[FIELDS[seq % 40]].append(Entry(seq, f"answer number {seq}", p))
    return {f: FieldLog(tuple(es), len(es) - 1) for f, es in logs.items() if es}


def floor_ms(folder: str, data: bytes, rounds: int, reps: int) -> dict:
    """ms of one bare write + fsync + os.replace + fsync(dir) of ``data``: the best of
    ``reps`` runs' means (other load on the machine only ever adds time), and the median."""
    path = os.path.join(folder, "floor.json")
    means, medians = [], []
    dfd = os.open(folder, os.O_RDONLY)
    try:
        for _ in range(reps):
            times = []
            for n in range(rounds):
                t0 = time.perf_counter()
                tmp = f"{path}.{n}.tmp"
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                os.write(fd, data)
                os.fsync(fd)
                os.close(fd)
                os.replace(tmp, path)
                os.fsync(dfd)
                times.append(time.perf_counter() - t0)
            means.append(statistics.fmean(times))
            medians.append(statistics.median(times))
    finally:
        os.close(dfd)
    return {"mean_ms": min(means) * 1e3, "median_ms": min(medians) * 1e3}


def bench_commits(folder: str, revisions: int, commits: int, reps: int) -> dict:
    """Best of ``reps`` runs, each on a fresh instance (so the log starts at ``revisions``)."""
    runs = [_commit_run(os.path.join(folder, f"commits-{revisions}-{r}"), revisions, commits) for r in range(reps)]
    best = min(runs, key=lambda r: r["mean_ms"])
    best["median_ms"] = min(r["median_ms"] for r in runs)
    return best


def _commit_run(store: str, revisions: int, commits: int) -> dict:
    adapter = JsonFileAdapter(store)
    inst = adapter.create_instance("bench-8x5", 1, "bench", prov(), entries=seeded_entries(revisions))
    file_bytes = len(_snapshot_bytes(inst, 0))
    times = []
    record_bytes = 0
    for n in range(commits + 20):
        seq = inst.revision_seq + 1
        commit = Commit(
            entries={FIELDS[n % 40]: EntryCommit((Entry(seq, f"answer number {seq}", prov()),))}, revision_seq=seq
        )
        t0 = time.perf_counter()
        inst = adapter.commit_instance(inst.id, commit, if_version=inst.version, provenance=prov())
        elapsed = time.perf_counter() - t0
        if n >= 20:  # the first few warm the page cache and the adapter
            times.append(elapsed)
        record_bytes = len(frame({"s": 1, "v": inst.version, "at": inst.updated_at, "c": commit_to_json(commit)}))
    mean = statistics.fmean(times)
    return {
        "revisions": revisions,
        "file_bytes": file_bytes,
        "record_bytes": record_bytes,
        "mean_ms": mean * 1e3,
        "median_ms": statistics.median(times) * 1e3,
        "p99_ms": sorted(times)[int(len(times) * 0.99) - 1] * 1e3,
        "per_s": 1 / mean,
    }


def bench_lookup(folder: str, count: int, rounds: int) -> dict:
    store = os.path.join(folder, f"lookup-{count}")
    adapter = JsonFileAdapter(store)
    subjects = [f"person-{k}" for k in range(max(1, count // 2))]
    p = prov()
    for k in range(count):
        inst = adapter.create_instance("travel-claim", 1, subjects[k % len(subjects)], p)
        if k % 4 == 0:  # some subjects' newest form is abandoned: the lookup must skip it
            adapter.commit_instance(inst.id, Commit(status="abandoned"), if_version=1, provenance=p)
    rng = random.Random(1)
    warm = []
    for _ in range(rounds):
        subject = rng.choice(subjects)
        t0 = time.perf_counter()
        adapter.find_open_instance(subject)
        warm.append(time.perf_counter() - t0)
    cold = []
    for _ in range(7):
        fresh = JsonFileAdapter(store)
        subject = rng.choice(subjects)
        t0 = time.perf_counter()
        fresh.find_open_instance(subject)
        cold.append(time.perf_counter() - t0)
        fresh.close()
    return {
        "instances": count,
        "warm_median_ms": statistics.median(warm) * 1e3,
        "warm_p99_ms": sorted(warm)[int(len(warm) * 0.99) - 1] * 1e3,
        "cold_median_ms": statistics.median(cold) * 1e3,
        "index_bytes": sum(e.stat().st_size for e in os.scandir(os.path.join(store, "index"))),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", help="folder on the disk to measure (default: a temporary folder)")
    parser.add_argument("--commits", type=int, default=600, help="timed commits per run (3 runs per log size)")
    parser.add_argument("--quick", action="store_true", help="fewer rounds, for a smoke run")
    args = parser.parse_args()
    commits = 200 if args.quick else args.commits
    folder = tempfile.mkdtemp(prefix="formctl-store-bench-", dir=args.dir)
    try:
        reps = 2 if args.quick else 3
        rows = [bench_commits(folder, n, commits, reps) for n in (0, 1000, 10000)]
        floor_dir = os.path.join(folder, "floor")
        os.mkdir(floor_dir)
        rounds = 100 if args.quick else 400
        for row in rows:
            row["floor"] = floor_ms(floor_dir, b"x" * row["file_bytes"], rounds, reps)
        record_floor = floor_ms(floor_dir, b"x" * rows[0]["record_bytes"], rounds, reps)
        base = rows[0]["mean_ms"]

        print(f"Durable commit of one fill on a 40-field instance (best of {reps} runs of {commits} commits,")
        print(f"compactions included; floor = bare write+fsync+replace+fsync(dir) of the instance file's bytes; {folder})")
        print(f"{'log':>7} {'file B':>8} {'commits/s':>10} {'mean ms':>8} {'median':>7} {'p99':>7}"
              f" {'vs 0 rev':>8} {'floor mean':>10} {'floor med':>9} {'commit/floor':>12}")
        for row in rows:
            print(
                f"{row['revisions']:>7} {row['file_bytes']:>8} {row['per_s']:>10.0f} {row['mean_ms']:>8.3f}"
                f" {row['median_ms']:>7.3f} {row['p99_ms']:>7.3f} {row['mean_ms'] / base:>7.2f}x"
                f" {row['floor']['mean_ms']:>10.3f} {row['floor']['median_ms']:>9.3f}"
                f" {row['mean_ms'] / row['floor']['mean_ms']:>11.2f}x"
            )
        print(
            f"floor for one journal record's bytes ({rows[0]['record_bytes']} B): "
            f"mean {record_floor['mean_ms']:.3f} ms, median {record_floor['median_ms']:.3f} ms"
        )
        print()
        print("Open-form lookup (find_open_instance)")
        print(f"{'instances':>9} {'warm median ms':>15} {'warm p99 ms':>12} {'cold ms':>8} {'index B':>9}")
        for count in (10, 1000, 10000):
            r = bench_lookup(folder, count, 100 if args.quick else 500)
            print(
                f"{r['instances']:>9} {r['warm_median_ms']:>15.3f} {r['warm_p99_ms']:>12.3f}"
                f" {r['cold_median_ms']:>8.3f} {r['index_bytes']:>9}"
            )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
