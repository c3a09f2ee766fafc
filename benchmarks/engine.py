"""The engine benchmark: one fixed, generated workload, run the way the TypeScript reference was.

The workload: a form of S steps of K fields (text, integer 0-1000, a three-way literal, email,
and an optional text gated on the literal), each step gated on the previous one, two
checkpoints; then a seeded list of operations (half multi-field fills, then revisions,
retractions, bare and named undo/redo; about 5% invalid values). The list is generated
here and checked against a sha256, so every run, and the reference figures below, see
the same operations.

Runs the generated operation list through ``FormRunner`` over ``MemoryAdapter`` (and, in
a second column, over ``JsonFileAdapter`` in a temporary folder), in separate processes,
and prints per-operation median / p95 / p99 microseconds, operations per second,
``start()`` time, ``tier0()`` and ``status()`` on the final instance (median of 200
calls), and the final instance's JSON size per revision. Figures are the median over
``--processes`` processes (5 by default), min–max in brackets.

    python benchmarks/engine.py                 # medium and large, memory and jsonfile
    python benchmarks/engine.py --variant medium --processes 3 --no-jsonfile
    python benchmarks/engine.py --quick         # medium, one process per store (.ci/run)
    python benchmarks/engine.py --variant medium --against f36b28f
    python benchmarks/engine.py --instructions --against f36b28f

``--against REV`` checks REV out into a temporary git worktree (removed afterwards) and runs
the same workload on its ``src`` in processes interleaved with this checkout's, so both see
the same machine; each figure is followed by the ratio this ÷ REV.

Timings on a shared two-core machine swing by tens of percent from one minute to the next.
``--instructions`` counts instead: it runs the medium workload over ``MemoryAdapter`` under
valgrind's callgrind (which must be installed), once with one pass of the operations and
once with three, and prints (three − one) ÷ 2, the instructions of one warm pass (imports
and warm-up cancel out). ``PYTHONHASHSEED`` is fixed, so a count repeats to within about
0.3%. Slow: about a minute per checkout.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Annotated, Literal

VARIANTS = {
    "medium": dict(
        S=8, K=5, seed=42, nops=2000, sha="7318a6f4fa0bbc6bb03c15237aa8f08b86494d8f8141cbedac4d3f67248f7a11"
    ),
    "large": dict(
        S=30, K=10, seed=4242, nops=5000, sha="9660ace8c57ef46760cd7db5f985df369428bb72cfd1bd50ab89a4cb4b0c0c8e"
    ),
}

REFERENCE = {  # the TypeScript reference implementation on the same workload, JIT-warm: a comparison figure
    "medium": dict(
        median_ms=0.468, p95_ms=1.01, wall_s=1.22, start_ms=2.2, tier0_ms=0.061, status_ms=0.065, bytes_per_rev=160
    ),
    "large": dict(
        median_ms=5.46, p95_ms=10.5, wall_s=31.3, start_ms=12.9, tier0_ms=1.27, status_ms=1.69, bytes_per_rev=None
    ),
}


# --------------------------------------------------------------------------- the workload (verbatim)


class Rng:
    def __init__(self, seed):
        self.x = seed % 2147483647
        if self.x <= 0:
            self.x += 2147483646

    def next(self):
        self.x = (self.x * 48271) % 2147483647
        return self.x

    def int(self, n):
        return self.next() % n


def field_id(g, nf):
    return f"s{g // nf}_f{g % nf}"


def gen_value(rng, g, nf):
    t = (g % nf) % 5
    invalid = rng.int(100) < 5
    if t == 0:
        return "x" if invalid else f"s{rng.int(100000)}"
    if t == 1:
        return str(rng.int(1001)) if invalid else rng.int(1001)
    if t == 2:
        return "z" if invalid else ["a", "b", "c"][rng.int(3)]
    if t == 3:
        return "not-an-email" if invalid else f"u{rng.int(100000)}@example.com"
    return "" if invalid else f"o{rng.int(100000)}"


def gen_ops(ns, nf, nops, seed):
    F = ns * nf
    rng = Rng(seed)
    P = 0
    written, seen = [], set()

    def mark(g):
        if g not in seen:
            seen.add(g)
            written.append(g)

    def pick():
        return written[rng.int(len(written))] if written else rng.int(F)

    ops = []
    for _ in range(nops):
        k = rng.int(100)
        if k < 50:
            c = 1 + rng.int(3)
            idxs = []
            if rng.int(100) < 20:
                raw = [rng.int(F) for _ in range(c)]
                for g in raw:
                    if g not in idxs:
                        idxs.append(g)
            else:
                idxs = [(P + j) % F for j in range(c)]
                P = (P + c) % F
            values = {}
            for g in idxs:
                values[field_id(g, nf)] = gen_value(rng, g, nf)
            for g in idxs:
                mark(g)
            ops.append({"op": "fill", "values": values})
        elif k < 70:
            g = pick()
            ops.append({"op": "set", "field": field_id(g, nf), "value": gen_value(rng, g, nf)})
            mark(g)
        elif k < 80:
            g = pick()
            ops.append({"op": "retract", "field": field_id(g, nf)})
            mark(g)
        else:
            kind = "undo" if k < 90 else "redo"
            if rng.int(2) == 0:
                ops.append({"op": kind})
            else:
                ops.append({"op": kind, "field": field_id(pick(), nf)})
    return ops


def build_form(S, K):
    from pydantic import EmailStr, Field

    from formctl import define_form

    b = define_form(
        f"bench-{S}x{K}",
        version=1,
        name=f"Bench form {S}x{K}",
        description="Synthetic benchmark form.",
        conduct="Ask one or two questions at a time.",
    )
    for i in range(S):
        gate = None if i == 0 else (lambda prev: lambda v, s: s.step_complete(prev))(f"step{i - 1}")
        b.step(f"step{i}", title=f"Step {i}", preview=f"section {i} details", when=gate)
        for p in range(K):
            t = p % 5
            schema = [
                Annotated[str, Field(min_length=2)],
                Annotated[int, Field(ge=0, le=1000)],
                Literal["a", "b", "c"],
                EmailStr,
                Annotated[str, Field(min_length=1)] | None,
            ][t]
            when = None
            if t == 4:
                enum_id = f"s{i}_f{p - 2}"
                when = (lambda e: lambda v, s: v[e] == "a")(enum_id)
            elif p == 1 and i > 0 and i % 3 == 0:
                prev = f"s{i - 1}_f2"
                when = (lambda e: lambda v, s: v[e] in ("a", "b"))(prev)
            b.field(f"s{i}_f{p}", schema, label=f"S{i} field {p}", when=when)
    b.checkpoint("big-int", when=lambda v, s: isinstance(v["s0_f1"], int) and v["s0_f1"] > 500, run=lambda ctx: None)
    half = f"step{S // 2 - 1}"
    b.checkpoint("half-done", when=lambda v, s: s.step_complete(half), run=lambda ctx: None)
    return b.build()


# --------------------------------------------------------------------------- one process


def _q(sorted_values, q):
    return sorted_values[max(0, math.ceil(q * len(sorted_values)) - 1)]


def new_runner(variant: str, adapter):
    """A runner over ``adapter`` with the variant's form registered, and the form's id (not started)."""
    from formctl import FormRegistry, FormRunner

    v = VARIANTS[variant]
    form_id = f"bench-{v['S']}x{v['K']}"
    registry = FormRegistry().register(form_id, name="bench", load=lambda: build_form(v["S"], v["K"]))
    return FormRunner(adapter, registry=registry, subject="bench", actor="bench", source="refbench"), form_id


def apply(runner, op: dict) -> None:
    """One operation of the list, through the runner's API."""
    kind = op["op"]
    if kind == "fill":
        runner.fill(op["values"])
    elif kind == "set":
        runner.revise(op["field"], op["value"])
    elif kind == "retract":
        runner.retract(op["field"])
    elif kind == "undo":
        runner.undo(op.get("field"))
    else:
        runner.redo(op.get("field"))


