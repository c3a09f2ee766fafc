"""Which forms a replay uses when none is named (docs/transcripts.md, "Which forms").

The current folder's ``forms/`` first, as every command; only without one, the nearest
``forms/`` above the transcript, no higher than its project root. A ``forms/`` that merely
sits above a transcript (a stray ``/tmp/forms``) must never win over the project's.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import clitools
from fixture_project import FORMS, MILEAGE_GATE_WIDENED
from fixture_project import TRANSCRIPTS as SHIPPED
from formctl.errors import TranscriptError
from formctl.transcripts.replay import find_registry

SHIPPED_ONE = SHIPPED / "held_after_correction.toml"


def _forms(folder: Path, *, empty: bool = False) -> Path:
    """A forms folder: the example forms, or a registry with no form in it."""
    if empty:
        folder.mkdir(parents=True)
        (folder / "registry.toml").write_text("# a stray registry: no form in it\n")
    else:
        shutil.copytree(FORMS, folder, ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def _transcript(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy(SHIPPED_ONE, folder / SHIPPED_ONE.name))


def test_the_current_folders_forms_win_over_a_stray_forms_folder_above_the_transcript(tmp_path, monkeypatch):
    _forms(tmp_path / "forms", empty=True)  # the stray one, nearest above the transcript
    transcript = _transcript(tmp_path / "somewhere" / "deep")
    project = tmp_path / "project"
    _forms(project / "forms")
    monkeypatch.chdir(project)

    registry = find_registry(transcript)

    assert registry.has("travel-claim")


def test_replay_passes_from_the_project_with_a_stray_forms_folder_above_the_transcript(tmp_path):
    # The conftest runs every test in the example project, whose ./forms is the right one.
    _forms(tmp_path / "forms", empty=True)
    transcript = _transcript(tmp_path / "elsewhere")

    result = clitools.invoke("replay", str(transcript))

    assert result.exit_code == 0, result.output
    assert result.output.strip().splitlines()[-1] == "1 passed, 0 failed"


def test_without_forms_in_the_current_folder_the_nearest_forms_above_the_transcript_is_used(tmp_path, monkeypatch):
    project = tmp_path / "project"
    _forms(project / "forms")
    transcript = _transcript(project / "transcripts" / "claims")
    empty = tmp_path / "cwd"
    empty.mkdir()
    monkeypatch.chdir(empty)

    result = clitools.invoke("replay", str(transcript))

    assert result.exit_code == 0, result.output


def test_the_walk_up_from_the_transcript_stops_at_its_project_root(tmp_path, monkeypatch):
    _forms(tmp_path / "forms")  # above the project: not the project's forms
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("[project]\nname = 'claims'\n")
    transcript = _transcript(project / "transcripts")
    empty = tmp_path / "cwd"
    empty.mkdir()
    monkeypatch.chdir(empty)

    with pytest.raises(TranscriptError, match="no forms registry found"):
        find_registry(transcript)
    result = clitools.invoke("replay", str(transcript))
    assert result.exit_code == 1
    assert "no forms registry found" in result.output
    assert "pass --forms DIR" in result.output


def test_a_named_forms_folder_is_the_only_one_looked_at(tmp_path):
    transcript = _transcript(tmp_path / "transcripts")  # the example project's ./forms would do

    with pytest.raises(TranscriptError, match=r"no forms registry at .*nowhere/registry\.toml"):
        find_registry(transcript, tmp_path / "nowhere")


def test_a_form_the_registry_lacks_names_the_registry_that_was_asked(tmp_path, monkeypatch):
    stray = _forms(tmp_path / "other" / "forms", empty=True)
    transcript = _transcript(tmp_path / "transcripts")
    monkeypatch.chdir(tmp_path / "other")

    result = clitools.invoke("replay", str(transcript))

    assert result.exit_code == 1
    assert (
        f"  cannot load form 'travel-claim': No form registered as \"travel-claim\" in "
        f"{(stray / 'registry.toml').resolve()}; pass --forms DIR for another forms folder."
    ) in result.output.splitlines()


def test_replay_help_says_where_the_forms_come_from():
    result = clitools.invoke("replay", "--help", catch_exceptions=False)

    assert result.exit_code == 0
    text = " ".join(result.output.split())
    assert "else ./forms as for every other command" in text
    assert "looking no higher than its project root" in text


def test_a_form_edited_between_two_replays_in_one_process_is_replayed_as_edited(tmp_path, monkeypatch):
    """Two ``formctl replay`` commands in one process (a host's, or the tests'): the second one
    replays against the form as the author left it, not the compile the first one made."""
    project = tmp_path / "project"
    _forms(project / "forms")
    transcript = _transcript(project / "transcripts")
    monkeypatch.chdir(project)
    assert clitools.invoke("replay", str(transcript)).exit_code == 0

    form = project / "forms" / "travel_claim.py"
    form.write_text(form.read_text().replace(*MILEAGE_GATE_WIDENED))
    result = clitools.invoke("replay", str(transcript))

    assert result.exit_code == 1, result.output
    assert 'fields[mileage].status: recorded "held", now "filled"' in result.output
