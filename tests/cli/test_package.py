"""formctl as a package a user installs and never clones: one version, the example forms inside
it (``formctl new --example``), ``formctl list`` in a folder with no forms yet, ``python -m
formctl``, shell completion, and a README that renders as the package's long description.

.ci/package builds the wheel and runs a new user's first session against it in an empty folder
(.ci/first_session.py); these tests hold the same behaviour from the source tree, on every run.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import formctl
from clitools import ROOT, invoke
from fixture_project import SOURCE

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = Path(formctl.__file__).parent / "examples"


def _one_line_error(result) -> str:
    assert result.exit_code == 1, (result.stdout, result.stderr)
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: "), result.stderr
    return result.stderr


# --------------------------------------------------------------------------- one version


def test_the_version_has_one_source_and_formctl_version_prints_it():
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"] and project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "formctl.__version__"}
    assert invoke("--version").stdout == f"formctl {formctl.__version__}\n"


def test_the_changelog_has_a_section_for_this_version():
    headings = re.findall(r"^## (\S+)", (REPO / "CHANGELOG.md").read_text(encoding="utf-8"), re.M)
    assert headings and headings[0] == formctl.__version__


@pytest.mark.e2e
def test_python_dash_m_formctl_is_the_formctl_command(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORMCTL_")}
    done = subprocess.run(
        [sys.executable, "-m", "formctl", "--version"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (0, f"formctl {formctl.__version__}\n"), done.stderr
    listing = subprocess.run(
        [sys.executable, "-m", "formctl", "list"], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60
    )
    assert listing.returncode == 1 and listing.stderr.startswith("error: No form registry")  # one line, no traceback


# --------------------------------------------------------------------------- a folder with no forms yet


def test_list_in_a_folder_without_forms_says_what_to_do_in_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    line = _one_line_error(invoke("list"))
    assert "formctl new FORM-ID" in line and "formctl new --example travel-claim" in line and "--forms" in line
    assert not (tmp_path / "forms").exists()  # nothing written by looking


def test_list_of_an_empty_registry_says_how_to_add_a_form(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "forms").mkdir()
    (tmp_path / "forms" / "registry.toml").write_text("# nothing yet\n", encoding="utf-8")
    result = invoke("list")
    assert result.exit_code == 0
    assert result.stdout == "no forms registered in forms/registry.toml: formctl new FORM-ID adds one\n"


# --------------------------------------------------------------------------- the examples


def test_the_packaged_examples_are_the_tested_example_forms():
    """The examples a user copies are the ones this suite runs against (tests/fixtures/forms)."""
    shipped = tomllib.loads((EXAMPLES / "registry.toml").read_text(encoding="utf-8"))
    tested = tomllib.loads((SOURCE / "forms" / "registry.toml").read_text(encoding="utf-8"))
    assert list(shipped["forms"]) == ["travel-claim", "client-intake"]
    for kind, entries in shipped.items():
        for key, entry in entries.items():
            assert entry == tested[kind][key], f"{kind}.{key}: copy tests/fixtures/forms/registry.toml's entry over"
            module = entry["module"].partition(":")[0] + ".py"
            assert (EXAMPLES / module).read_bytes() == (SOURCE / "forms" / module).read_bytes(), (
                f"src/formctl/examples/{module} is not the tested tests/fixtures/forms/{module}: copy it over"
            )


def test_new_example_copies_the_form_into_an_empty_project_and_it_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke("new", "--example", "travel-claim")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == [
        "created forms/travel_claim.py",
        "registered travel-claim in forms/registry.toml",
        "next: formctl check travel-claim and formctl run travel-claim --offline",
    ]
    assert (tmp_path / "forms" / "travel_claim.py").read_bytes() == (EXAMPLES / "travel_claim.py").read_bytes()
    registry = tomllib.loads((tmp_path / "forms" / "registry.toml").read_text(encoding="utf-8"))
    assert list(registry["forms"]) == ["travel-claim"] and "programs" not in registry
    assert invoke("list").stdout.startswith("travel-claim  Travel reimbursement claim")
    assert invoke("check", "travel-claim").exit_code == 0
    chat = invoke("run", "travel-claim", "--offline", input="Dana Reeve\n")
    assert chat.exit_code == 0 and "Got it — Full name: Dana Reeve." in chat.stdout


def test_an_example_with_a_goal_program_brings_it_and_joins_an_existing_registry(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert invoke("new", "expense-report").exit_code == 0
    before = (tmp_path / "forms" / "registry.toml").read_text(encoding="utf-8")
    result = invoke("new", "--example", "client-intake")
    assert result.exit_code == 0, result.stderr
    assert "created forms/client_intake_program.py" in result.stdout.splitlines()
    after = (tmp_path / "forms" / "registry.toml").read_text(encoding="utf-8")
    assert after.startswith(before)  # appended: the registry's comments and layout stay
    registry = tomllib.loads(after)
    assert list(registry["forms"]) == ["expense-report", "client-intake"] and list(registry["programs"]) == [
        "client-intake"
    ]
    assert invoke("check", "client-intake").exit_code == 0


def test_an_example_that_is_already_there_or_unknown_is_one_line_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert invoke("new", "--example", "travel-claim").exit_code == 0
    registry = (tmp_path / "forms" / "registry.toml").read_bytes()
    again = _one_line_error(invoke("new", "--example", "travel-claim"))
    assert 'A form "travel-claim" is already registered in forms/registry.toml' in again
    unknown = _one_line_error(invoke("new", "--example", "expenses"))
    assert 'No example "expenses": the examples are travel-claim, client-intake.' in unknown
    (tmp_path / "forms" / "client_intake.py").write_text("# mine\n", encoding="utf-8")
    in_the_way = _one_line_error(invoke("new", "--example", "client-intake"))
    assert "forms/client_intake.py already exists" in in_the_way
    assert (tmp_path / "forms" / "registry.toml").read_bytes() == registry
    assert (tmp_path / "forms" / "client_intake.py").read_text(encoding="utf-8") == "# mine\n"
    assert not (tmp_path / "forms" / "client_intake_program.py").exists()


def test_new_needs_an_id_or_an_example_not_both(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    neither = invoke("new")
    assert neither.exit_code == 2 and "--example" in neither.stderr
    both = invoke("new", "my-claim", "--example", "travel-claim")
    assert both.exit_code == 2 and "an example keeps its own id" in both.stderr
    assert not (tmp_path / "forms").exists()


def test_new_help_names_every_packaged_example():
    shipped = tomllib.loads((EXAMPLES / "registry.toml").read_text(encoding="utf-8"))
    help_text = " ".join(invoke("new", "--help").stdout.split())
    assert all(example in help_text for example in shipped["forms"])


# --------------------------------------------------------------------------- shell completion


@pytest.mark.e2e
@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_install_completion_gives_bash_a_completion_that_offers_form_ids(tmp_path):
    """What the README says: `formctl --install-completion`, a new shell, and Tab completes."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "formctl").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m formctl "$@"\n', encoding="utf-8")
    (bin_dir / "formctl").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORMCTL_")}
    env.update(HOME=str(tmp_path), SHELL="/bin/bash", PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}")
    # typer finds the shell among the process's ancestors (shellingham); a test run started in
    # the background has none (its parent is init), so name it, as typer's own tests do.
    env["_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION"] = "1"
    installed = subprocess.run(
        ["formctl", "--install-completion", "bash"], capture_output=True, text=True, env=env, cwd=ROOT, timeout=60
    )
    assert installed.returncode == 0 and "bash completion installed" in installed.stdout, installed.stderr
    assert "formctl.sh" in (tmp_path / ".bashrc").read_text(encoding="utf-8")
    tab = (
        'source "$HOME/.bash_completions/formctl.sh"; COMP_WORDS=(formctl run tr); COMP_CWORD=2; '
        '_formctl_completion formctl; printf "%s\\n" "${COMPREPLY[@]}"'
    )
    done = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", tab], capture_output=True, text=True, env=env, cwd=ROOT, timeout=60
    )
    assert done.stdout.split() == ["travel-claim"], done.stderr


