"""The README's examples run as shown: its set-up names what it expects, its form compiles and
lints clean and runs, its scenario replays live against the guided model, its Python example
prints what its comments say."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fixture_project import FORMS
from helpers.readme import blocks, section


def formctl(*args: str, cwd: Path, input: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FORMCTL_", "ANTHROPIC_"))}
    return subprocess.run(
        [sys.executable, "-m", "formctl.cli.app", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        input=input,
        timeout=120,
    )


def test_the_set_up_names_python_3_11_and_a_virtual_environment_before_installing():
    setup = section("Set-up")
    assert "Python 3.11 or newer" in setup
    (commands,) = blocks(setup, "sh")
    lines = [line.split("#")[0].strip() for line in commands.splitlines()]
    assert lines[0] == "python3 -m venv .venv && . .venv/bin/activate"
    assert lines[1].startswith("python3 -m pip install -e '.[test]' && formctl run travel-claim")
    assert "ANTHROPIC_API_KEY" in setup and "switches" in setup and "--offline" in setup


@pytest.mark.e2e
def test_the_form_example_imports_only_what_it_uses_compiles_lints_clean_and_runs(tmp_path):
    (source,) = blocks(section("A form is Python code"), "python")
    tree = ast.parse(source)
    imported = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    assert imported <= used, f"imported and never used: {sorted(imported - used)}"

    forms = tmp_path / "forms"
    forms.mkdir()
    (forms / "travel_claim.py").write_text(source)
    (registry,) = blocks(section("A form is Python code"), "toml")
    (forms / "registry.toml").write_text(registry)
    checked = formctl("check", "travel-claim", "--strict", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "warning" not in checked.stdout and "error" not in checked.stdout
    ran = formctl(
        "run",
        "travel-claim",
        "--offline",
        "--store",
        "store",
        cwd=tmp_path,
        input="Dana Reeve\ndana@example.org\nrail\n120\n",
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    listed = formctl("instances", "--store", "store", "--status", "complete", "--json", cwd=tmp_path)
    assert '"travel-claim"' in listed.stdout, ran.stdout


@pytest.mark.e2e
def test_the_scenario_example_replays_live_against_the_guided_model(tmp_path):
    transcripts = section("Transcripts: conversations as regression tests")
    scenario = next(b for b in blocks(transcripts, "toml") if b.startswith("# hand-written/"))
    shutil.copytree(FORMS, tmp_path / "forms", ignore=shutil.ignore_patterns("__pycache__"))
    path = tmp_path / scenario.splitlines()[0].split()[1].rstrip(":")
    path.parent.mkdir()
    path.write_text(scenario)
    out = formctl("replay", str(path.relative_to(tmp_path)), "--live", "--offline", cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.splitlines()[-1] == "1 passed, 0 failed"


@pytest.mark.e2e
def test_the_python_example_prints_what_its_comments_say(tmp_path):
    (source,) = blocks(section("Using it from Python"), "python")
    shutil.copytree(FORMS, tmp_path / "forms", ignore=shutil.ignore_patterns("__pycache__"))
    out = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert out.returncode == 0, out.stderr
    printed = out.stdout.splitlines()
    promised = [
        line.split("# ", 1)[1].split("  (")[0]
        for line in source.splitlines()
        if line.startswith("print(") and "# " in line and "['" in line
    ]
    assert promised and printed[0] == promised[0]
