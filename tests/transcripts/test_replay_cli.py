"""``formctl replay`` through the real CLI entry point: what a CI log and a form author see."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import clitools
from fixture_project import FORMS, MILEAGE_GATE_WIDENED  # noqa: E402
from fixture_project import TRANSCRIPTS as SHIPPED


def invoke(*args: str):
    return clitools.invoke(*args, catch_exceptions=False)


def formctl(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """The console script in a fresh process: what a CI log shows, exit status included."""
    env = {k: v for k, v in os.environ.items() if k not in ("FORMCTL_FORMS", "ANTHROPIC_API_KEY")}
    return subprocess.run(
        [sys.executable, "-c", "from formctl.cli.app import main; main()", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
    )


def project_copy(tmp_path: Path, *names: str) -> Path:
    """A project folder with the example forms and some shipped transcripts."""
    shutil.copytree(FORMS, tmp_path / "forms", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "transcripts").mkdir()
    for name in names:
        shutil.copy(SHIPPED / f"{name}.toml", tmp_path / "transcripts" / f"{name}.toml")
    return tmp_path


def test_replaying_the_shipped_folder_passes_and_ends_with_the_summary_line():
    result = invoke("replay", str(SHIPPED))
    assert result.exit_code == 0, result.output
    count = len(list(SHIPPED.glob("*.toml")))
    assert result.output.strip().splitlines()[-1] == f"{count} passed, 0 failed"


@pytest.mark.e2e
def test_a_regression_in_a_form_fails_with_a_diff_a_form_author_can_read(tmp_path):
    project = project_copy(tmp_path, "held_after_correction", "what_else")
    form = project / "forms" / "travel_claim.py"
    form.write_text(form.read_text().replace(*MILEAGE_GATE_WIDENED))
    out = formctl("replay", "transcripts", cwd=project)
    assert out.returncode == 1, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert "FAILED  transcripts/held_after_correction.toml" in lines
    assert '  diverged at turn 5 (person: "Mode: rail", model call 1), step 3/4 "Travel":' in lines
    assert '      fields[mileage].status: recorded "held", now "filled"' in lines
    assert lines[-1] == "1 passed, 1 failed"


def test_update_accepts_the_new_behaviour_shows_what_changed_and_then_passes(cli, tmp_path, monkeypatch):
    # In process: the replay after the edit reads the edited form, as a new process would.
    project = project_copy(tmp_path, "held_after_correction")
    monkeypatch.chdir(project)
    form = project / "forms" / "travel_claim.py"
    form.write_text(form.read_text().replace(*MILEAGE_GATE_WIDENED))
    author = cli.at(forms=project / "forms")
    updated = author.ok("replay", "transcripts", "--update")
    assert "updated transcripts/held_after_correction.toml" in updated.stdout
    assert 'fields[mileage].status: recorded "held", now "filled"' in updated.stdout
    again = author.ok("replay", "transcripts")
    assert again.stdout.splitlines()[-1] == "1 passed, 0 failed"


def test_a_truncated_transcript_fails_with_its_line_and_the_others_still_run(tmp_path):
    good = tmp_path / "transcripts" / "ineligible_terminated.toml"
    good.parent.mkdir()
    shutil.copy(SHIPPED / "ineligible_terminated.toml", good)
    text = (SHIPPED / "what_else.toml").read_text()
    cut = text[: len(text) // 2]
    (tmp_path / "transcripts" / "what_else.toml").write_text(cut)
    result = invoke("replay", str(tmp_path / "transcripts"), "--forms", str(FORMS))
    assert result.exit_code == 1
    line = cut.count("\n") + 1
    assert f"what_else.toml, line {line}: " in result.output
    assert result.output.strip().splitlines()[-1] == "1 passed, 1 failed"


def test_junit_report_has_one_testcase_per_transcript_with_the_diff_as_the_failure(tmp_path):
    folder = tmp_path / "transcripts"
    folder.mkdir()
    shutil.copy(SHIPPED / "what_else.toml", folder / "what_else.toml")
    broken = (
        (SHIPPED / "ineligible_terminated.toml")
        .read_text()
        .replace('[expect]\nstatus = "abandoned"', '[expect]\nstatus = "complete"')
    )
    (folder / "ineligible_terminated.toml").write_text(broken)
    report = tmp_path / "out" / "junit.xml"
    result = invoke("replay", str(folder), "--forms", str(FORMS), "--junit", str(report))
    assert result.exit_code == 1
    suite = ET.parse(report).getroot().find("testsuite")
    assert suite.get("tests") == "2" and suite.get("failures") == "1"
    cases = {Path(c.get("name")).name: c for c in suite.findall("testcase")}
    assert cases["what_else.toml"].find("failure") is None
    failure = cases["ineligible_terminated.toml"].find("failure")
    assert 'status: recorded "complete", now "abandoned"' in failure.text


def test_coverage_reports_what_the_transcripts_never_exercised():
    result = invoke("replay", str(SHIPPED / "ineligible_terminated.toml"), "--coverage")
    assert result.exit_code == 0
    assert "client-intake (1 transcript): steps opened 1/4" in result.output
    assert "never steps opened: contact, new-client, returning-client" in result.output
    assert "never checkpoints fired: route, confirm" in result.output


def test_live_replay_grades_a_hand_written_transcript_with_the_guided_model(tmp_path):
    path = tmp_path / "transcripts" / "hand.toml"
    path.parent.mkdir()
    path.write_text(
        'format = 1\nform = "client-intake"\n[[turns]]\ntext = "hi"\n[[turns]]\ntext = "returning"\n'
        '[expect]\nstatus = "active"\nvalues = { client_type = "returning" }\n'
    )
    result = invoke("replay", str(path), "--live", "--forms", str(FORMS))
    assert result.exit_code == 0, result.output
    assert "ok      " in result.output and "(live)" in result.output


def test_no_transcripts_is_a_usage_error_on_stderr(tmp_path):
    result = clitools.invoke("replay", str(tmp_path))
    assert result.exit_code == 2
    assert "no transcripts" in result.output
