"""The form author's loop, through the CLI and pytest itself: record, change, replay,
``--update`` without writing a lie, and transcripts as pytest items wherever they live.

The ``formctl`` commands run in this process (the ``cli`` fixture), in a project folder of the
test's own whose forms it edits between commands: the registry reads a form module from its
folder as the file is now, so an edited form is imported afresh as a new process would. Child
processes are kept where they are the point: pytest run on a copy of the checkout, and pytest
collecting the author's transcripts through the plugin's entry point."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

from fixture_project import FORMS  # noqa: E402
from fixture_project import TRANSCRIPTS as SHIPPED  # noqa: E402


@pytest.fixture
def author(cli, tmp_path, monkeypatch):
    """``formctl`` in a project at ``tmp_path`` (the working folder): ``./forms`` a copy of the
    example forms, ``./store`` its store."""
    shutil.copytree(FORMS, tmp_path / "forms", ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.chdir(tmp_path)
    return cli.at(store=tmp_path / "store", forms=tmp_path / "forms")


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new))


FULL_NAME = 'Annotated[str, Field(min_length=2)], label="Full name"'
TIGHTER = 'Annotated[str, Field(min_length=2, max_length=5)], label="Full name"'


def recorded(author, folder: str = "transcripts", model: str | None = None) -> Path:
    """A guided conversation recorded in the project by a piped ``formctl run --record``."""
    path = author.forms.parent / folder / "dana.toml"
    author.ok("run", "travel-claim", "--offline", "--record", str(path), input="Dana Reeve\nAB1234\n")
    if model is not None:  # as if a real model had spoken these turns
        edit(path, 'model = "guided"', f'model = "{model}"')
    return path


# --------------------------------------------------------------------------- --update never writes a lie


def test_update_of_a_guided_transcript_makes_its_turns_again_so_the_words_match_the_form(author):
    path = recorded(author)
    assert "Got it — Full name: Dana Reeve." in path.read_text()
    edit(author.forms / "travel_claim.py", FULL_NAME, TIGHTER)

    updated = author.ok("replay", "transcripts", "--update")
    assert "updated transcripts/dana.toml (the guided model's turns made again)" in updated.stdout
    assert 'fields[full_name].status: recorded "filled", now "invalid"' in updated.stdout
    assert "-Got it — Full name: Dana Reeve." in updated.stdout  # the diff shows the words that changed
    text = path.read_text()
    assert "Got it — Full name: Dana Reeve." not in text  # no reply claims a value the form refused
    assert "at most 5 characters" in text
    assert 'full_name = "Dana Reeve"' not in text.split("[expect]")[1]

    again = author("replay", "transcripts", "--update")
    assert again.exit_code == 0 and "ok      transcripts/dana.toml (guided) (unchanged)" in again.stdout
    assert path.read_text() == text  # a second --update is a no-op
    assert author("replay", "transcripts").exit_code == 0


def test_update_of_a_real_models_transcript_lists_the_replies_that_may_no_longer_fit(author):
    path = recorded(author, model="claude-sonnet-4-5")
    before = path.read_text()
    edit(author.forms / "travel_claim.py", FULL_NAME, TIGHTER)

    refused = author("replay", "transcripts", "--update")
    assert refused.exit_code == 1, refused.stdout
    lines = refused.stdout.splitlines()
    assert "FAILED  transcripts/dana.toml (not updated)" in lines
    assert 'fields[full_name].status: recorded "filled", now "invalid"' in refused.stdout
    assert (
        '    turn 2 (person: "Dana Reeve"), model call 2: "Got it — Full name: Dana Reeve.\\nStaff ID? '
        'Two capital letters and four digits, like AB1234."'
    ) in lines
    assert "      it saw a different result from form_fill" in lines
    assert "--update --accept-text" in refused.stdout
    assert path.read_text() == before  # nothing written

    accepted = author("replay", "transcripts", "--update", "--accept-text")
    assert accepted.exit_code == 0, accepted.stdout
    assert "updated transcripts/dana.toml (kept 3 model replies as recorded)" in accepted.stdout
    text = path.read_text()
    assert '"status": "invalid"' in text and 'model = "claude-sonnet-4-5"' in text
    again = author("replay", "transcripts", "--update")
    assert again.exit_code == 0 and "(unchanged)" in again.stdout
    assert path.read_text() == text
    assert author("replay", "transcripts").exit_code == 0


def test_accept_text_without_update_is_a_usage_error(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = cli("replay", str(SHIPPED), "--accept-text")
    assert out.exit_code == 2 and "--accept-text goes with --update" in out.stderr


# --------------------------------------------------------------------------- hand-written scenarios

SCENARIO = """\
# A claimant gives their details one answer at a time, then asks to stop.
format = 1
form = "travel-claim"

