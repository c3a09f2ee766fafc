"""The layer contracts in pyproject.toml ([tool.importlinter]) hold, and would catch an upward import.

cli > eval > transcripts > agent > store > goals > forms, read "may import"; the agent never imports the
store. lint-imports also runs in .ci/run; these tests make a broken layer fail pytest too.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e  # every test here crosses a process boundary

pytest.importorskip("importlinter")

ROOT = Path(__file__).resolve().parents[2]


def lint_imports(root: Path, src: Path) -> subprocess.CompletedProcess[str]:
    """lint-imports with ``root``'s pyproject.toml, over the formctl package found under ``src``."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    code = (
        "import sys; from importlinter.cli import lint_imports_command; "
        "lint_imports_command.main(args=['--config', sys.argv[1], '--no-cache'], prog_name='lint-imports')"
    )
    return subprocess.run(
        [sys.executable, "-c", code, str(root / "pyproject.toml")],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the repository's pyproject.toml and src/formctl, to break on purpose."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copytree(
        ROOT / "src" / "formctl", tmp_path / "src" / "formctl", ignore=shutil.ignore_patterns("__pycache__")
    )
    return tmp_path


def test_the_source_keeps_every_layer_contract():
    result = lint_imports(ROOT, ROOT / "src")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_the_engine_importing_the_cli_breaks_the_layers(tree: Path):
    evaluate = tree / "src" / "formctl" / "forms" / "evaluate.py"
    evaluate.write_text(evaluate.read_text() + "\n\ndef _upward():\n    from formctl.cli import render  # noqa: F401\n")
    result = lint_imports(tree, tree / "src")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Layers: cli > eval > transcripts > agent > store > goals > forms BROKEN" in result.stdout
    assert "formctl.forms.evaluate -> formctl.cli.render" in result.stdout


def test_the_agent_importing_the_store_breaks_its_contract(tree: Path):
    tools = tree / "src" / "formctl" / "agent" / "tools.py"
    tools.write_text(tools.read_text() + "\n\nfrom formctl.store.memory import MemoryAdapter  # noqa: E402,F401\n")
    result = lint_imports(tree, tree / "src")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "The agent reads and writes through the runner, never the store BROKEN" in result.stdout


def test_the_cli_importing_the_store_outside_workspace_breaks_its_contract(tree: Path):
    session = tree / "src" / "formctl" / "cli" / "chat" / "session.py"
    session.write_text(
        session.read_text() + "\n\nfrom formctl.store.jsonfile import JsonFileAdapter  # noqa: E402,F401\n"
    )
    result = lint_imports(tree, tree / "src")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "formctl.cli.chat.session -> formctl.store.jsonfile" in result.stdout
    assert "The CLI opens the store in cli/workspace.py only" in result.stdout
