"""Start-up time of the ``formctl`` command, as ratios to ``python -c pass`` and to a bare typer app,
and the CPU a ``formctl`` process costs for the commands people (and the e2e tests) run most.

    python benchmarks/startup.py [--runs 15] [--json] [--as-is] [--quick] [--against TREE]

Measures the wall time and the CPU time (user + system, of the child process) of

* ``python -c pass``: the interpreter alone;
* ``bare typer app``: a one-command typer app (one ``str`` option, given on the command
  line), the floor for any typer CLI;
* ``formctl --help``, ``formctl list``, ``formctl inspect ID --json`` and ``formctl inspect ID``
  (on a travel-claim instance made in a temporary store), ``formctl history ID``,
  ``formctl check travel-claim``, and a tab completion (``formctl ins<TAB>``);
* ``formctl run travel-claim --offline`` with one answer piped in (a new store each time), and
  ``formctl run travel-claim --model anthropic:...`` with one message piped in, against a
  loopback Messages API in this process (``tests/fake_anthropic.py``: the real SDK, real HTTP);

interleaved (pass, bare, help, list, ..., pass, bare, ...), so a machine that slows down
part-way slows every command alike. Each figure is the median over ``--runs`` rounds; each
ratio is that median over the median of ``python -c pass`` and of the bare app in the same
run. Targets: ``formctl --help`` and ``formctl list`` at most 3x ``python -c pass``;
``formctl list`` and the completion under the bare typer app. On a shared machine the CPU
figures are the steadier ones: another process slows the wall clock more than it adds CPU.

``--against TREE``: also run every ``formctl`` command from another checkout's ``src`` (say
``git worktree add /tmp/before main``), interleaved in the same rounds, and print both CPU
figures and the change: before and after measured together, on the same machine state.

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
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

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


class Command:
    """One command to time: its argv, environment and piped input; ``fresh_store`` gives each run a
    new empty store folder (``--store`` last), so a chat always starts a new instance."""

    def __init__(
        self, argv: list[str], env: dict[str, str], stdin: str = "", *, fresh_store: bool = False, formctl: bool = True
    ) -> None:
        self.argv, self.env, self.stdin, self.fresh_store, self.formctl = argv, env, stdin, fresh_store, formctl

    def using(self, tree: str) -> Command:
        """The same command with ``formctl`` imported from ``tree``/src."""
        env = dict(self.env)
        env["PYTHONPATH"] = os.pathsep.join([str(Path(tree, "src")), *self.env.get("PYTHONPATH", "").split(os.pathsep)])
        return Command(self.argv, env, self.stdin, fresh_store=self.fresh_store, formctl=self.formctl)


def _measure(command: Command) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child: user + system) of one run; it must exit 0."""
    argv, store = command.argv, None
    if command.fresh_store:
        store = tempfile.mkdtemp(prefix="formctl-startup-")
        argv = [*argv, "--store", store]
    try:
        with tempfile.TemporaryFile() as err:
            start = time.perf_counter()
            child = subprocess.Popen(
                argv, cwd=ROOT, env=command.env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=err
            )
            assert child.stdin is not None
            child.stdin.write(command.stdin.encode())  # a line or two: well under a pipe's buffer
            child.stdin.close()
            _, status, usage = os.wait4(child.pid, 0)  # the child's own rusage, which Popen.wait() drops
            wall = time.perf_counter() - start
            child.returncode = os.waitstatus_to_exitcode(status)
            if child.returncode != 0:
                err.seek(0)
                raise RuntimeError(f"{' '.join(argv)} failed: {err.read().decode(errors='replace')[-500:]}")
    finally:
        if store is not None:
            shutil.rmtree(store, ignore_errors=True)
    return wall, usage.ru_utime + usage.ru_stime


def _heavy_imports(command: Command) -> list[str]:
    store = tempfile.mkdtemp(prefix="formctl-startup-") if command.fresh_store else None
    argv = [*command.argv, "--store", store] if store else command.argv
    try:
        out = subprocess.run(
            [argv[0], "-X", "importtime", *argv[1:]],
            cwd=ROOT,
            env=command.env,
            input=command.stdin,
            capture_output=True,
            text=True,
        ).stderr
    finally:
        if store is not None:
            shutil.rmtree(store, ignore_errors=True)
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


