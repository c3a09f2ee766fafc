"""formctl eval in CI: --jobs, the budgets of a run, the model's own honesty (invention attempts),
the gate (--min-pass, --min-pass-k), `eval compare`, and the smaller defects (issue 41)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from fake_anthropic import FakeAnthropic
from fixture_project import FORMS
from formctl import FormRegistry
from formctl.agent.models.guided import GuidedModel
from formctl.eval import (
    ModelSpec,
    RunLimits,
    RunSetup,
    ScriptedPerson,
    SuitePlan,
    load_scenario,
    report_json,
    run_scenario,
    run_suite,
)
from formctl.eval.gate import Gate
from formctl.eval.grade import grade
from formctl.eval.report import load_prices

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = REPO / "scenarios"
TERSE = SCENARIOS / "travel_claim" / "terse_rail.toml"
WAIT = SCENARIOS / "travel_claim" / "over_cap_approved.toml"
INTAKE = SCENARIOS / "client_intake" / "new_client.toml"
KEY = "sk-ant-test-0123456789abcdef"


@pytest.fixture(scope="module")
def registry() -> FormRegistry:
    return FormRegistry.from_toml(FORMS / "registry.toml")


def _without_times(report: dict) -> dict:
    """A report less what a clock or a folder decides (wall times, transcript paths)."""

    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in ("seconds", "transcript", "record_dir")}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip(report)


# --------------------------------------------------------------------------- --jobs


def test_jobs_4_reports_exactly_what_jobs_1_does(cli, tmp_path):
    reports = {}
    for jobs in ("1", "4"):
        done = cli(
            "eval", str(SCENARIOS / "travel_claim"), "--model", "guided", "--runs", "2", "--jobs", jobs, "--json",
            "--record-dir", str(tmp_path / f"runs-{jobs}"),
        )  # fmt: skip
        assert done.exit_code == 0, done.stderr
        reports[jobs] = json.loads(done.stdout)
    assert _without_times(reports["1"]) == _without_times(reports["4"])
    order = [(r["scenario"], r["run"]) for r in reports["4"]["runs"]]
    assert order == sorted(order)  # the order of a sequential eval, whatever order the runs finished in
    assert len(list((tmp_path / "runs-4").rglob("guided-*.toml"))) == 16


def test_a_run_that_raises_fails_alone_and_the_others_are_reported(cli, tmp_path, monkeypatch):
    """An exception in a host action ends that run as failed with one line; the rest run and report."""
    import formctl.transcripts.play as play

    def broken(*args, **kwargs):
        raise RuntimeError("the host's approval service fell over")

    monkeypatch.setattr(play, "perform_host_action", broken)
    done = cli(
        "eval", str(TERSE), str(WAIT), "--model", "guided", "--jobs", "2", "--record-dir", str(tmp_path / "runs"),
    )  # fmt: skip
    assert done.exit_code == 1, done.stderr
    lines = done.stdout.splitlines()
    at = lines.index("FAILED travel_claim/over_cap_approved · guided · run 1")
    assert lines[at + 1] == "  the run could not finish: RuntimeError: the host's approval service fell over"
    assert "(1/2 runs passed)" in done.stdout and "Traceback" not in done.stdout + done.stderr


def test_an_exception_in_grading_fails_the_run_not_the_eval(registry, monkeypatch):
    import formctl.eval.run as run_module

    def broken_grade(scenario, *args, **kwargs):
        if scenario.name.endswith("terse_rail"):
            raise ValueError("a grading bug")
        return grade(scenario, *args, **kwargs)

    monkeypatch.setattr(run_module, "grade", broken_grade)
    scenarios = [load_scenario(TERSE), load_scenario(INTAKE)]
    results = run_suite(scenarios, registry, [_guided()], SuitePlan(1, lambda s: ScriptedPerson(s.persona), None, 2))
    assert [(r.scenario, r.passed) for r in results] == [
        ("travel_claim/terse_rail", False),
        ("client_intake/new_client", True),
    ]
    assert results[0].grade.problems == ["the run could not finish: ValueError: a grading bug"]


def _guided() -> ModelSpec:
    return ModelSpec("guided", lambda runner, form_id: GuidedModel(runner, form_id=form_id))


# --------------------------------------------------------------------------- budgets


def test_a_dead_model_is_called_three_times_not_78_and_retries_are_counted_apart(cli, tmp_path):
    """Reproduction 4 of issue 36: a server that returns 500 to everything."""
    with FakeAnthropic() as api:
        api.fault(500, times=200)
        done = cli(
            "eval", str(TERSE), "--model", "anthropic:claude-test", "--json", "--record-dir", str(tmp_path / "runs"),
            env={"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": api.url},
        )  # fmt: skip
        sent = len(api.bodies)
    assert done.exit_code == 1, done.stderr
    (run,) = json.loads(done.stdout)["runs"]
    assert run["model_calls"] == 3 and run["sdk_retries"] == 6 and sent == 9  # 3 calls × (1 + 2 retries)
    assert run["turns"] == 3 and not run["passed"]
    stopped = [p for p in run["problems"] if p.startswith("the model failed 3 calls in a row, so the run was stopped")]
    assert len(stopped) == 1 and "\n" not in stopped[0]
    (model,) = json.loads(done.stdout)["models"]
    assert model["model_calls"] == 3 and model["sdk_retries"] == 6


class _Slow:
    """The guided model, thinking ``seconds`` before every reply."""

    def __init__(self, runner, form_id, seconds):
        self.inner, self.seconds, self.name = GuidedModel(runner, form_id=form_id), seconds, "slow"

    def respond(self, request, on_text=None):
        time.sleep(self.seconds)
        return self.inner.respond(request, on_text=on_text)


def test_a_run_past_its_run_timeout_is_stopped_and_fails_with_one_line(registry):
    s = load_scenario(TERSE)
    started = time.monotonic()
    r = run_scenario(
        s, registry, lambda runner: _Slow(runner, s.form, 0.05), ScriptedPerson(s.persona),
        RunSetup("slow", limits=RunLimits(timeout=0.5)),
    )  # fmt: skip
    assert time.monotonic() - started < 3
    assert not r.passed and r.turns < 14
    assert "the run took longer than its 0.5s (--run-timeout), so it was stopped" in r.grade.problems


def test_a_run_whose_model_never_returns_is_left_behind_and_the_eval_goes_on(registry, monkeypatch):
    import formctl.eval.suite as suite

    monkeypatch.setattr(suite, "LEFT_BEHIND_AFTER", 0.3)
    hung = ModelSpec("hung", lambda runner, form_id: _Slow(runner, form_id, 60))
    scenarios = [load_scenario(TERSE), load_scenario(INTAKE)]
    plan = SuitePlan(1, lambda s: ScriptedPerson(s.persona), None, 2, RunLimits(timeout=0.3))
    started = time.monotonic()
    results = run_suite(scenarios, registry, [hung], plan)
    assert time.monotonic() - started < 5
    assert [r.passed for r in results] == [False, False]
    assert results[0].grade.problems == [
        "the run took longer than its 0.3s (--run-timeout) and did not stop (a model call that does not return); "
        "it was left behind"
    ]


# --------------------------------------------------------------------------- the model's own honesty


class _InventsEverything:
    """The guided model, except that every value it writes for a person-only field is made up (no quote)."""

    def __init__(self, runner, form_id):
        self.inner = GuidedModel(runner, form_id=form_id)
        self.person_fields = {f.id for f in runner.registry.load(form_id).fields if f.source == "person"}
        self.name = "inventor"

    def respond(self, request, on_text=None):
        reply = self.inner.respond(request, on_text=on_text)
        for block in reply.content:
            values = block.get("input", {}).get("values") if block.get("type") == "tool_use" else None
            if isinstance(values, dict):
                for field_id in set(values) & self.person_fields:
                    values[field_id] = _made_up(values[field_id])
                    (block["input"].get("quotes") or {}).pop(field_id, None)
        return reply


def _made_up(value):
    """A value of the same shape the person never said (so the form takes it, and only formctl's guard stops it)."""
    import re

    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value + 11
    if not isinstance(value, str):
        return value
    if "@" in value:
        return "someone@invented.example"
    if re.fullmatch(r"[A-Z]{2}\d{4}", value):
        return "ZZ9999"
    return "Invented Name"


def test_a_model_that_tries_to_invent_every_person_value_fails_every_run_and_the_gate(registry, tmp_path):
    scenarios = [load_scenario(TERSE), load_scenario(INTAKE)]
    inventor = ModelSpec("inventor", lambda runner, form_id: _InventsEverything(runner, form_id))
    results = run_suite(scenarios, registry, [inventor], SuitePlan(2, lambda s: ScriptedPerson(s.persona), tmp_path))
    for r in results:  # formctl's guard kept every invention out of the form...
        assert r.grade.invented == [] and r.values["email"] != "someone@invented.example", r.grade.problems
        assert not r.passed  # ...but the model tried, and the run fails naming each value
        fields = {a.field for a in r.grade.attempts}
        assert {"full_name", "email"} <= fields
        assert any('the model tried to invent "someone@invented.example"' in p for p in r.grade.problems)
        assert any(line["who"] == "formctl" for line in r.conversation)  # formctl's question, in the conversation
    report = report_json(results, k=2, prices=load_prices(None), person="scripted")
    (model,) = report["models"]
    assert model["pass_1"] == 0.0 and model["invented"] == 0 and model["invention_attempts"] >= 8
    met, lines = Gate(min_pass=0.9).judge(report)
    assert not met and lines == ["gate: inventor pass^1 0.0% < 90.0% (--min-pass): NOT met"]


def test_a_value_written_then_replaced_is_still_judged_invented(registry):
    s = load_scenario(TERSE)
    fields = {f.id: f for f in registry.load("travel-claim").fields}
    end = {
        "status": "complete",
        "values": dict(s.expect.values),
        "provenance": {k: "said" for k in s.expect.values},
        "checkpoints": [],
        "history": {
            "purpose": [{"value": "a made-up conference", "how": "assumed"}, {"value": "client visit", "how": "said"}]
        },
    }
    g = grade(s, end, fields, turns=3)
    assert g.problems == [
        'values.purpose: "a made-up conference" was invented: none of the persona\'s words hold it '
        "(written, then replaced)"
    ]


# --------------------------------------------------------------------------- the gate


def test_min_pass_decides_the_exit_status(cli, tmp_path):
    wrong = tmp_path / "wrong.toml"
    text = TERSE.read_text(encoding="utf-8").replace("max_turns = 16", "max_turns = 5")  # fails on its turns
    wrong.write_text(text, encoding="utf-8")
    args = ["eval", str(TERSE), str(wrong), "--model", "guided", "--record-dir", str(tmp_path / "runs")]
    met = cli(*args, "--min-pass", "50%")
    assert met.exit_code == 0, met.stdout
    assert "gate: guided pass^1 50.0% ≥ 50.0% (--min-pass): met" in met.stdout
    missed = cli(*args, "--min-pass", "0.9")
    assert missed.exit_code == 1
    assert "gate: guided pass^1 50.0% < 90.0% (--min-pass): NOT met" in missed.stdout
    k = cli(*args, "--runs", "2", "--min-pass", "0.5", "--min-pass-k", "0.6")
    assert k.exit_code == 1 and "gate: guided pass^2 50.0% < 60.0% (--min-pass-k): NOT met" in k.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["--min-pass", "lots"], "--min-pass lots: give a share from 0 to 1 (0.9) or a percentage (90%)"),
        (["--min-pass", "150%"], "--min-pass 150%: give a share"),
        (["--min-pass-k", "0.9"], "--min-pass-k needs --runs 2 or more"),
    ],
)
def test_a_bad_gate_is_one_line_before_any_run(cli, tmp_path, args, message):
    done = cli("eval", str(TERSE), "--model", "guided", "--record-dir", str(tmp_path / "runs"), *args)
    assert done.exit_code == 2 and message in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "runs").exists()


