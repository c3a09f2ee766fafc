"""How the tests drive the ``formctl`` command: in process through typer's CliRunner
(:func:`invoke`), or as the real console entry point in a child process (:func:`formctl`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

# The example project (a temporary copy of tests/fixtures), never the checkout's ./forms.
from fixture_project import FORMS, ROOT  # noqa: E402
from formctl import FormRegistry, FormRunner, JsonFileAdapter


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
