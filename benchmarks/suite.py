"""The test suite's wall and CPU time, run as the README runs it, optionally beside an older commit.

    python benchmarks/suite.py [--serial] [--against REV] [--rounds N] [--quick] [-- PYTEST_ARGS]

Runs the two commands issue 20 sets budgets for, in this checkout: ``python -m pytest -m "not e2e"
-n auto`` (the in-process tests, the inner loop) and ``python -m pytest -n auto`` (the README's test
command, the whole suite), and prints, per command: the wall time; the CPU time (user + sys) of pytest and of every process it started
and waited for (the workers, the ``formctl`` commands the CLI tests start; not a PostgreSQL
server, which runs detached); the count of tests; the load average before and after. On a
shared machine the wall time follows whatever else runs; the CPU time is the steadier
figure. ``--serial`` runs them without ``-n`` as well. Arguments after ``--`` go to
pytest, and then only that one command runs (a test file, for a quick look at one part).
``--quick`` (for .ci/run, which has just run the whole suite) runs once, only the in-process tests
about conversations (``-m "not e2e" -k conversation``): it shows the script still works, not how
fast the suite is.

``--slowest N`` also prints the N tests that took the most CPU time (the test's process and the
processes it started and waited for, setup and teardown included; the conftest's
``FORMCTL_TEST_CPU_LOG``), and the CPU time of the in-process (not e2e) tests and of the e2e ones:
on a shared machine that says where the time goes when the wall time cannot.

``--against REV`` checks REV out into a temporary git worktree (removed afterwards) and runs
the same commands there, alternating with this checkout (this, REV, this, REV, ...) so a
machine that gets busier part-way slows both alike. REV's own ``formctl`` is imported, in
pytest and in the commands its tests start (``PYTHONPATH`` comes before the editable
install's path). Both checkouts are byte-compiled first, so neither run pays for compiling:
``pytest --collect-only`` once, which fills the suite's own cache of compiled and rewritten
modules where it has one (``.pytest_cache/d/pycache``, when ``PYTHONDONTWRITEBYTECODE`` is set: see
tests/conftest.py), and ``compileall`` into REV's temporary checkout (an older suite may have no
such cache); nothing is compiled into this checkout's source tree. Then the ratios this / REV.
"""

from __future__ import annotations

