"""How the tests drive the ``formctl`` command: in process through typer's CliRunner
(:func:`invoke`), or as the real console entry point in a child process (:func:`formctl`).

Most tests take the ``cli`` fixture (tests/conftest.py), a :class:`Cli`: the store and the forms
are set once, through ``FORMCTL_STORE`` and ``FORMCTL_FORMS`` as a user's shell would set them,
so a test writes only the command it is about::

    def test_export_gives_the_values(cli):
        instance_id = cli.start({"full_name": "Dana Reeve"})
        assert cli.json("export", instance_id)["values"]["full_name"] == "Dana Reeve"

A test about ``--store`` or ``--forms`` themselves passes them explicitly (an option given on the
command line wins over the environment)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

# The example project (a temporary copy of tests/fixtures), never the checkout's ./forms.
from fixture_project import FORMS, ROOT  # noqa: E402
from formctl import FormRegistry, FormRunner, JsonFileAdapter

# The example travel claim's claimant and trip: as values (a seed, ``cli.start``), and as the
# lines a person types first into `formctl run travel-claim --offline`, which asks for them in
# this order. A test adds the rest of its claim (by car, by rail, under or over the cap).
CLAIMANT = {"full_name": "Dana Reeve", "staff_id": "AB1234", "email": "dana@example.org"}
TRIP = {"destination": "Leeds", "departure_date": "2026-03-02", "return_date": "2026-03-04", "purpose": "client visit"}
CLAIMANT_AND_TRIP = [*CLAIMANT.values(), *TRIP.values()]

# A car trip whose total (1204.50) is over the 750 cap, so the claim waits for approval at the end.
OVER_CAP_LINES = [*CLAIMANT_AND_TRIP, "car", "120", "skip", "skip", "1204.50"]


def invoke(*args: str, input: str | None = None, catch_exceptions: bool = True) -> Any:
    """``formctl ARGS`` in this process (the environment is cleaned by conftest's autouse fixture)."""
    from formctl.cli import app as cli

    return CliRunner().invoke(cli.app, list(args), input=input, catch_exceptions=catch_exceptions)


def start(store: str, seed: dict[str, Any] | None = None, *, subject: str = "dana", form: str = "travel-claim") -> str:
    """A new instance of a shipped form in ``store``; its id."""
    runner = FormRunner(
        JsonFileAdapter(store), registry=FormRegistry.from_toml(FORMS / "registry.toml"), subject=subject
    )
    return runner.start(form, seed=seed).view.instance_id


def formctl(*args: str, env: dict[str, str] | None = None, input: str | None = None, cwd: Path = ROOT):
    """The real console entry point in a child process, with the test's environment plus ``env``."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("FORMCTL_", "ANTHROPIC_"))}
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "formctl.cli.app", *args],
        capture_output=True,
        text=True,
        env=full_env,
        input=input,
        cwd=cwd,
        timeout=60,
    )


@dataclass(frozen=True)
class Cli:
    """``formctl`` against one store and one forms folder, given through the environment."""

    store: str
    forms: Path = FORMS

    @property
    def env(self) -> dict[str, str]:
        return {"FORMCTL_STORE": self.store, "FORMCTL_FORMS": str(self.forms)}

    def at(self, store: str | Path | None = None, forms: str | Path | None = None) -> Cli:
        """The same, with another store or another forms folder."""
        return Cli(str(store if store is not None else self.store), Path(forms) if forms is not None else self.forms)

    def __call__(self, *args: str, input: str | None = None, env: dict[str, str] | None = None, **kwargs: Any) -> Any:
        """``formctl ARGS`` in this process: typer's result (exit code, stdout, stderr)."""
        from formctl.cli import app as cli

        return CliRunner().invoke(cli.app, list(args), input=input, env={**self.env, **(env or {})}, **kwargs)

    def ok(self, *args: str, input: str | None = None, env: dict[str, str] | None = None) -> Any:
        """``formctl ARGS`` that must exit 0."""
        result = self(*args, input=input, env=env)
        assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
        return result

    def json(self, *args: str, input: str | None = None) -> Any:
        """``formctl ARGS --json`` that must exit 0, parsed."""
        return json.loads(self.ok(*args, "--json", input=input).stdout)

    def chat(self, *args: str, lines: list[str], env: dict[str, str] | None = None) -> str:
        """``formctl ARGS --offline`` (``run FORM …`` or ``resume ID``) with ``lines`` piped in, one per
        line, the guided model answering; it must exit 0. What it printed."""
        return str(self.ok(*args, "--offline", input="".join(f"{x}\n" for x in lines), env=env).stdout)

    def only_instance(self) -> str:
        """The id of the one instance in the store (the test expects exactly one)."""
        (row,) = self.json("instances")["instances"]
        return str(row["instance_id"])

    def values(self) -> dict[str, Any]:
        """The stored values of the one instance in the store, as ``export`` gives them."""
        return dict(self.json("export", self.only_instance())["values"])

    def process(
        self, *args: str, input: str | None = None, env: dict[str, str] | None = None, cwd: Path = ROOT
    ) -> subprocess.CompletedProcess[str]:
        """``formctl ARGS`` through the real console entry point, in a child process (an e2e test)."""
        return formctl(*args, input=input, env={**self.env, **(env or {})}, cwd=cwd)

    def start(self, seed: dict[str, Any] | None = None, *, subject: str = "dana", form: str = "travel-claim") -> str:
        """A new instance of a form in this store (through the runner, not the command); its id."""
        registry = FormRegistry.from_toml(self.forms / "registry.toml")
        runner = FormRunner(JsonFileAdapter(self.store), registry=registry, subject=subject)
        return runner.start(form, seed=seed).view.instance_id


def formctl_child(*args: str, env: dict[str, str] | None = None, **popen: Any) -> subprocess.Popen[Any]:
    """The real console entry point started in a child process that the test drives itself (writes
    its stdin line by line, signals it, hands it bytes), with the environment :func:`formctl`
    gives and Ctrl-C at its default (:func:`ctrl_c_at_default`); ``popen``:
    :class:`subprocess.Popen`'s own arguments (``stdin=subprocess.PIPE``, ``cwd``, ...)."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("FORMCTL_", "ANTHROPIC_"))}
    full_env.update(env or {})
    popen.setdefault("cwd", ROOT)
    popen.setdefault("preexec_fn", ctrl_c_at_default)
    return subprocess.Popen([sys.executable, "-m", "formctl.cli.app", *args], env=full_env, **popen)


def ctrl_c_at_default() -> None:
    """SIGINT back at its default, in a child between its fork and its exec (``preexec_fn`` of
    :class:`subprocess.Popen` and ``pexpect.spawn``): for every child a test sends Ctrl-C to.

    An ignored signal stays ignored across exec, and a shell that starts a command in the
    background without job control (``pytest ... &`` in a script, ``nohup``) starts it with SIGINT
    ignored. A Python child that starts with SIGINT ignored installs no KeyboardInterrupt handler
    and never sees the test's Ctrl-C, so every Ctrl-C test would fail in such a run. (Popen's
    ``restore_signals`` restores only SIGPIPE, SIGXFZ and SIGXFSZ.)"""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