def run_once(variant: str, store: str) -> dict:
    from formctl import MemoryAdapter
    from formctl.forms.instance import instance_to_json

    v = VARIANTS[variant]
    ops = gen_ops(v["S"], v["K"], v["nops"], v["seed"])
    blob = json.dumps(ops, separators=(",", ":"), ensure_ascii=False)
    if hashlib.sha256(blob.encode()).hexdigest() != v["sha"]:
        raise SystemExit(f"{variant}: the generated operation list does not match its recorded sha256")

    def one_pass():
        tmp = None
        if store == "jsonfile":
            from formctl import JsonFileAdapter

            tmp = tempfile.TemporaryDirectory()
            adapter = JsonFileAdapter(tmp.name)
        else:
            adapter = MemoryAdapter()
        runner, form_id = new_runner(variant, adapter)
        t0 = time.perf_counter()
        runner.start(form_id)
        start_ms = (time.perf_counter() - t0) * 1000
        times = []
        errors = 0
        loop_start = time.perf_counter()
        for op in ops:
            t = time.perf_counter()
            try:
                apply(runner, op)
            except Exception:
                errors += 1
            times.append(time.perf_counter() - t)
        wall = time.perf_counter() - loop_start
        return runner, times, errors, wall, start_ms, tmp

    one_pass()  # cold pass (imports, first compile of everything); the warm pass is reported
    runner, times, errors, wall, start_ms, tmp = one_pass()
    finals = {}
    for name, fn in (("tier0", runner.tier0), ("status", runner.status)):
        samples = []
        for _ in range(200):
            t = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - t)
        finals[name] = statistics.median(samples) * 1000
    instance = runner.open_instance()
    size = len(json.dumps(instance_to_json(instance), separators=(",", ":"), ensure_ascii=False).encode())
    revisions = sum(len(log.revisions) for log in instance.entries.values())
    s = sorted(times)
    if tmp is not None:
        tmp.cleanup()
    return {
        "median_us": statistics.median(s) * 1e6,
        "p95_us": _q(s, 0.95) * 1e6,
        "p99_us": _q(s, 0.99) * 1e6,
        "wall_s": wall,
        "ops_per_s": len(s) / wall,
        "start_ms": start_ms,
        "tier0_ms": finals["tier0"],
        "status_ms": finals["status"],
        "bytes": size,
        "revisions": revisions,
        "bytes_per_rev": size / max(1, revisions),
        "errors": errors,
    }


