"""``formctl eval``: the table, --json, --junit, the exit status, a failed run's regression
command, and one-line errors, in process through the ``cli`` fixture; through the real console
entry point (e2e), Ctrl-C reporting the runs that finished and the progress bar in a terminal."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from clitools import ctrl_c_at_default
from fixture_project import FORMS

REPO = Path(__file__).resolve().parents[2]
TERSE = REPO / "scenarios" / "travel_claim" / "terse_rail.toml"
WAIT = REPO / "scenarios" / "travel_claim" / "over_cap_approved.toml"


def test_eval_prints_the_table_and_one_line_per_model(cli, tmp_path):
    done = cli(
        "eval", str(TERSE), str(WAIT), "--model", "guided", "--runs", "2", "--record-dir", str(tmp_path / "runs")
    )
    assert done.exit_code == 0, done.stderr
    out = done.stdout
    assert "formctl eval · 2 runs per scenario · person: scripted" in out
    assert "travel_claim/terse_rail" in out and "travel_claim/over_cap_approved" in out
    assert "pass^2" in out
    summary = [line for line in out.splitlines() if line.startswith("guided: ")]
    assert len(summary) == 1
    assert summary[0].startswith("guided: pass^1 100%, pass^2 100% over 2 scenarios (4/4 runs passed); 0 invented")
    assert sorted(p.name for p in (tmp_path / "runs" / "travel_claim" / "terse_rail").iterdir()) == [
        "guided-1.toml",
        "guided-2.toml",
    ]


def test_eval_json_follows_the_documented_schema_and_junit_is_written(cli, tmp_path):
    junit = tmp_path / "eval.xml"
    done = cli(
        "eval", str(TERSE), "--model", "guided", "--runs", "3", "--json", "--junit", str(junit),
        "--record-dir", str(tmp_path / "runs"),
    )  # fmt: skip
    assert done.exit_code == 0, done.stderr
    report = json.loads(done.stdout)
    assert set(report) == {"format", "k", "person", "models", "scenarios", "runs", "record_dir"}
    assert report["format"] == 2 and report["k"] == 3 and report["person"] == "scripted"
    (model,) = report["models"]
    assert model["model"] == "guided" and model["pass_1"] == 1.0 and model["pass_k"] == 1.0
    assert model["turns_per_completed_form"] == 14.0 and model["model_calls_per_completed_form"] == 28.0
    assert model["tokens"] == {
        "input_tokens": 0,
        "output_tokens": 0,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0,
    }
    (row,) = report["scenarios"]
    assert row["values"] == {"right": 30, "wrong": 0, "missing": 0} and row["runs"] == 3 and row["passed"] == 3
    run = report["runs"][0]
    assert set(run) >= {
        "scenario",
        "model",
        "run",
        "passed",
        "status",
        "problems",
        "values",
        "invented",
        "invention_attempts",
        "turns",
        "model_calls",
        "sdk_retries",
        "tool_calls",
        "tool_errors",
        "tokens",
        "person_tokens",
        "cost_usd",
        "seconds",
        "transcript",
        "error",
        "expected",
        "stored",
        "conversation",
    }
    assert Path(run["transcript"]).is_file()
    suite = ET.parse(junit).getroot()
    assert suite.get("tests") == "1" and suite.get("failures") == "0"


def test_a_failed_run_exits_1_and_its_transcript_replays_as_a_regression_test(cli, tmp_path):
    wrong = tmp_path / "wrong_total.toml"
    text = TERSE.read_text(encoding="utf-8").replace("total = 212.4", "total = 221.4")
    # a line of the persona's holds 221.4 (else the scenario is refused before it runs), never asked for
    text += '\n[[persona.facts]]\ntopic = "an aside nobody asks about"\nsays = "221.40"\n'
    wrong.write_text(text, encoding="utf-8")
    junit = tmp_path / "eval.xml"
    done = cli("eval", str(wrong), "--model", "guided", "--junit", str(junit), "--record-dir", str(tmp_path / "runs"))
    assert done.exit_code == 1
    lines = done.stdout.splitlines()
    at = lines.index(next(line for line in lines if line.startswith("FAILED ")))
    assert lines[at + 1] == "  values.total: expected 221.4, got 212.4"
    command = next(line for line in lines if line.startswith("  as a regression test: "))
    argv = command.split(": ", 1)[1].split()
    assert argv[:2] == ["formctl", "replay"] and argv[3:] == ["--live", "--offline"]
    again = cli(*argv[1:])
    assert again.exit_code == 1
    assert "values.total: expected 221.4, got 212.4" in again.stdout
    failure = ET.parse(junit).getroot().find(".//failure")
    assert failure is not None and "values.total: expected 221.4, got 212.4" in failure.get("message")


@pytest.mark.parametrize(
    "args, message",
    [
        (["--model", "openai-ish:thing"], "Unknown model"),
        (["--model", "anthropic:claude-sonnet-4-6"], "needs ANTHROPIC_API_KEY"),
        (["--model", "claude-sonnet-4-6"], "no model key is set"),  # never the guided model under its name
        ([], "name a model to evaluate"),
        (["--model", "guided", "--person-model", "guided"], "cannot play a person"),
    ],
)
def test_eval_refuses_what_cannot_run_in_one_line(cli, args, message):
    done = cli("eval", str(TERSE), *args)
    assert done.exit_code in (1, 2)
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert done.stdout == ""


def test_a_scenario_naming_a_missing_field_is_one_line_before_any_run(cli, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(TERSE.read_text(encoding="utf-8").replace("staff_id =", "staf_id ="), encoding="utf-8")
    done = cli("eval", str(bad), "--model", "guided", "--record-dir", str(tmp_path / "r"))
    assert done.exit_code == 1
    assert done.stderr.strip() == (
        f"error: {bad}: `expect.values.staf_id`: the form travel-claim has no field 'staf_id' (did you mean staff_id?)"
    )
    assert not (tmp_path / "r").exists()


def test_the_readme_command_runs_on_a_fresh_clone_and_prints_the_table(cli, tmp_path, monkeypatch):
    """The README's first eval command, as written, from the top of a checkout (its forms/ and
    scenarios/): no --forms and no FORMCTL_FORMS, so ./forms."""
    import re
    import shutil

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("\n## Eval:") : readme.index("\n## ", readme.index("\n## Eval:") + 1)]
    first = re.findall(r"```sh\n(.*?)```", section, flags=re.S)[0].splitlines()[0].split("#")[0].split()
    assert first == [
        "formctl", "eval", "scenarios/", "--model", "guided", "--runs", "3", "--jobs", "4", "--html", "report.html",
        "--min-pass", "0.9",
    ]  # fmt: skip
    clone = tmp_path / "clone"
    shutil.copytree(REPO / "scenarios", clone / "scenarios")
    shutil.copytree(FORMS, clone / "forms", ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.chdir(clone)
    done = cli(*first[1:], env={"FORMCTL_FORMS": None})
    assert done.exit_code == 0, done.stderr  # the guided model passes them all: the gate is met
    assert "formctl eval · 3 runs per scenario · person: scripted" in done.stdout
    assert "pass^3" in done.stdout and "travel_claim/over_cap_approved" in done.stdout
    assert re.search(r"^guided: pass\^1 \d+%, pass\^3 \d+% over 15 scenarios", done.stdout, flags=re.M)
    assert (clone / ".formctl" / "eval").is_dir()  # the runs' transcripts
    assert "gate: guided pass^1 100.0% ≥ 90.0% (--min-pass): met" in done.stdout
    page = (clone / "report.html").read_text(encoding="utf-8")
    assert page.startswith("<!doctype html>") and "45 of 45 runs passed" in page


@pytest.mark.e2e
def test_ctrl_c_reports_the_runs_that_finished(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    env = {k: v for k, v in os.environ.items() if not k.startswith(("FORMCTL_", "ANTHROPIC_"))}
    runs = tmp_path / "runs"
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "formctl.cli.app",
            "eval",
            str(REPO / "scenarios"),
            "--model",
            "guided",
            "--runs",
            "3",
            "--forms",
            str(FORMS),
            "--record-dir",
            str(runs),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=ctrl_c_at_default,
    )
    deadline = time.monotonic() + 60
    while not list(runs.rglob("guided-2.toml")) and time.monotonic() < deadline:  # a run or two finished
        time.sleep(0.05)
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=60)
    assert child.returncode == 130, err
    finished = int(err.split("interrupted: ")[1].split()[0])
    assert 1 <= finished < 45 and f"interrupted: {finished} of 45 runs finished" in err
    assert "formctl eval · 3 runs per scenario" in out
    assert f"({finished - out.count('FAILED ')}/{finished} runs passed)" in out


@pytest.mark.e2e
def test_in_a_terminal_a_progress_bar_counts_the_runs(tmp_path):
    import os

    from helpers.terminal import close, spawn

    pexpect = pytest.importorskip("pexpect")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FORMCTL_", "ANTHROPIC_"))}
    env.update(TERM="xterm-256color", COLUMNS="160")
    child = spawn(
        [
            "-m",
            "formctl.cli.app",
            "eval",
            str(REPO / "scenarios" / "travel_claim"),
            "--model",
            "guided",
            "--forms",
            str(FORMS),
            "--record-dir",
            str(tmp_path / "runs"),
        ],
        env,
        cwd=os.getcwd(),
        dimensions=(40, 160),
        timeout=90,
    )
    try:
        child.expect(r"eval .*0/8")  # the bar, before the first run ends
        # then it names the run just finished and counts it (the count in its own colour)
        child.expect(r"travel_claim/\w+ · guided \x1b\[[0-9;]*m━.*\x1b\[32m[1-8]/8\x1b\[0m")
        child.expect(r"guided: pass\^1 \d+% over 8 scenarios")  # then the report
        child.expect(pexpect.EOF)
    finally:
        close(child)
    assert child.exitstatus == 0  # every travel_claim scenario passes with the guided model
