"""Start-up time of the ``formctl`` command, as ratios to ``python -c pass`` and to a bare typer app.

    python benchmarks/startup.py [--runs 15] [--json] [--as-is] [--quick]

Measures the wall time of

* ``python -c pass``: the interpreter alone;
* ``bare typer app``: a one-command typer app (one ``str`` option, given on the command
  line), the floor for any typer CLI;
* ``formctl --help``, ``formctl list``, ``formctl inspect ID --json`` (on a travel-claim
  instance made in a temporary store), and a tab completion (``formctl ins<TAB>``);

interleaved (pass, bare, help, list, ..., pass, bare, ...), so a machine that slows down
part-way slows every command alike. Each figure is the median over ``--runs`` rounds; each
ratio is that median over the median of ``python -c pass`` and of the bare app in the same
run. Targets: ``formctl --help`` and ``formctl list`` at most 3x ``python -c pass``;
``formctl list`` and the completion under the bare typer app.

Both the console script and the bare app are started the same way, ``python -c "from
MODULE import ...; ..."`` with the module importable from a folder on ``PYTHONPATH``, so
their own code is read from the same bytecode cache: nothing is a ``__main__`` script
compiled afresh on every start. It also reports, from ``python -X importtime``, whether any
heavy module (pydantic, rich, prompt_toolkit, anthropic, openai, mcp, a form module) was imported.

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
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("pydantic", "rich", "prompt_toolkit", "anthropic", "openai", "mcp", "travel_claim", "client_intake", "asyncio")
TARGET = 3.0


# What the console script that pip writes does (less its ``argv[0]`` tidying).
FORMCTL = [sys.executable, "-c", "import sys; from formctl.cli.app import main; sys.exit(main())"]
BARE_APP = '''\
import typer

app = typer.Typer()


@app.command()
def hello(name: str = "world") -> None:
    """Greet someone."""
    print(f"hello {name}")
'''
BARE = [sys.executable, "-c", "from bare_typer_app import app; app()", "--name", "dana"]


def _wall(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def _heavy_imports(cmd: list[str], env: dict[str, str]) -> list[str]:
    out = subprocess.run(
        [cmd[0], "-X", "importtime", *cmd[1:]], cwd=ROOT, env=env, capture_output=True, text=True
    ).stderr
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
    return subprocess.run(
        [sys.executable, "-c", code, store], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    ).stdout.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="rounds (median taken) [15]")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--as-is", action="store_true", help="keep the environment's bytecode settings (PYTHONDONTWRITEBYTECODE)"
    )
    parser.add_argument("--quick", action="store_true", help="two rounds, for .ci/run")
    args = parser.parse_args()
    if args.quick:
        args.runs = 2

    env = dict(os.environ)
    env.pop("FORMCTL_STORE", None)
    env.pop("FORMCTL_FORMS", None)
    env["NO_COLOR"] = "1"
    with (
        tempfile.TemporaryDirectory() as store,
        tempfile.TemporaryDirectory() as pycache,
        tempfile.TemporaryDirectory() as bare,
    ):
        Path(bare, "bare_typer_app.py").write_text(BARE_APP)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (bare, env.get("PYTHONPATH", "")) if p)
        if not args.as_is:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = pycache
        instance = _make_instance(store, env)
        complete = {**env, "_FORMCTL_COMPLETE": "complete_bash", "COMP_WORDS": "formctl ins", "COMP_CWORD": "1"}
        commands: dict[str, tuple[list[str], dict[str, str]]] = {
            "python -c pass": ([sys.executable, "-c", "pass"], env),
            "bare typer app": (BARE, env),
            "formctl --help": ([*FORMCTL, "--help"], env),
            "formctl list": ([*FORMCTL, "list"], env),
            "formctl inspect ID --json": ([*FORMCTL, "inspect", instance, "--json", "--store", store], env),
            "formctl ins<TAB>": (FORMCTL, complete),
        }
        for cmd, cmd_env in commands.values():  # warm the page cache and the .pyc files
            _wall(cmd, cmd_env)
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, (cmd, cmd_env) in commands.items():
                times[name].append(_wall(cmd, cmd_env))
        heavy = {
            name: _heavy_imports(cmd, cmd_env) for name, (cmd, cmd_env) in commands.items() if name != "python -c pass"
        }

    base = statistics.median(times["python -c pass"])
    floor = statistics.median(times["bare typer app"])
    rows = []
    for name, samples in times.items():
        median = statistics.median(samples)
        rows.append(
            {
                "command": name,
                "median_ms": round(median * 1000, 1),
                "ratio": round(median / base, 2),
                "ratio_to_bare_typer": round(median / floor, 2),
                "heavy_imports": heavy.get(name, []),
            }
        )
    if args.json:
        print(
            json.dumps(
                {"runs": args.runs, "target_ratio": TARGET, "bytecode_cache": not args.as_is, "results": rows}, indent=2
            )
        )
    else:
        cache = "environment as is" if args.as_is else "with a bytecode cache"
        print(
            f"median of {args.runs} interleaved runs, {cache}; ratio to python -c pass "
            f"(target <= {TARGET}x for help and list) and to the bare typer app (target < 1 for list and TAB)"
        )
        for r in rows:
            flags = []
            if r["command"] in ("formctl --help", "formctl list"):
                flags.append("ok" if r["ratio"] <= TARGET else "OVER TARGET")
            if r["command"] in ("formctl list", "formctl ins<TAB>"):
                flags.append("under bare typer" if r["ratio_to_bare_typer"] < 1 else "NOT UNDER BARE TYPER")
            extra = f"  imports: {', '.join(r['heavy_imports'])}" if r["heavy_imports"] else ""
            print(
                f"  {r['command']:<28} {r['median_ms']:>7.1f} ms  {r['ratio']:>5.2f}x pass  "
                f"{r['ratio_to_bare_typer']:>5.2f}x bare  {'; '.join(flags)}{extra}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
