"""Replay throughput: transcripts replayed per second, exact and offline.

Three workloads, each replayed end to end as ``formctl replay`` does it (read and parse
the TOML, a fresh in-memory store, the real chat loop and tools, the scripted model,
normalise, compare every tool result and the end state):

* the shipped set (``transcripts/*.toml``);
* a generated twenty-turn travel claim (the target: at least 50 of these per second);
* a generated fifty-turn travel claim (corrections, status and "what else" turns).

The generated transcripts are recorded once with the guided model (``--live --update``)
in a temporary folder, then replayed. Figures are the median of ``--rounds`` rounds.

    python benchmarks/replay.py
    python benchmarks/replay.py --rounds 7
    python benchmarks/replay.py --quick         # one round, each workload replayed once (.ci/run)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from formctl.transcripts.format import load  # noqa: E402
from formctl.transcripts.replay import ReplayOptions, find_registry, replay_file  # noqa: E402

TARGET_PER_SECOND = 50  # twenty-turn transcripts


def _claim_turns(extra: int) -> list[str]:
    """A travel claim by car, answered one question at a time, ``extra`` more turns, the total,
    and "yes" to the read-back (a form is sent only when the person says so)."""
    turns = [
        "Dana Reeve",
        "AB1234",
        "dana.reeve@example.com",
        "Leeds",
        "2026-03-02",
        "2026-03-04",
        "Supplier audit",
        "car",
        "120",
        "skip",
        "skip",
    ]
    fillers = [
        "status",
        "what else",
        "Destination: York",
        "Destination: Leeds",
        "Purpose of trip: Supplier audit and review",
        "Purpose of trip: Supplier audit",
    ]
    turns += [fillers[i % len(fillers)] for i in range(extra)]
    turns += ["54", "yes"]
    return turns


def _write(path: Path, turns: list[str]) -> None:
    body = "".join(f'[[turns]]\ntext = "{t}"\n' for t in turns)
    path.write_text(f'format = 1\nform = "travel-claim"\nmodel = "guided"\n\n{body}\n[expect]\nstatus = "complete"\n')


def generate(folder: Path, registry) -> dict[str, Path]:
    out = {}
    for name, extra in (("twenty", 7), ("fifty", 37)):
        path = folder / f"{name}.toml"
        _write(path, _claim_turns(extra))
        result = replay_file(path, ReplayOptions(live=True, update=True), registry=registry)
        assert result.passed, result.diff
        # --update rewrites [expect]: check that the recording is the claim the turns describe
        expect = load(path).expect or {}
        if expect.get("status") != "complete" or expect.get("values", {}).get("full_name") != "Dana Reeve":
            raise SystemExit(f"the generated {name}-turn claim did not complete as scripted: {expect}")
        assert replay_file(path, registry=registry).passed
        out[name] = path
    return out


def rate(files: list[Path], registry, rounds: int, minimum_seconds: float = 0.5) -> tuple[float, float, float]:
    """(transcripts per second of wall time, per second of CPU time, ms each): the median round.

    CPU time is reported beside wall time because CI machines are shared: on a busy host
    the wall-clock rate measures the neighbours as much as the replay.
    """
    per_round, per_cpu = [], []
    for _ in range(rounds):
        n = 0
        started, cpu_started = time.perf_counter(), time.process_time()
        while True:
            for f in files:
                result = replay_file(f, registry=registry)
                if not result.passed:
                    raise SystemExit(f"{f} diverged:\n{result.diff}")
                n += 1
            elapsed = time.perf_counter() - started
            if elapsed >= minimum_seconds:
                break
        per_round.append(n / elapsed)
        per_cpu.append(n / max(time.process_time() - cpu_started, 1e-9))
    per_second = statistics.median(per_round)
    return per_second, statistics.median(per_cpu), 1000 / per_second


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="one round, each workload replayed once (.ci/run)")
    args = parser.parse_args()
    least = 0.0 if args.quick else 0.5  # seconds each round replays for
    if args.quick:
        args.rounds = 1

    shipped = sorted((ROOT / "transcripts").glob("*.toml"))
    registry = find_registry(shipped[0])
    for f in shipped:  # warm: compile the forms once, as a CI run does after its first transcript
        replay_file(f, registry=registry)
    with tempfile.TemporaryDirectory() as tmp:
        generated = generate(Path(tmp), registry)
        turns = {k: len(load(p).turns) for k, p in generated.items()}
        model_calls = {k: sum(len(t.iterations) for t in load(p).turns) for k, p in generated.items()}
        rows = [
            (
                f"shipped set ({len(shipped)} transcripts, {sum(len(load(f).turns) for f in shipped)} turns)",
                *rate(shipped, registry, args.rounds, least),
            ),
            (
                f"generated {turns['twenty']}-turn claim ({model_calls['twenty']} model calls)",
                *rate([generated["twenty"]], registry, args.rounds, least),
            ),
            (
                f"generated {turns['fifty']}-turn claim ({model_calls['fifty']} model calls)",
                *rate([generated["fifty"]], registry, args.rounds, least),
            ),
        ]
    print(f"{'workload':<58} {'per s (wall)':>13} {'per s (CPU)':>12} {'ms each':>8}")
    for label, per_second, per_cpu, ms in rows:
        print(f"{label:<58} {per_second:>13.1f} {per_cpu:>12.1f} {ms:>8.2f}")
    twenty, twenty_cpu = rows[1][1], rows[1][2]
    verdict = "meets" if twenty >= TARGET_PER_SECOND else "MISSES"
    print(
        f"\ntarget: at least {TARGET_PER_SECOND} twenty-turn transcripts per second offline — {verdict} "
        f"({twenty:.0f}/s wall, {twenty_cpu:.0f}/s of CPU time)"
    )


if __name__ == "__main__":
    main()
