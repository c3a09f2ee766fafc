"""``formctl new``: a scaffold checks whatever it is named, and says the next commands."""

from __future__ import annotations

import shutil

import pytest

from clitools import FORMS, invoke

# --------------------------------------------------------------------------- formctl new


@pytest.mark.parametrize("form_id", ["json", "email", "typing"])
def test_a_scaffold_named_like_a_python_module_still_checks(tmp_path, form_id):
    forms = tmp_path / "forms"
    shutil.copytree(FORMS, forms, ignore=shutil.ignore_patterns("__pycache__"))

    created = invoke("new", form_id, "--forms", str(forms))
    assert created.exit_code == 0, created.stderr

    checked = invoke("check", form_id, "--forms", str(forms))
    assert checked.exit_code == 0, checked.stderr


def test_new_with_a_forms_folder_says_the_next_commands_with_that_folder(tmp_path):
    forms = tmp_path / "myforms"

    result = invoke("new", "expense-report", "--forms", str(forms))

    assert result.exit_code == 0, result.stderr
    assert f"formctl check expense-report --forms {forms}" in result.stdout
    assert f"formctl run expense-report --forms {forms}" in result.stdout


def test_the_module_name_of_a_new_form_does_not_depend_on_what_the_process_imported(tmp_path):
    # A host serving two projects: the other project's expense_report module is loaded in this
    # process. The new form's module is named for this project alone, as in a fresh process.
    from formctl import FormRegistry

    other = tmp_path / "other" / "forms"
    assert invoke("new", "expense-report", "--forms", str(other)).exit_code == 0
    FormRegistry.from_toml(other / "registry.toml").load("expense-report")
    ours = tmp_path / "ours" / "forms"

    created = invoke("new", "expense-report", "--forms", str(ours))

    assert created.exit_code == 0, created.stderr
    assert (ours / "expense_report.py").exists() and not (ours / "expense_report_form.py").exists()
    assert 'module = "expense_report:expense_report"' in (ours / "registry.toml").read_text()
    assert invoke("check", "expense-report", "--forms", str(ours)).exit_code == 0