def _fake_anthropic() -> Any:
    """The loopback Messages API of the tests, answering every request with one short text."""
    sys.path.insert(0, str(ROOT / "tests"))
    from fake_anthropic import FakeAnthropic, text

    api = FakeAnthropic()
    api.answer_with(lambda body: ([text("Thanks. What is your staff ID?")], None))
    return api


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="rounds (median taken) [15]")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--as-is", action="store_true", help="keep the environment's bytecode settings (PYTHONDONTWRITEBYTECODE)"
    )
    parser.add_argument("--quick", action="store_true", help="two rounds, for .ci/run")
    parser.add_argument(
        "--against", metavar="TREE", help="another checkout whose src/ to measure in the same rounds (before/after)"
    )
    args = parser.parse_args()
    if args.quick:
        args.runs = 2

    env = dict(os.environ)
    for name in [n for n in env if n.startswith(("FORMCTL_", "ANTHROPIC_", "OPENAI_"))]:
        env.pop(name)
    env["NO_COLOR"] = "1"
    forms = str(ROOT / "forms")
    with (
        tempfile.TemporaryDirectory() as store,
        tempfile.TemporaryDirectory() as pycache,
        tempfile.TemporaryDirectory() as bare,
        _fake_anthropic() as api,
    ):
        Path(bare, "bare_typer_app.py").write_text(BARE_APP)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (bare, env.get("PYTHONPATH", "")) if p)
        if not args.as_is:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = pycache
        here = Command([], env).using(str(ROOT)).env  # this checkout's formctl, whatever is installed
        instance = _make_instance(store, here)
        complete = {**here, "_FORMCTL_COMPLETE": "complete_bash", "COMP_WORDS": "formctl ins", "COMP_CWORD": "1"}
        model = {**here, "ANTHROPIC_API_KEY": "sk-bench-0123456789", "ANTHROPIC_BASE_URL": api.url}
        on = ["--store", store, "--forms", forms]
        commands: dict[str, Command] = {
            "python -c pass": Command([sys.executable, "-c", "pass"], env, formctl=False),
            "bare typer app": Command(BARE, env, formctl=False),
            "formctl --help": Command([*FORMCTL, "--help"], here),
            "formctl list": Command([*FORMCTL, "list"], here),
            "formctl inspect ID --json": Command([*FORMCTL, "inspect", instance, "--json", *on], here),
            "formctl inspect ID": Command([*FORMCTL, "inspect", instance, *on], here),
            "formctl history ID": Command([*FORMCTL, "history", instance, *on], here),
            "formctl check travel-claim": Command([*FORMCTL, "check", "travel-claim", "--forms", forms], here),
            "formctl ins<TAB>": Command(FORMCTL, complete),
            "formctl run --offline, 1 answer": Command(
                [*FORMCTL, "run", "travel-claim", "--offline", "--forms", forms], here, "Dana Reeve\n", fresh_store=True
            ),
            "formctl run, anthropic, 1 turn": Command(
                [*FORMCTL, "run", "travel-claim", "--model", "anthropic:claude-bench", "--forms", forms],
                model,
                "Dana Reeve\n",
                fresh_store=True,
            ),
        }
        against = {
            name: c.using(args.against) for name, c in commands.items() if args.against is not None and c.formctl
        }
        for command in [*commands.values(), *against.values()]:  # warm the page cache and the .pyc files
            _measure(command)
        wall: dict[str, list[float]] = {name: [] for name in commands}
        cpu: dict[str, list[float]] = {name: [] for name in commands}
        cpu_against: dict[str, list[float]] = {name: [] for name in against}
        for _ in range(args.runs):
            for name, command in commands.items():
                seconds, used = _measure(command)
                wall[name].append(seconds)
                cpu[name].append(used)
                if name in against:
                    cpu_against[name].append(_measure(against[name])[1])
        heavy = {name: _heavy_imports(c) for name, c in commands.items() if name != "python -c pass"}

    base = statistics.median(wall["python -c pass"])
    floor = statistics.median(wall["bare typer app"])
    rows = []
    for name, samples in wall.items():
        median = statistics.median(samples)
        row: dict[str, Any] = {
            "command": name,
            "median_ms": round(median * 1000, 1),
            "cpu_ms": round(statistics.median(cpu[name]) * 1000, 1),
            "ratio": round(median / base, 2),
            "ratio_to_bare_typer": round(median / floor, 2),
            "heavy_imports": heavy.get(name, []),
        }
        if name in cpu_against:
            before = statistics.median(cpu_against[name])
            row["cpu_ms_against"] = round(before * 1000, 1)
            row["cpu_change"] = round(statistics.median(cpu[name]) / before - 1, 3)
        rows.append(row)
    if args.json:
        print(
            json.dumps(
                {
                    "runs": args.runs,
                    "target_ratio": TARGET,
                    "bytecode_cache": not args.as_is,
                    "against": args.against,
                    "results": rows,
                },
                indent=2,
            )
        )
    else:
        cache = "environment as is" if args.as_is else "with a bytecode cache"
        print(
            f"median of {args.runs} interleaved runs, {cache}; wall, CPU (user + sys), ratio of the wall to "
            f"python -c pass (target <= {TARGET}x for help and list) and to the bare typer app (target < 1 for "
            "list and TAB)" + (f"; CPU from {args.against} and the change" if args.against else "")
        )
        for r in rows:
            flags = []
            if r["command"] in ("formctl --help", "formctl list"):
                flags.append("ok" if r["ratio"] <= TARGET else "OVER TARGET")
            if r["command"] in ("formctl list", "formctl ins<TAB>"):
                flags.append("under bare typer" if r["ratio_to_bare_typer"] < 1 else "NOT UNDER BARE TYPER")
            extra = f"  imports: {', '.join(r['heavy_imports'])}" if r["heavy_imports"] else ""
            before = (
                f"  (against: {r['cpu_ms_against']:6.1f} ms, {r['cpu_change']:+.0%})" if "cpu_ms_against" in r else ""
            )
            print(
                f"  {r['command']:<32} {r['median_ms']:>7.1f} ms  cpu {r['cpu_ms']:>6.1f} ms{before}  "
                f"{r['ratio']:>5.2f}x pass  {r['ratio_to_bare_typer']:>5.2f}x bare  {'; '.join(flags)}{extra}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
