"""Start-up time of the ``formctl`` command, as ratios to ``python -c pass``.

    python benchmarks/startup.py [--runs 15] [--json]

Measures the wall time of

* ``formctl --help``
* ``formctl list``
* ``formctl inspect ID --json`` (on a travel-claim instance made in a temporary store)

each beside ``python -c pass`` in the same run, interleaved (pass, help, list, inspect,
pass, help, ...), so a machine that slows down part-way slows every command alike. Each
figure is the median over ``--runs`` rounds; the ratio is that median over the median of
``python -c pass``. The target is ``formctl --help`` and ``formctl list`` at most 3x.

The console script is run through the interpreter that runs this file
(``python -m formctl.cli.app`` would add runpy's own imports), with the repository as the
working directory so ``./forms/registry.toml`` is found as a user would have it.
It also reports, from ``python -X importtime``, whether any heavy module (pydantic,
rich, prompt_toolkit, anthropic, a form module) was imported by each command.

Bytecode: by default every command (``python -c pass`` too) runs with a bytecode cache
in a temporary folder (``PYTHONPYCACHEPREFIX``), as an installed package has; an
environment with ``PYTHONDONTWRITEBYTECODE=1`` would otherwise recompile formctl's
sources on every start, which no user's install does. ``--as-is`` measures the
environment exactly as it is instead.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("pydantic", "rich", "prompt_toolkit", "anthropic", "travel_claim", "client_intake", "asyncio")
TARGET = 3.0


def _console_script() -> list[str]:
    """The installed ``formctl`` script run by this interpreter, or the module if not installed."""
    script = Path(sys.executable).with_name("formctl")
    if script.exists():
        return [sys.executable, str(script)]
    found = shutil.which("formctl")
    if found:
        return [sys.executable, found]
    return [sys.executable, "-m", "formctl.cli.app"]


def _wall(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def _heavy_imports(cmd: list[str], env: dict[str, str]) -> list[str]:
    out = subprocess.run([cmd[0], "-X", "importtime", *cmd[1:]], cwd=ROOT, env=env,
                         capture_output=True, text=True).stderr
    roots = set()
    for line in out.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name.split(".")[0] in HEAVY:
                roots.add(name.split(".")[0])
    return sorted(roots)


def _make_instance(store: str, env: dict[str, str]) -> str:
    code = (
        "import sys; sys.path.insert(0, 'forms');"
        "from formctl import FormRegistry, FormRunner, JsonFileAdapter;"
        "r = FormRunner(JsonFileAdapter(sys.argv[1]), registry=FormRegistry.from_toml('forms/registry.toml'), subject='bench');"
        "res = r.start('travel-claim', seed={'full_name': 'Dana Reeve', 'staff_id': 'AB1234', 'email': 'dana@example.org',"
        " 'destination': 'Leeds', 'departure_date': '2026-03-02'});"
        "print(res.view.instance_id)"
    )
    return subprocess.run([sys.executable, "-c", code, store], cwd=ROOT, env=env, capture_output=True, text=True,
                          check=True).stdout.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="rounds (median taken) [15]")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--as-is", action="store_true",
                        help="keep the environment's bytecode settings (PYTHONDONTWRITEBYTECODE)")
    args = parser.parse_args()

    env = dict(os.environ)
    env.pop("FORMCTL_STORE", None)
    env.pop("FORMCTL_FORMS", None)
    env["NO_COLOR"] = "1"
    formctl = _console_script()
    with tempfile.TemporaryDirectory() as store, tempfile.TemporaryDirectory() as pycache:
        if not args.as_is:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = pycache
        instance = _make_instance(store, env)
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "formctl --help": [*formctl, "--help"],
            "formctl list": [*formctl, "list"],
            "formctl inspect ID --json": [*formctl, "inspect", instance, "--json", "--store", store],
        }
        for cmd in commands.values():  # warm the page cache and the .pyc files
            _wall(cmd, env)
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, cmd in commands.items():
                times[name].append(_wall(cmd, env))
        heavy = {name: _heavy_imports(cmd, env) for name, cmd in commands.items() if name != "python -c pass"}

    base = statistics.median(times["python -c pass"])
    rows = []
    for name, samples in times.items():
        median = statistics.median(samples)
        rows.append({"command": name, "median_ms": round(median * 1000, 1), "ratio": round(median / base, 2),
                     "heavy_imports": heavy.get(name, [])})
    if args.json:
        print(json.dumps({"runs": args.runs, "target_ratio": TARGET, "bytecode_cache": not args.as_is,
                          "results": rows}, indent=2))
    else:
        cache = "environment as is" if args.as_is else "with a bytecode cache"
        print(f"median of {args.runs} interleaved runs, {cache}; "
              f"ratio to python -c pass (target <= {TARGET}x for help and list)")
        for r in rows:
            flag = ""
            if r["command"] in ("formctl --help", "formctl list"):
                flag = "  ok" if r["ratio"] <= TARGET else "  OVER TARGET"
            extra = f"  imports: {', '.join(r['heavy_imports'])}" if r["heavy_imports"] else ""
            print(f"  {r['command']:<28} {r['median_ms']:>7.1f} ms  {r['ratio']:>5.2f}x{flag}{extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