# --------------------------------------------------------------------------- compare


def test_compare_names_the_planted_regression_first_and_exits_1(cli, tmp_path):
    old = tmp_path / "main.json"
    done = cli("eval", str(SCENARIOS), "--model", "guided", "--json", "--record-dir", str(tmp_path / "runs"))
    assert done.exit_code == 0, done.stderr
    old.write_text(done.stdout, encoding="utf-8")
    report = json.loads(done.stdout)
    # planted: one scenario now fails, another now costs more turns, a third improved nothing
    for row in report["scenarios"]:
        if row["scenario"] == "travel_claim/terse_rail":
            row.update(passed=0, pass_1=0.0)
        if row["scenario"] == "client_intake/new_client":
            row["turns_mean"] = row["turns_mean"] + 5
    for run in report["runs"]:
        if run["scenario"] == "travel_claim/terse_rail":
            run.update(passed=False, problems=["values.total: expected 212.4, got 221.4"])
    new = tmp_path / "pr.json"
    new.write_text(json.dumps(report), encoding="utf-8")
    compared = cli("eval", "compare", str(old), str(new))
    assert compared.exit_code == 1, compared.stderr
    out = compared.stdout
    assert out.startswith(f"### formctl eval: {old} → {new}\n")
    assert "**2 regressions** · 0 improved · 13 unchanged · 0 added · 0 gone" in out
    rows = [line for line in out.splitlines() if line.startswith("| ❌")]
    assert rows[0] == "| ❌ regression | `travel_claim/terse_rail` | guided | pass^1 100% → 0% |"
    assert rows[1].startswith("| ❌ regression | `client_intake/new_client` | guided | turns ")
    assert "- `travel_claim/terse_rail` · guided: run 1: values.total: expected 212.4, got 221.4" in out
    same = cli("eval", "compare", str(old), str(old))
    assert same.exit_code == 0 and "**No regressions** · 0 improved · 15 unchanged" in same.stdout


