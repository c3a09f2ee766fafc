"""Store benchmark: the cost of a durable commit, and of finding a subject's open form.

    python benchmarks/store.py [--dir DIR] [--rounds N] [--quick]

1. Durable commits per second for one fill (one revision of one field) on a 40-field
   instance whose log holds 0, 1,000 and 10,000 revisions when the run starts, through
   ``JsonFileAdapter.commit_instance`` (compactions included, amortised: every 200th
   commit folds the journal into a new snapshot).
2. The floor: one bare ``write + fsync + os.replace + fsync(dir)`` of the same bytes on the
   same disk: the instance file's bytes (what rewriting the file on every commit would
   cost at each log size) and one journal record's bytes.
3. ``find_latest_unclosed`` with 10, 1,000 and 10,000 instances in the store: warm (an
   adapter that has looked before, as in a chat session), cold (a new adapter in this
   process) and cold in a new process (as in one ``formctl`` command: the figure is the
   lookup itself, timed inside a fresh ``python`` that has imported the store, so the
   interpreter's start-up is left out). The same for a listing by status (``find_instances
   (status="abandoned", limit=20)``, which parses the whole index).

Commits and floor writes run in interleaved batches (commits on each log size, then the
floor for each size, round after round), so that both see the same load on the disk and
the CPU; the ratios are of their total times. fsync cost on a shared machine swings by
10x from minute to minute, and ratios of figures taken minutes apart mean nothing.

Targets: commit on a small instance <= 1.5x the floor of its file's bytes; commit at 1,000
revisions <= 2x the commit at 0; open-form lookup with 10,000 instances <= 20 ms in a new process.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

from formctl.forms.instance import Commit, Entry, EntryCommit, FieldLog, Provenance, now_iso  # noqa: E402
from formctl.store._journal import frame  # noqa: E402
from formctl.store.codec import commit_to_json, snapshot_bytes  # noqa: E402
from formctl.store.jsonfile import JsonFileAdapter  # noqa: E402

FIELDS = [f"s{i // 5}_f{i % 5}" for i in range(40)]
SIZES = (0, 1000, 10000)


def prov() -> Provenance:
    return Provenance("bench", "agent", now_iso())


def seeded_entries(revisions: int) -> dict[str, FieldLog]:
    p = prov()
    logs: dict[str, list[Entry]] = {f: [] for f in FIELDS}
    for seq in range(1, revisions + 1):
        logs[FIELDS[seq % 40]].append(Entry(seq, f"answer number {seq}", p))
    return {f: FieldLog(tuple(es), len(es) - 1) for f, es in logs.items() if es}


class Floor:
    """Bare ``write + fsync + os.replace + fsync(dir)`` of fixed bytes, timed per call."""

    def __init__(self, folder: str, data: bytes) -> None:
        self.folder, self.data, self.n = folder, data, 0
        self.path = os.path.join(folder, "floor.json")
        self.times: list[float] = []

    def run(self, count: int) -> None:
        dfd = os.open(self.folder, os.O_RDONLY)
        try:
            for _ in range(count):
                self.n += 1
                t0 = time.perf_counter()
                tmp = f"{self.path}.{self.n}.tmp"
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                os.write(fd, self.data)
                os.fsync(fd)
                os.close(fd)
                os.replace(tmp, self.path)
                os.fsync(dfd)
                self.times.append(time.perf_counter() - t0)
        finally:
            os.close(dfd)


class Committer:
    """One store, one 40-field instance, one-fill commits timed per call."""

    def __init__(self, folder: str, revisions: int) -> None:
        self.revisions = revisions
        self.adapter = JsonFileAdapter(os.path.join(folder, f"commits-{revisions}"))
        self.inst = self.adapter.create_instance("bench-8x5", 1, "bench", prov(), entries=seeded_entries(revisions))
        self.file_bytes = len(snapshot_bytes(self.inst, 0))
        self.times: list[float] = []
        self.n = 0
        self.record_bytes = 0

    def run(self, count: int, *, timed: bool = True) -> None:
        adapter = self.adapter
        for _ in range(count):
            self.n += 1
            seq = self.inst.revision_seq + 1
            commit = Commit(
                entries={FIELDS[self.n % 40]: EntryCommit((Entry(seq, f"answer number {seq}", prov()),))},
                revision_seq=seq,
            )
            t0 = time.perf_counter()
            self.inst = adapter.commit_instance(self.inst.id, commit, if_version=self.inst.version, provenance=prov())
            elapsed = time.perf_counter() - t0
            if timed:
                self.times.append(elapsed)
        record = {"s": 1, "v": self.inst.version, "at": self.inst.updated_at, "c": commit_to_json(commit)}
        self.record_bytes = len(frame(record))


def _ms(seconds: float) -> float:
    return seconds * 1e3


def _p99(times: list[float]) -> float:
    return sorted(times)[max(0, int(len(times) * 0.99) - 1)]


def bench_commits(folder: str, rounds: int, batch: int) -> None:
    committers = [Committer(folder, n) for n in SIZES]
    floor_dir = os.path.join(folder, "floor")
    os.mkdir(floor_dir)
    floors = [Floor(floor_dir, b"x" * c.file_bytes) for c in committers]
    for c in committers:
        c.run(10, timed=False)  # warm the page cache and the adapter
    record_floor = Floor(floor_dir, b"x" * committers[0].record_bytes)
    for _ in range(rounds):
        for c, f in zip(committers, floors):
            c.run(batch)
            f.run(batch)
        record_floor.run(batch // 4 or 1)

    base = sum(committers[0].times)
    print(f"Durable commit of one fill on a 40-field instance: {rounds} rounds of {batch} commits per log size,")
    print("interleaved with the floor (bare write+fsync+replace+fsync(dir) of the instance file's bytes).")
    print(
        f"{'log at start':>12} {'file B':>8} {'commits/s':>10} {'mean ms':>8} {'median':>7} {'p99':>7}"
        f" {'vs 0 rev':>8} {'floor mean':>10} {'floor med':>9} {'commit/floor':>12}"
    )
    for c, f in zip(committers, floors):
        total = sum(c.times)
        print(
            f"{c.revisions:>12} {c.file_bytes:>8} {len(c.times) / total:>10.0f} {_ms(statistics.fmean(c.times)):>8.3f}"
            f" {_ms(statistics.median(c.times)):>7.3f} {_ms(_p99(c.times)):>7.3f} {total / base:>7.2f}x"
            f" {_ms(statistics.fmean(f.times)):>10.3f} {_ms(statistics.median(f.times)):>9.3f}"
            f" {total / sum(f.times):>11.2f}x"
        )
    print(
        f"floor for one journal record's bytes ({committers[0].record_bytes} B): "
        f"mean {_ms(statistics.fmean(record_floor.times)):.3f} ms, median {_ms(statistics.median(record_floor.times)):.3f} ms"
    )
    print(f"(the 0-revision log grows to {committers[0].inst.revision_seq} revisions during the run)")


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
        adapter.find_latest_unclosed(subject)
        warm.append(time.perf_counter() - t0)
    cold = []
    for _ in range(15):
        fresh = JsonFileAdapter(store)
        subject = rng.choice(subjects)
        t0 = time.perf_counter()
        fresh.find_latest_unclosed(subject)
        cold.append(time.perf_counter() - t0)
        fresh.close()
    cold_listings = []
    for _ in range(7):  # one timing swings several-fold with the machine's load: take the median
        t0 = time.perf_counter()
        fresh = JsonFileAdapter(store)
        listed = fresh.find_instances(status="abandoned", limit=20)
        cold_listings.append(time.perf_counter() - t0)
        fresh.close()
        assert len(listed) == min(20, (count + 3) // 4)
    t0 = time.perf_counter()
    for _ in range(20):
        adapter.find_instances(status="abandoned", limit=20)
    warm_listing = (time.perf_counter() - t0) / 20
    process = [_in_new_process(store, "open", rng.choice(subjects)) for _ in range(7)]
    process_listing = [_in_new_process(store, "list", "") for _ in range(5)]
    return {
        "instances": count,
        "warm_median_ms": _ms(statistics.median(warm)),
        "warm_p99_ms": _ms(_p99(warm)),
        "cold_median_ms": _ms(statistics.median(cold)),
        "cold_max_ms": _ms(max(cold)),
        "process_median_ms": _ms(statistics.median(process)),
        "process_max_ms": _ms(max(process)),
        "warm_listing_ms": _ms(warm_listing),
        "cold_listing_ms": _ms(statistics.median(cold_listings)),
        "process_listing_ms": _ms(statistics.median(process_listing)),
        "index_bytes": _index_bytes(store),
    }


_CHILD = """
import sys, time
sys.path.insert(0, sys.argv[1])
from formctl.store.jsonfile import JsonFileAdapter
adapter = JsonFileAdapter(sys.argv[2])
t0 = time.perf_counter()
if sys.argv[3] == "open":
    adapter.find_latest_unclosed(sys.argv[4])