import argparse
import itertools
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_suite(checkout: Path, parallel: bool, extra: list[str], cpu_log: Path | None = None) -> dict[str, float | str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(checkout / "src")  # this checkout's code, before the editable install's path
    if cpu_log is not None:
        env["FORMCTL_TEST_CPU_LOG"] = str(cpu_log)
    command = [sys.executable, "-m", "pytest", *(["-n", "auto"] if parallel else []), *extra]
    load_before = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=checkout, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr.strip()[-200:]
    if done.returncode != 0:
        sys.exit(f"the suite failed in {checkout}: {last}")
    counts = re.findall(r"(\d+) (passed|failed|skipped|errors?)", last)
    return {
        "wall": wall,
        "cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        "tests": " ".join(f"{n} {what}" for n, what in counts),
        "load": f"{load_before:.1f} -> {os.getloadavg()[0]:.1f}",
    }


def warm_up(checkout: Path, *, compile_tree: bool) -> None:
    """Compile before timing: the suite's collection fills its own cache of compiled modules (when
    it keeps one); ``compile_tree`` also byte-compiles src and tests into the checkout itself."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(checkout / "src")
    if compile_tree:
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", "src", "tests"],
            cwd=checkout,
            check=False,
            stdout=subprocess.DEVNULL,
        )
    subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:randomly"],
        cwd=checkout,
        env=env,
        check=False,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def report(label: str, runs: list[dict[str, float | str]]) -> tuple[float, float]:
    wall = statistics.median(float(r["wall"]) for r in runs)
    cpu = statistics.median(float(r["cpu"]) for r in runs)
    print(
        f"  {label:<28} wall {wall:6.1f} s   CPU {cpu:6.1f} s   {runs[-1]['tests']}   "
        f"(load {', '.join(str(r['load']) for r in runs)})"
    )
    return wall, cpu


def slowest(cpu_log: Path, checkout: Path, count: int) -> None:
    """The tests that took the most CPU time, and the CPU time of the e2e tests and of the rest."""
    rows = []
    for line in cpu_log.read_text(encoding="utf-8").splitlines():
        nodeid, cpu, wall = line.rsplit("\t", 2)
        rows.append((float(cpu), float(wall), nodeid))
    e2e = _e2e_tests(checkout)
    spent = {True: 0.0, False: 0.0}
    for cpu, _, nodeid in rows:
        spent[nodeid in e2e] += cpu
    print(f"  CPU in the tests: {sum(spent.values()):.1f} s; e2e {spent[True]:.1f} s, the rest {spent[False]:.1f} s")
    print(f"  the {count} tests that took the most CPU (CPU s, wall s):")
    for cpu, wall, nodeid in sorted(rows, reverse=True)[:count]:
        print(f"    {cpu:7.2f} {wall:7.2f}  {nodeid}{'  [e2e]' if nodeid in e2e else ''}")


def _e2e_tests(checkout: Path) -> set[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(checkout / "src")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "e2e", "-p", "no:randomly"],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
    )
    return {line for line in done.stdout.splitlines() if "::" in line}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serial", action="store_true", help="also run the suite without -n")
    parser.add_argument("--against", metavar="REV", help="an older commit to run beside this checkout")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("pytest_args", nargs="*", help="after --: more arguments for pytest")
    parser.add_argument("--quick", action="store_true", help="a smoke run on a few tests (.ci/run)")
    parser.add_argument("--slowest", type=int, metavar="N", default=0, help="the N tests that took most CPU")
    args = parser.parse_args()
    if args.quick:
        args.serial, args.against, args.rounds = False, None, 1
        args.pytest_args = ["-m", "not e2e", "-k", "conversation", *args.pytest_args]

    print(
        f"{os.cpu_count()} CPUs; python -m pytest -n auto{' (and serial)' if args.serial else ''}; "
        f"median of {args.rounds} round(s)"
    )
    with tempfile.TemporaryDirectory(prefix="formctl-suite-") as folder:
        other = None
        if args.against:
            other = Path(folder) / "against"
            subprocess.run(
                ["git", "worktree", "add", "--detach", "--quiet", str(other), args.against], cwd=ROOT, check=True
            )
        try:
            for checkout in [ROOT] if other is None else [ROOT, other]:
                warm_up(checkout, compile_tree=checkout != ROOT)
            # The commands issue 20 budgets (the in-process tests; the whole suite), or the one asked for.
            commands = [("not e2e", ["-m", "not e2e"]), ("whole suite", [])] if not args.pytest_args else [("", [])]
            for parallel, (name, selection) in itertools.product([True, False] if args.serial else [True], commands):
                mine: list[dict[str, float | str]] = []
                theirs: list[dict[str, float | str]] = []
                cpu_log = Path(folder) / "cpu.log" if args.slowest else None
                for _ in range(args.rounds):
                    if cpu_log is not None:
                        cpu_log.unlink(missing_ok=True)  # the last round's
                    mine.append(run_suite(ROOT, parallel, [*selection, *args.pytest_args], cpu_log))
                    if other is not None:
                        theirs.append(run_suite(other, parallel, [*selection, *args.pytest_args]))
                print(f"{'-n auto' if parallel else 'serial'}{', ' + name if name else ''}:")
                wall, cpu = report("this checkout", mine)
                if cpu_log is not None:
                    slowest(cpu_log, ROOT, args.slowest)
                if other is not None:
                    their_wall, their_cpu = report(args.against, theirs)
                    print(
                        f"  {'ratio this / ' + args.against:<28} wall {wall / their_wall:6.2f}     "
                        f"CPU {cpu / their_cpu:6.2f}"
                    )
        finally:
            if other is not None:
                subprocess.run(["git", "worktree", "remove", "--force", str(other)], cwd=ROOT, check=False)


if __name__ == "__main__":
    main()