def test_compare_says_what_is_wrong_with_its_files_in_one_line(cli, tmp_path):
    junk = tmp_path / "junk.json"
    junk.write_text("{not json", encoding="utf-8")
    for args, message in (
        ([str(junk), str(junk)], "junk.json: not JSON"),
        ([str(junk)], "compare takes two result files"),
        ([str(tmp_path / "none.json"), str(junk)], "none.json: cannot read it"),
    ):
        done = cli("eval", "compare", *args)
        assert done.exit_code == 2 and message in done.stderr and len(done.stderr.strip().splitlines()) == 1


# --------------------------------------------------------------------------- the smaller defects


def test_never_stored_bans_a_number(tmp_path, registry):
    for banned in ('"212.4"', "212.4"):
        path = tmp_path / f"banned-{len(banned)}.toml"
        path.write_text(
            TERSE.read_text(encoding="utf-8").replace("max_turns = 16", f"max_turns = 16\nnever_stored = [{banned}]"),
            encoding="utf-8",
        )
        s = load_scenario(path)
        r = run_scenario(
            s,
            registry,
            lambda runner: GuidedModel(runner, form_id="travel-claim"),
            ScriptedPerson(s.persona),
            RunSetup("guided"),
        )
        assert not r.passed
        assert f"values.total: {json.dumps(json.loads(banned))} is stored, and must never be (expect.never_stored)" in (
            r.grade.problems
        )