# --------------------------------------------------------------------------- the README


def test_the_readmes_package_example_works_in_an_empty_folder(tmp_path, monkeypatch):
    from helpers.readme import blocks, section

    monkeypatch.chdir(tmp_path)
    (block,) = blocks(section("Install from a package"), "sh")
    ran = []
    for line in block.splitlines():
        command = line.split("  #")[0].strip()
        if command.startswith("formctl "):
            result = invoke(*shlex.split(command)[1:], input="Dana Reeve\n")
            assert result.exit_code == 0, (command, result.stdout, result.stderr)
            ran.append(command)
    assert (
        ran
        and (tmp_path / "forms" / "travel_claim.py").is_file()
        and (tmp_path / "forms" / "expense_report.py").is_file()
    )


def test_the_readme_links_only_what_resolves_on_the_package_index():
    """The README is the package's long description: on the index a relative link or image
    (docs/engine.md) resolves against the project's page and leads nowhere. Name such a file
    as code instead (`docs/engine.md`); link only absolute addresses and the README's own headings."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"!?\[[^\]]*\]\(([^)\s]+)", text) + re.findall(r"<img[^>]+src=[\"']([^\"']+)", text)
    relative = [t for t in targets if not t.startswith(("https://", "http://", "mailto:", "#"))]
    assert relative == []
