"""The README's examples run as shown: its set-up names what it expects, its form compiles and
lints clean and runs, its scenario replays live against the guided model, its Python example
prints what its comments say."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys

import pytest

from fixture_project import FORMS
from helpers.readme import blocks, section


def test_the_set_up_names_python_3_11_and_a_virtual_environment_before_installing():
    setup = section("Set-up")
    assert "Python 3.11 or newer" in setup
    (commands,) = blocks(setup, "sh")
    lines = [line.split("#")[0].strip() for line in commands.splitlines()]
    assert lines[0] == "python3 -m venv .venv && . .venv/bin/activate"
    assert lines[1].startswith("python3 -m pip install -e '.[test]' && formctl run travel-claim")
    assert "ANTHROPIC_API_KEY" in setup and "switches" in setup and "--offline" in setup


def test_the_form_example_imports_only_what_it_uses_compiles_lints_clean_and_runs(cli, tmp_path, monkeypatch):
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
    monkeypatch.chdir(tmp_path)
    here = cli.at(store=tmp_path / "store", forms=forms)  # in process: the README's form, not the example one
    checked = here.ok("check", "travel-claim", "--strict")
    assert "warning" not in checked.stdout and "error" not in checked.stdout
    ran = here.ok("run", "travel-claim", "--offline", input="Dana Reeve\ndana@example.org\nrail\n90\n120\n")
    listed = here("instances", "--status", "complete", "--json")
    assert '"travel-claim"' in listed.stdout, ran.stdout


def test_the_scenario_example_replays_live_against_the_guided_model(cli, tmp_path, monkeypatch):
    transcripts = section("Transcripts: conversations as regression tests")
    scenario = next(b for b in blocks(transcripts, "toml") if b.startswith("# hand-written/"))
    shutil.copytree(FORMS, tmp_path / "forms", ignore=shutil.ignore_patterns("__pycache__"))
    path = tmp_path / scenario.splitlines()[0].split()[1].rstrip(":")
    path.parent.mkdir()
    path.write_text(scenario)
    monkeypatch.chdir(tmp_path)
    out = cli.at(forms=tmp_path / "forms")("replay", str(path.relative_to(tmp_path)), "--live", "--offline")
    assert out.exit_code == 0, out.stdout + out.stderr
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