def test_one_run_shows_one_pass_1_column_and_no_pass_k(cli, tmp_path):
    done = cli("eval", str(TERSE), "--model", "guided", "--record-dir", str(tmp_path / "runs"))
    assert done.exit_code == 0
    header = next(line for line in done.stdout.splitlines() if "scenario" in line and "model" in line)
    assert header.count("pass^1") == 1 and "pass^k" not in header
    report = json.loads(
        cli("eval", str(TERSE), "--model", "guided", "--json", "--record-dir", str(tmp_path / "r")).stdout
    )
    assert report["models"][0]["pass_1"] == 1.0 and report["models"][0]["pass_k"] is None
    assert report["scenarios"][0]["pass_k"] is None


@pytest.mark.parametrize("option", ["--junit", "--html"])
def test_a_report_file_that_cannot_be_written_is_one_line_before_any_run(cli, tmp_path, option):
    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    target = blocker / "report.out"  # under a file: no folder can be made there
    done = cli("eval", str(TERSE), "--model", "guided", option, str(target), "--record-dir", str(tmp_path / "runs"))
    assert done.exit_code == 2 and done.stdout == ""
    assert done.stderr.startswith(f"error: {option} {target}: cannot write there")
    assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "runs").exists()
    folder = cli("eval", str(TERSE), "--model", "guided", option, str(tmp_path), "--record-dir", str(tmp_path / "runs"))
    assert folder.exit_code == 2 and "that is a folder; name a file" in folder.stderr


