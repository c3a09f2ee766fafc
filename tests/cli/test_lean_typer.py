"""cli/_lean_typer.py leans on typer's private ``typer._coercion.RuntimeParam``: typer is pinned
to the range it was tested with (pyproject.toml), and these tests fail the moment the shim
stops taking effect on the installed typer, rather than the CLI silently paying for pydantic
on every start."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest
import typer

from clitools import ROOT
from formctl.cli import _lean_typer
from formctl.cli.app import app

# typer before 0.29 coerces through click's own types and never imports pydantic at start-up:
# there is nothing for the shim to do, and it does nothing.
TYPER_COERCES_WITH_PYDANTIC = importlib.util.find_spec("typer._coercion") is not None


def _params_of(command_name: str) -> list:
    group = typer.main.get_command(app)
    ctx = typer.Context(group)
    command = group.get_command(ctx, command_name)
    return command.get_params(typer.Context(command, parent=ctx))


@pytest.mark.skipif(not TYPER_COERCES_WITH_PYDANTIC, reason="this typer does not coerce through pydantic")
def test_on_a_typer_that_coerces_through_pydantic_every_plain_parameter_gets_the_light_coercion():
    assert _lean_typer._PlainParam is not None, "typer._coercion.RuntimeParam changed shape: the shim is off"
    params = [p for p in _params_of("instances") if getattr(p, "type_descriptor", None) is not None]
    assert params, "typer's parameters no longer carry type_descriptor: the shim is off"
    assert all(isinstance(p._runtime_param, _lean_typer._PlainParam) for p in params)


def _imports_pydantic(*args: str, env: dict[str, str] | None = None) -> bool:
    code = (
        "import atexit, sys; atexit.register(lambda: sys.stderr.write("
        "'\\nPYDANTIC\\n' if 'pydantic' in sys.modules else '\\nLEAN\\n'));"
        "from formctl.cli.app import main; main()"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        timeout=60,
    )
    last = done.stderr.strip().splitlines()[-1]
    assert last in ("PYDANTIC", "LEAN"), done.stderr
    return last == "PYDANTIC"


@pytest.mark.e2e
def test_list_with_an_option_and_tab_completion_run_without_pydantic():
    assert not _imports_pydantic("list", "--forms", str(ROOT / "forms"))
    assert not _imports_pydantic(
        env={"_FORMCTL_COMPLETE": "complete_bash", "COMP_WORDS": "formctl instances --st", "COMP_CWORD": "2"}
    )


def test_the_light_coercion_still_refuses_what_typer_would(cli):
    result = cli("instances", "--limit", "many")
    assert result.exit_code == 2 and "--limit" in result.output