def passes(variant: str, count: int) -> None:
    """The operations of ``variant`` ``count`` times over ``MemoryAdapter``, a new instance each
    time, nothing timed (what ``--instructions`` counts)."""
    from formctl import MemoryAdapter

    v = VARIANTS[variant]
    ops = gen_ops(v["S"], v["K"], v["nops"], v["seed"])
    for _ in range(count):
        runner, form_id = new_runner(variant, MemoryAdapter())
        runner.start(form_id)
        for op in ops:
            try:
                apply(runner, op)
            except Exception:
                pass


# --------------------------------------------------------------------------- driver

ROOT = Path(__file__).resolve().parent.parent


def _child(args: list[str], src: Path, prefix: list[str] | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    """Run this script with ``args`` in a new process that imports formctl from ``src``."""
    path = os.pathsep.join(filter(None, [str(src), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, **env, "PYTHONPATH": path}
    return subprocess.run(
        [*(prefix or []), sys.executable, __file__, *args], capture_output=True, text=True, check=True, env=env
    )


def instructions(src: Path, variant: str) -> float:
    """Instructions of one warm pass of ``variant`` with formctl from ``src`` (see ``--instructions``)."""
    counts = []
    with tempfile.TemporaryDirectory(prefix="formctl-callgrind-") as folder:
        for count in (1, 3):
            out = Path(folder) / f"callgrind.{count}"
            _child(
                ["--passes", variant, str(count)],
                src,
                prefix=["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"],
                PYTHONHASHSEED="0",
            )
            found = re.search(r"^summary: (\d+)$", out.read_text(), re.M)
            if found is None:
                raise SystemExit(f"callgrind wrote no summary to {out}")
            counts.append(int(found.group(1)))
    return (counts[1] - counts[0]) / 2


def _fmt(values, unit=""):
    med = statistics.median(values)
    return f"{med:,.3f}{unit} [{min(values):,.3f}–{max(values):,.3f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variant", choices=["medium", "large", "all"], default="all")
    parser.add_argument("--processes", type=int, default=5)
    parser.add_argument("--no-jsonfile", action="store_true", help="skip the JsonFileAdapter column")
    parser.add_argument("--quick", action="store_true", help="medium only, one process per store (.ci/run)")
    parser.add_argument("--against", metavar="REV", help="an older commit to run beside this checkout")
    parser.add_argument(
        "--instructions", action="store_true", help="count one pass's instructions under callgrind instead of timing"
    )
    parser.add_argument("--child", nargs=2, metavar=("VARIANT", "STORE"), help=argparse.SUPPRESS)
    parser.add_argument("--passes", nargs=2, metavar=("VARIANT", "COUNT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_once(*args.child)))
        return
    if args.passes:
        passes(args.passes[0], int(args.passes[1]))
        return
    if args.quick:
        args.variant, args.processes, args.against = "medium", 1, None
    if args.instructions and shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind (callgrind) on the PATH; none was found.")
    with tempfile.TemporaryDirectory(prefix="formctl-engine-") as folder:
        trees = [("this checkout", ROOT / "src")]
        if args.against:
            other = Path(folder) / "against"
            subprocess.run(
                ["git", "worktree", "add", "--detach", "--quiet", str(other), args.against], cwd=ROOT, check=True
            )
            trees.append((args.against, other / "src"))
        try:
            if args.instructions:
                _count(trees)
            else:
                _time(trees, args)
        finally:
            if args.against:
                subprocess.run(["git", "worktree", "remove", "--force", str(other)], cwd=ROOT, check=False)


def _count(trees: list[tuple[str, Path]]) -> None:
    counts = {}
    print("== medium, MemoryAdapter: instructions of one warm pass (callgrind, PYTHONHASHSEED=0) ==")
    for label, src in trees:
        counts[label] = instructions(src, "medium")
        print(f"  {label:<28} {counts[label] / 1e6:,.1f} M")
    if len(trees) == 2:
        (mine, theirs) = (counts[label] for label, _ in trees)
        print(f"  {'ratio this / ' + trees[1][0]:<28} {mine / theirs:.3f}")


def _time(trees: list[tuple[str, Path]], args: argparse.Namespace) -> None:
    variants = ["medium", "large"] if args.variant == "all" else [args.variant]
    stores = ["memory"] if args.no_jsonfile else ["memory", "jsonfile"]
    results: dict[tuple[str, str, str], list[dict]] = {
        (label, v, s): [] for label, _ in trees for v in variants for s in stores
    }
    # Interleaved (medium, large, medium, large, ...; this checkout, then REV), so that every
    # column sees the same machine load and the ratios compare like with like on a noisy machine.
    for _ in range(args.processes):
        for variant in variants:
            for store in stores:
                for label, src in trees:
                    out = _child(["--child", variant, store], src)
                    results[(label, variant, store)].append(json.loads(out.stdout.strip().splitlines()[-1]))
    figures = [
        ("per-op median", "median_us", 1 / 1000, " ms", "median_ms"),
        ("per-op p95", "p95_us", 1 / 1000, " ms", "p95_ms"),
        ("per-op p99", "p99_us", 1 / 1000, " ms", None),
        ("ops per second", "ops_per_s", 1, "", None),
        ("op-loop wall", "wall_s", 1, " s", "wall_s"),
        ("start()", "start_ms", 1, " ms", "start_ms"),
        ("tier0()", "tier0_ms", 1, " ms", "tier0_ms"),
        ("status()", "status_ms", 1, " ms", "status_ms"),
    ]
    for variant in variants:
        ref = REFERENCE[variant]
        print(f"\n== {variant} ({VARIANTS[variant]['nops']} ops; median over {args.processes} processes, min–max) ==")
        for store in stores:
            for label, _ in trees:
                runs = results[(label, variant, store)]
                col = lambda k, scale=1: [r[k] * scale for r in runs]  # noqa: E731
                print(f"-- {store}" + (f", {label}" if len(trees) > 1 else ""))
                for name, key, scale, unit, ref_key in figures:
                    line = f"  {name:<15} {_fmt(col(key, scale), unit)}"
                    if ref_key is not None:
                        line += f"   (reference {ref[ref_key]}{unit})"
                    print(line)
                print(
                    f"  instance JSON   {statistics.median(col('bytes')):,.0f} B, {statistics.median(col('revisions')):,.0f} revisions, "
                    f"{statistics.median(col('bytes_per_rev')):.1f} B/revision   (reference {ref['bytes_per_rev']} B/revision)"
                )
                print(f"  errors (undo/redo with nothing to move): {runs[0]['errors']}")
            if len(trees) == 2:
                print(f"-- {store}, ratio this / {trees[1][0]} (medians; below 1 is faster)")
                mine, theirs = (results[(label, variant, store)] for label, _ in trees)
                for name, key, _, _, _ in figures:
                    ratio = statistics.median(r[key] for r in mine) / statistics.median(r[key] for r in theirs)
                    pairs = [a[key] / b[key] for a, b in zip(mine, theirs)]
                    print(f"  {name:<15} {ratio:.2f}   (per interleaved pair {min(pairs):.2f}–{max(pairs):.2f})")
    if len(variants) == 2:
        for store in stores:
            mine = trees[0][0]
            m = statistics.median(r["median_us"] for r in results[(mine, "medium", store)])
            l = statistics.median(r["median_us"] for r in results[(mine, "large", store)])
            pairs = [
                lr["median_us"] / mr["median_us"]
                for mr, lr in zip(results[(mine, "medium", store)], results[(mine, "large", store)])
            ]
            print(
                f"\nlarge ÷ medium per-op median ({store}): {l / m:.2f}× "
                f"(per interleaved pair: median {statistics.median(pairs):.2f}×, "
                f"{min(pairs):.2f}–{max(pairs):.2f})   (reference 12×; target ≤ 3×)"
            )


if __name__ == "__main__":
    main()