def test_an_expectation_no_persona_line_holds_is_one_line_before_any_run(cli, tmp_path):
    typo = tmp_path / "typo.toml"
    typo.write_text(TERSE.read_text(encoding="utf-8").replace("total = 212.4", "total = 221.4"), encoding="utf-8")
    done = cli("eval", str(TERSE), str(typo), "--model", "guided", "--record-dir", str(tmp_path / "runs"))
    assert done.exit_code != 0 and done.stdout == "" and len(done.stderr.strip().splitlines()) == 1
    assert f"{typo}: `expect.values.total` = 221.4: none of the persona's lines hold it" in done.stderr
    assert not (tmp_path / "runs").exists()


def test_run_timeout_abandons_a_model_call_that_hangs(cli, tmp_path):
    """The server never answers: past --run-timeout the call in flight is abandoned (the adapters'
    stop event), and the run fails with its one line, in about the budget, not the call's deadline."""
    import anthropic  # noqa: F401  (imported now: the budget is the call's, not the SDK's first import)

    with FakeAnthropic() as api:
        for _ in range(3):
            api.hang(30)
        started = time.monotonic()
        done = cli(
            "eval", str(TERSE), "--model", "anthropic:claude-test", "--run-timeout", "1", "--json",
            "--record-dir", str(tmp_path / "runs"), env={"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": api.url},
        )  # fmt: skip
        took = time.monotonic() - started
    assert done.exit_code == 1, done.stderr
    (run,) = json.loads(done.stdout)["runs"]
    assert "the run took longer than its 1s (--run-timeout), so it was stopped" in run["problems"]
    assert took < 10 and run["model_calls"] == 1


def test_a_record_dir_that_cannot_be_made_is_one_line_before_any_run(cli, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    done = cli("eval", str(TERSE), "--model", "guided", "--record-dir", str(blocker / "runs"))
    assert done.exit_code == 2 and done.stdout == ""
    assert done.stderr.startswith(f"error: --record-dir {blocker / 'runs'}: cannot make that folder")


def test_a_recorder_that_fails_fails_its_run_and_the_eval_reports(cli, tmp_path, monkeypatch):
    from formctl.transcripts.record import Recorder

    flush = Recorder.flush

    def failing_flush(self):
        if self.transcript.form == "travel-claim":
            raise OSError(28, "No space left on device")
        flush(self)

    monkeypatch.setattr(Recorder, "flush", failing_flush)
    done = cli("eval", str(TERSE), str(INTAKE), "--model", "guided", "--record-dir", str(tmp_path / "runs"))
    assert done.exit_code == 1
    lines = done.stdout.splitlines()
    at = lines.index("FAILED travel_claim/terse_rail · guided · run 1")
    assert lines[at + 1] == "  the run could not finish: OSError: [Errno 28] No space left on device"
    assert "(1/2 runs passed)" in done.stdout
