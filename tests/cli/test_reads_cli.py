"""What the read commands (``inspect``, ``export``, ``history``, ``--help``) show as their users meet
them: an unknown name is an error with the close one suggested, values print as typed, an
instance of an older form version is marked stale.
"""

from __future__ import annotations

import json
import shutil

import pytest

from clitools import FORMS, invoke


@pytest.mark.parametrize("option", ["--field", "--step"])
def test_inspect_of_an_unknown_field_or_step_is_an_error(cli, option):
    instance_id = cli.start()

    result = cli("inspect", instance_id, option, "emal")

    assert result.exit_code == 1
    assert result.stderr.startswith("error: ") and "emal" in result.stderr
    assert result.stdout == ""


def test_inspect_of_an_unknown_field_suggests_the_close_one(cli):
    instance_id = cli.start()

    result = cli("inspect", instance_id, "--field", "emal")

    assert "email" in result.stderr


# --------------------------------------------------------------------------- what the reads show


def test_export_heads_held_values_on_one_line(cli):
    instance_id = cli.start({"mode": "rail", "mileage": 40})

    result = cli("export", instance_id)

    assert result.exit_code == 0, result.stderr
    assert "held (not applicable now, kept)\n" in result.stdout
    assert "mileage" in result.stdout.split("held (not applicable now, kept)")[1]


def test_the_store_group_help_has_an_example():
    result = invoke("store", "--help")

    assert result.exit_code == 0
    assert "Example" in result.stdout and "formctl store check" in result.stdout


# --------------------------------------------------------------------------- brackets in values and titles


def test_values_and_reasons_with_square_brackets_print_as_typed(cli):
    instance_id = cli.start({"full_name": "Dana [x] Reeve", "destination": "[/]Paris", "purpose": "[bold]talk"})

    export = cli("export", instance_id)
    history = cli("history", instance_id, "destination")
    cli("abandon", instance_id, "--reason", "dup of [form_x]")
    listing = cli("instances")

    assert export.exit_code == 0, export.stderr
    assert "Dana [x] Reeve" in export.stdout and "[/]Paris" in export.stdout and "[bold]talk" in export.stdout
    assert history.exit_code == 0 and "[/]Paris" in history.stdout
    assert listing.exit_code == 0 and "dup of [form_x]" in listing.stdout


# --------------------------------------------------------------------------- a form whose version moved on


def test_reading_an_instance_of_an_older_form_version_shows_its_answers_marked_stale(tmp_path, cli):
    instance_id = cli.start({"full_name": "Dana Reeve"})  # on the example forms: version 1
    forms = tmp_path / "forms"
    shutil.copytree(FORMS, forms, ignore=shutil.ignore_patterns("__pycache__"))
    module = forms / "travel_claim.py"
    module.write_text(module.read_text().replace("version=1,", "version=2,", 1))
    v2 = cli.at(forms=forms)

    result = v2("inspect", instance_id)

    # Support staff read the answers without closing the form first: marked stale, with one
    # line on stderr saying how to move it to the registered version.
    assert result.exit_code == 0 and "Dana Reeve" in result.stdout and "stale" in result.stdout
    assert result.stderr.count("\n") == 1
    assert f"formctl migrate {instance_id}" in result.stderr

    exported = v2("export", instance_id, "--json")  # a read: it works
    assert exported.exit_code == 0
    assert (json.loads(exported.stdout)["status"], json.loads(exported.stdout)["values"]["full_name"]) == (
        "stale",
        "Dana Reeve",
    )
    v2("abandon", instance_id, "--reason", "form changed")
    after = v2("export", instance_id)
    assert after.exit_code == 0 and "Dana Reeve" in after.stdout and after.stderr == ""


# --------------------------------------------------------------------------- --help


@pytest.mark.parametrize("command", [["fill"], ["inspect"], ["history"], ["replay"], ["run"]])
def test_help_names_arguments_without_python_type_noise(command):
    result = invoke(*command, "--help")

    assert result.exit_code == 0
    assert "<str>" not in result.stdout and "<list[str]>" not in result.stdout
    assert "Example" in result.stdout


def test_history_marks_a_rejected_answer_in_words_not_only_in_red(cli):
    instance_id = cli.start({"staff_id": "AB1234"})
    cli("fill", instance_id, "staff_id=AB12")

    result = cli("history", instance_id, "staff_id")  # not a terminal: no colour at all

    (rejected,) = [line for line in result.stdout.splitlines() if " AB12 " in line or line.rstrip().endswith("AB12")]
    assert "rejected" in rejected
    (accepted,) = [line for line in result.stdout.splitlines() if "AB1234" in line]
    assert "rejected" not in accepted


def test_inspect_with_an_empty_field_name_speaks_the_commands_language(cli):
    instance_id = cli.start()

    result = cli("inspect", instance_id, "--field", "")

    assert result.exit_code == 2
    assert "--field" in result.stderr and "scope=" not in result.stderr