else:
    adapter.find_instances(status="abandoned", limit=20)
print(time.perf_counter() - t0)
"""


def _in_new_process(store: str, what: str, subject: str) -> float:
    """One lookup timed inside a new interpreter (its start-up and imports left out)."""
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, src, store, what, subject], capture_output=True, text=True, check=True
    )
    return float(out.stdout)


def _index_bytes(store: str) -> int:
    """The index's size on disk, whatever its layout (one file, or an older folder of shards)."""
    total = 0
    for name in ("index.jsonl", "index"):
        path = os.path.join(store, name)
        if os.path.isfile(path):
            total += os.path.getsize(path)
        elif os.path.isdir(path):
            total += sum(e.stat().st_size for e in os.scandir(path))
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", help="folder on the disk to measure (default: a temporary folder)")
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds of 40 commits per log size")
    parser.add_argument("--quick", action="store_true", help="fewer rounds, no 10,000-instance store: a smoke run")
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="formctl-store-bench-", dir=args.dir)
    try:
        bench_commits(folder, 3 if args.quick else args.rounds, 40)
        print()
        print("Open-form lookup (find_latest_unclosed), and a listing by status (find_instances, limit 20), in ms:")
        print("warm = the same adapter again; cold = a new adapter; process = a new adapter in a new process")
        print(
            f"{'instances':>9} {'warm med':>9} {'warm p99':>9} {'cold med':>9} {'cold max':>9}"
            f" {'process med':>11} {'process max':>11} {'list warm':>10} {'list cold':>10} {'list process':>12}"
            f" {'index B':>9}"
        )
        for count in (10, 1000) if args.quick else (10, 1000, 10000):
            r = bench_lookup(folder, count, 100 if args.quick else 500)
            print(
                f"{r['instances']:>9} {r['warm_median_ms']:>9.3f} {r['warm_p99_ms']:>9.3f}"
                f" {r['cold_median_ms']:>9.3f} {r['cold_max_ms']:>9.3f}"
                f" {r['process_median_ms']:>11.3f} {r['process_max_ms']:>11.3f}"
                f" {r['warm_listing_ms']:>10.3f} {r['cold_listing_ms']:>10.3f} {r['process_listing_ms']:>12.3f}"
                f" {r['index_bytes']:>9}"
            )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
