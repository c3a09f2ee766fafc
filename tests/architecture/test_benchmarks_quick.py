"""Every script in benchmarks/ has a quick mode, and .ci/run runs each one in it, so a benchmark
that stops working fails the build (the quick runs themselves are in .ci/run, not here: together
they take minutes)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent
while not (ROOT / "pyproject.toml").exists():
    ROOT = ROOT.parent


def test_every_benchmark_takes_quick_and_ci_runs_every_script_in_the_folder():
    scripts = sorted((ROOT / "benchmarks").glob("*.py"))
    assert len(scripts) >= 9
    without = [s.name for s in scripts if not re.search(r"""add_argument\(\s*["']--quick["']""", s.read_text())]
    assert without == [], f"no --quick mode: {without}"
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^for bench in benchmarks/\*\.py; do$", ci, re.M)
    assert ci.count('"$bench" --quick') >= 1