[[turns]]
text = "Dana Reeve"

[[turns]]
text = "AB1234"

[[turns]]
text = "dana@example.org"

[expect]
status = "active"
values = { full_name = "Dana Reeve", staff_id = "AB1234", email = "dana@example.org" }
"""


def test_a_hand_written_scenarios_first_line_is_an_answer_like_every_other(author):
    path = author.forms.parent / "scenarios" / "one_at_a_time.toml"
    path.parent.mkdir()
    path.write_text(SCENARIO)
    live = author.ok("replay", "scenarios", "--live", "--offline")
    assert "ok      scenarios/one_at_a_time.toml (live)" in live.stdout

    path.write_text(SCENARIO.replace('staff_id = "AB1234"', 'staff_id = "ZZ9999"'))
    wrong = author("replay", "scenarios", "--live", "--offline")
    assert wrong.exit_code == 1
    assert '    values.staff_id: expected "ZZ9999", got "AB1234"' in wrong.stdout.splitlines()


def test_live_update_records_the_opening_so_the_scenario_then_replays_exactly(author):
    path = author.forms.parent / "scenarios" / "one_at_a_time.toml"
    path.parent.mkdir()
    path.write_text(SCENARIO)
    assert author("replay", "scenarios", "--live", "--update").exit_code == 0
    text = path.read_text()
    assert text.index('text = "Hello."') < text.index('text = "Dana Reeve"')
    exact = author("replay", "scenarios")
    assert exact.exit_code == 0 and "ok      scenarios/one_at_a_time.toml" in exact.stdout.splitlines()


# --------------------------------------------------------------------------- transcripts are pytest items


@pytest.fixture
def author_project(pytester, tmp_path):
    """A pytester project with the example forms and transcripts in folders not named ``transcripts``."""
    shutil.copytree(FORMS, pytester.path / "forms", ignore=shutil.ignore_patterns("__pycache__"))
    mine = pytester.path / "transcripts_mine"
    mine.mkdir()
    for name in ("what_else", "rejected_then_fixed"):
        shutil.copy(SHIPPED / f"{name}.toml", mine / f"{name}.toml")
    examples = pytester.path / "examples"
    examples.mkdir()
    shutil.copy(SHIPPED / "ineligible_terminated.toml", examples / "ineligible.toml")
    (examples / "settings.toml").write_text('[tool]\nname = "not a transcript"\n')
    pytester.makepyfile(test_unit="def test_unit():\n    assert True\n")
    return pytester


def _run(pytester, *args: str):
    """pytest on the project, in this process (a child pytest costs a second and a half of start-up
    for nothing more: the form modules are the shipped ones, unchanged, and the plugin is loaded
    from its entry point either way; the end-to-end child pytest is in the whole-loop test below).

    hypothesis is imported here first: its pytest plugin imports it at the end of every session,
    and pytester drops what a run imported, so each run would import (and assert-rewrite) it
    afresh, a second of CPU each when this file runs alone."""
    import hypothesis  # noqa: F401

    env_forms = os.environ.pop("FORMCTL_FORMS", None)
    try:
        return pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:randomly", *args)
    finally:
        if env_forms is not None:
            os.environ["FORMCTL_FORMS"] = env_forms


def test_pytest_collects_transcripts_from_any_folder_given(author_project):
    result = _run(author_project, "--formctl-transcripts", "transcripts_mine")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*2 passed*"])


def test_naming_one_transcript_runs_that_one(author_project):
    result = _run(author_project, "--formctl-transcripts", "-v", "transcripts_mine/what_else.toml")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*transcripts_mine/what_else.toml::what_else PASSED*"])


def test_the_ini_option_collects_its_folders_and_globs_and_the_marker_selects_only_transcripts(author_project):
    author_project.makeini(
        textwrap.dedent("""\
        [pytest]
        formctl_transcripts = transcripts_mine examples/*.toml
    """)
    )
    everything = _run(author_project)
    everything.assert_outcomes(passed=4)  # the unit test, two transcripts, one example (settings.toml is not one)
    only = _run(author_project, "-m", "transcript")
    only.assert_outcomes(passed=3, deselected=1)


def test_the_ini_option_reads_a_list_from_pyproject(author_project):
    author_project.makepyprojecttoml(
        textwrap.dedent("""\
        [tool.pytest.ini_options]
        formctl_transcripts = ["transcripts_mine", "examples/*.toml"]
    """)
    )
    _run(author_project, "-m", "transcript").assert_outcomes(passed=3, deselected=1)


def test_a_failing_transcripts_report_is_the_replay_diff(author_project):
    broken = author_project.path / "transcripts_mine" / "rejected_then_fixed.toml"
    edit(broken, '[expect]\nstatus = "active"', '[expect]\nstatus = "complete"')
    result = _run(author_project, "--formctl-transcripts", "transcripts_mine")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*rejected_then_fixed.toml*", '*status: recorded "complete", now "active"*'])
    assert "Traceback" not in result.stdout.str()


def test_without_the_plugin_turned_on_no_toml_is_collected(author_project):
    result = _run(author_project, "transcripts_mine", "test_unit.py")
    result.assert_outcomes(passed=1)


# --------------------------------------------------------------------------- the suite never reads ./forms

REPO = Path(__file__).resolve().parents[2]
SHIPPED_EXAMPLES = Path(__file__).resolve().parents[1] / "fixtures"
ISOLATION_TESTS = (
    "tests/cli/test_cli.py::test_list_shows_the_registered_forms_and_json_gives_their_ids",
    "tests/cli/test_cli.py::test_list_reads_forms_from_the_current_folder_by_default",
    "tests/engine/test_registry.py::test_listing_the_shipped_registry_imports_no_form_module",
    "tests/transcripts/test_transcripts.py::test_every_shipped_transcript_replays_exactly",
    "tests/transcripts/test_replay_cli.py::test_replaying_the_shipped_folder_passes_and_ends_with_the_summary_line",
)


def checkout(tmp_path: Path, source: Path) -> Path:
    """A copy of the repository's tests and pyproject.toml, with ``source``'s forms and transcripts
    as its ``./forms`` and ``./transcripts``."""
    copy = tmp_path / "checkout"
    copy.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", ".pytest_cache")
    shutil.copytree(REPO / "tests", copy / "tests", ignore=ignore)
    for name in ("forms", "transcripts"):
        shutil.copytree(source / name, copy / name, ignore=ignore)
    shutil.copy(REPO / "pyproject.toml", copy / "pyproject.toml")
    return copy


# What a child pytest here does not load: plugins that other installed packages bring and that no
# test it runs uses. hypothesis's costs a pytest process about 1.1 CPU-s (it imports hypothesis as
# the session ends), anyio's and pytest-benchmark's about 0.3 (the repository's own addopts leave
# those two out too; `-o addopts=` drops them here); randomly would reorder the items.
QUIET_PLUGINS = ("-p", "no:hypothesispytest", "-p", "no:anyio", "-p", "no:benchmark", "-p", "no:randomly")


def pytest_in(folder: Path, *items: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FORMCTL_", "ANTHROPIC_"))}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-o", "addopts=", "-q", "-p", "no:cacheprovider", *QUIET_PLUGINS, *items],
        capture_output=True,
        text=True,
        cwd=folder,
        env=env,
        timeout=600,
    )


@pytest.mark.e2e
def test_the_suite_passes_in_a_checkout_whose_forms_were_scaffolded_edited_and_deleted(cli, tmp_path, monkeypatch):
    """The tests that once read ./forms (the registry listing, the shipped replays), run in a
    copy of the repository after a form author has been at work in its ./forms.

    The copy starts from the example forms as a fresh clone has them (``tests/fixtures``), not
    from this checkout's ``./forms``: that folder is the author's, and may already hold the form
    scaffolded here (a ``formctl new my-form`` in it once made this very test fail)."""
    copy = checkout(tmp_path, SHIPPED_EXAMPLES)
    monkeypatch.chdir(copy)
    cli.at(forms=copy / "forms").ok("new", "my-form")
    edit(copy / "forms" / "travel_claim.py", "version=1", "version=2")
    (copy / "forms" / "client_intake.py").unlink()
    out = pytest_in(copy, *ISOLATION_TESTS)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "5 passed" in out.stdout


@pytest.mark.e2e
def test_the_author_loop_test_passes_in_a_clone_where_the_author_scaffolded_the_same_form(cli, tmp_path, monkeypatch):
    """The README's promise, as a new author meets it: ``formctl new my-form`` in a fresh clone,
    then the suite. The test above scaffolds ``my-form`` too, in its own copy; it must not trip
    over the author's."""
    clone = checkout(tmp_path, SHIPPED_EXAMPLES)
    monkeypatch.chdir(clone)
    cli.at(forms=clone / "forms").ok("new", "my-form")
    item = "tests/transcripts/test_author_loop.py::test_the_suite_passes_in_a_checkout_whose_forms_were_scaffolded_edited_and_deleted"
    out = pytest_in(clone, item)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "1 passed" in out.stdout


# --------------------------------------------------------------------------- the whole loop


@pytest.mark.e2e
def test_the_form_authors_whole_loop_in_a_new_project(cli, tmp_path, monkeypatch):
    """new → edit → check → piped run --record → a deliberate change → replay fails naming the
    field → --update → replay passes → pytest, in a child process, collects the transcript from
    its own folder."""
    monkeypatch.chdir(tmp_path)
    author = cli.at(store=tmp_path / "store", forms=tmp_path / "forms")
    author.ok("new", "bug-report", "--name", "Bug report")
    module = tmp_path / "forms" / "bug_report.py"
    edit(
        module,
        '    .field("notes",',
        '    .field("summary", Annotated[str, Field(min_length=3)], label="Summary")\n    .field("notes",',
    )
    checked = author.ok("check", "bug-report", "--strict")
    assert "summary" in checked.stdout and "warning" not in checked.stdout

    author.ok(
        "run",
        "bug-report",
        "--offline",
        "--record",
        "regressions/crash.toml",
        input="Dana Reeve\ndana@example.org\nquestion\nApp crashes on save\nskip\nyes\n",
    )
    transcript = tmp_path / "regressions" / "crash.toml"
    assert 'status = "complete"' in transcript.read_text()
    assert author("replay", "regressions").exit_code == 0

    edit(module, 'Field(min_length=3)], label="Summary"', 'Field(min_length=3, max_length=15)], label="Summary"')
    failing = author("replay", "regressions")
    assert failing.exit_code == 1
    assert "fields[summary]" in failing.stdout  # the first divergence names the field (its type, here)

    updated = author("replay", "regressions", "--update")
    assert updated.exit_code == 0, updated.stdout
    assert "updated regressions/crash.toml (the guided model's turns made again)" in updated.stdout
    text = transcript.read_text()
    assert "Got it — Summary: App crashes on save" not in text  # the kept words would contradict the form
    # The refused summary is asked again, and the "yes" that sent the claim now answers it: not sent.
    assert 'status = "ready"' in text.split("[expect]")[1]
    passing = author("replay", "regressions")
    assert passing.exit_code == 0 and passing.stdout.splitlines()[-1] == "1 passed, 0 failed"

    env = {k: v for k, v in os.environ.items() if not k.startswith(("FORMCTL_", "ANTHROPIC_"))}
    collected = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-o",
            "addopts=",
            "-v",
            "-p",
            "no:cacheprovider",
            *QUIET_PLUGINS,
            "--formctl-transcripts",
            "regressions",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    assert collected.returncode == 0, collected.stdout + collected.stderr
    assert "regressions/crash.toml::crash PASSED" in collected.stdout
