"""Transcripts: the file format, recording, exact and live replay, diffs, masking, coverage, the pytest plugin."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Annotated

import pytest
from pydantic import Field

from fixture_project import FORMS, MILEAGE_GATE_WIDENED  # noqa: E402
from fixture_project import TRANSCRIPTS as SHIPPED
from formctl import FormRegistry, FormRunner, MemoryAdapter, define_form
from formctl.agent.loop import ChatLoop
from formctl.agent.models.guided import GuidedModel
from formctl.errors import TranscriptError
from formctl.transcripts.coverage import Coverage
from formctl.transcripts.format import Transcript, dumps, leading_comments, load, loads
from formctl.transcripts.record import Recorder
from formctl.transcripts.replay import ReplayOptions, replay_file
from helpers.recording import forms_registry, record

pytest_plugins = ["pytester"]


def copy_shipped(tmp_path: Path, name: str) -> Path:
    target = tmp_path / "transcripts" / f"{name}.toml"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(SHIPPED / f"{name}.toml", target)
    return target


# --------------------------------------------------------------------------- the shipped set


def test_the_tested_transcripts_are_the_shipped_ones():
    """tests/fixtures/transcripts is what this suite replays; ./transcripts is what the README and
    CI's replay benchmark replay: a transcript added to one and not the other is replayed by
    neither the suite nor the check that reads it (three were, in round four)."""
    repo = Path(__file__).resolve().parents[2]
    shipped = {p.name: p.read_bytes() for p in (repo / "transcripts").glob("*.toml")}
    tested = {p.name: p.read_bytes() for p in (repo / "tests" / "fixtures" / "transcripts").glob("*.toml")}
    assert sorted(shipped) == sorted(tested)
    assert [name for name in shipped if shipped[name] != tested[name]] == []


def test_every_shipped_transcript_replays_exactly():
    files = sorted(SHIPPED.glob("*.toml"))
    assert len(files) >= 8
    failures = {f.name: r.diff for f in files if not (r := replay_file(f)).passed}
    assert failures == {}


def test_every_shipped_transcript_read_and_written_again_is_the_same_file():
    """Reading a transcript and writing it again gives the file back, byte for byte (its comment
    block kept, as --update keeps it): a reader or writer that moved a key, quoted a string
    another way or dropped a value would otherwise rewrite every transcript on the next --update."""
    for f in sorted(SHIPPED.glob("*.toml")):
        text = f.read_text(encoding="utf-8")
        assert dumps(load(f), header=leading_comments(text)) == text, f.name


def test_the_shipped_set_covers_every_step_checkpoint_and_gate_of_the_example_forms():
    cov = Coverage()
    for f in sorted(SHIPPED.glob("*.toml")):
        assert replay_file(f, ReplayOptions(coverage=cov)).passed
    for summary in cov.summaries():
        assert summary["steps"][0] == summary["steps"][1], summary
        assert summary["gates"][0] == summary["gates"][1], summary
        assert summary["checkpoints"][0] == summary["checkpoints"][1], summary


# --------------------------------------------------------------------------- regressions are caught


def test_a_changed_when_gate_fails_the_replay_with_a_diff_naming_the_field(tmp_path):
    path = copy_shipped(tmp_path, "held_after_correction")
    registry = forms_registry(travel_claim=MILEAGE_GATE_WIDENED)
    result = replay_file(path, registry=registry)
    assert not result.passed
    assert 'diverged at turn 5 (person: "Mode: rail"' in result.diff
    assert 'step 3/4 "Travel"' in result.diff
    assert 'fields[mileage].status: recorded "held", now "filled"' in result.diff


def test_a_changed_field_type_fails_then_update_rewrites_it_and_it_passes(tmp_path):
    path = copy_shipped(tmp_path, "straight_through")
    before = path.read_text()
    registry = forms_registry(
        travel_claim=('"mileage", Annotated[int, Field(ge=1)]', '"mileage", Annotated[float, Field(ge=1)]')
    )
    failed = replay_file(path, registry=registry)
    assert not failed.passed
    assert 'fields[mileage].type: recorded "integer >= 1", now "number >= 1"' in failed.diff

    updated = replay_file(path, ReplayOptions(update=True), registry=registry)
    assert updated.passed and updated.updated
    assert "fields[mileage].type" in updated.diff  # what changed is shown
    assert path.read_text() != before
    assert path.read_text().startswith("# Straight through")  # the author's comment is kept
    assert replay_file(path, registry=registry).passed
    assert not replay_file(path, registry=forms_registry()).passed  # and the old form now diverges


def test_a_host_action_is_performed_at_the_point_it_was_recorded(tmp_path):
    path = copy_shipped(tmp_path, "policy_cap_resolved")
    text = path.read_text()
    assert 'kind = "host"' in text
    # Without Finance's approval the conversation plays out differently from its recording.
    cut = text.replace(
        'kind = "host"\naction = "resolve"', 'kind = "host"\naction = "undo"\nargs = { field = "meals" }'
    )
    path.write_text(cut)
    result = replay_file(path)
    assert not result.passed
    assert "host: undo" in result.diff


def test_a_model_call_sent_a_different_tier0_line_is_a_divergence(tmp_path):
    path = copy_shipped(tmp_path, "straight_through")
    # A step's preview appears only in tier 0 ("later: ..."): the tool results stay the same.
    registry = forms_registry(travel_claim=('preview="accommodation, meals, total"', 'preview="hotel, meals, total"'))
    result = replay_file(path, registry=registry)
    assert not result.passed
    assert "diverged at turn 1" in result.diff and "model call 2" in result.diff
    assert "a different tier-0 line" in result.diff
    assert (
        "+later: Trip (destination, dates, purpose) · Travel (how they travelled, mileage or ticket) · Costs (hotel, meals, total)"
        in result.diff
    )


# --------------------------------------------------------------------------- the file


def test_a_truncated_transcript_is_an_error_naming_the_line(tmp_path):
    text = (SHIPPED / "straight_through.toml").read_text()
    cut_at = text.index("result_json = '''") + 40
    path = tmp_path / "cut.toml"
    path.write_text(text[:cut_at])
    expected_line = text[:cut_at].count("\n") + 1
    with pytest.raises(TranscriptError) as info:
        load(path)
    assert f"cut.toml, line {expected_line}" in str(info.value)
    assert "truncated" in str(info.value)
    result = replay_file(path)
    assert not result.passed and f"line {expected_line}" in result.diff


def test_malformed_toml_is_an_error_naming_the_line_and_column(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('format = 1\nform = "travel-claim"\n\n[[turns]]\ntext = "unclosed\n')
    with pytest.raises(TranscriptError, match=r"bad\.toml, line 5: .*column"):
        load(path)


def test_a_turn_without_text_is_an_error_naming_its_line():
    text = 'format = 1\nform = "f"\n\n[[turns]]\ntext = "hi"\n\n[[turns]]\nkind = "person"\n'
    with pytest.raises(TranscriptError, match=r"line 7: turn 2: a person turn needs `text"):
        loads(text, path="t.toml")


def test_values_toml_cannot_hold_are_written_as_json_under_a_named_key():
    t = Transcript(form="f", expect={"status": "active", "values": {"phone": None, "name": "Dana"}, "held": {}})
    text = dumps(t)
    assert "values_json = " in text
    assert loads(text).expect["values"] == {"phone": None, "name": "Dana"}


def test_a_hand_written_file_may_use_toml_dates():
    t = loads('format = 1\nform = "f"\n[expect]\nvalues = { departure_date = 2026-03-02 }\n')
    assert t.expect["values"] == {"departure_date": "2026-03-02"}


# --------------------------------------------------------------------------- recording


def test_two_recordings_of_the_same_conversation_are_identical_files(tmp_path):
    messages = ["I need to claim", "Dana Reeve", "AB1234", "dana@example.com", "what else", "Leeds"]
    a, b = tmp_path / "a.toml", tmp_path / "b.toml"
    record(a, forms_registry(), "travel-claim", messages, subject="dana")
    record(b, forms_registry(), "travel-claim", messages, subject="sam")
    assert a.read_text() == b.read_text()
    assert not re.search(r"form_[0-9a-z]+_[0-9a-z]{6}|\d{4}-\d\d-\d\dT\d\d:", a.read_text())
    assert "<instance>" in a.read_text()
    assert replay_file(a, registry=forms_registry()).passed


def test_the_recording_is_flushed_after_every_turn(tmp_path):
    registry = forms_registry()
    runner = FormRunner(MemoryAdapter(), registry=registry, subject="s")
    model = GuidedModel(runner, form_id="travel-claim")
    path = tmp_path / "live.toml"
    rec = Recorder(path, form_id="travel-claim", form_version=1, model=model.name, subject="s", runner=runner)
    loop = ChatLoop(runner, model, form_id="travel-claim", on_event=rec.event)
    for n, message in enumerate(["hello", "Dana Reeve"], 1):
        rec.person(message)
        loop.send(message)
        on_disk = load(path)  # a crash now would keep every turn so far
        assert [t.text for t in on_disk.turns] == ["hello", "Dana Reeve"][:n]
        assert on_disk.turns[-1].iterations[-1].stop_reason == "end_turn"


# --------------------------------------------------------------------------- executors and sensitive fields

REPLAYING_SEEN: list[bool] = []


def _notify(ctx):
    REPLAYING_SEEN.append(ctx.replaying)  # a real one would skip its outside call when replaying
    return None


def _secure_form():
    return (
        define_form("payroll", version=1, name="Payroll details")
        .step("who", title="Who")
        .field("full_name", Annotated[str, Field(min_length=2)], label="Full name")
        .field(
            "ni_number",
            Annotated[str, Field(pattern=r"^[A-Z]{2}\d{6}[A-D]$")],
            label="NI number",
            sensitive=True,
            on_fill=_notify,
        )
        .field("pin", Annotated[int, Field(ge=1000, le=9999)], label="PIN", sensitive=True)
        .build()
    )


def test_a_sensitive_field_is_masked_in_the_transcript_and_the_transcript_still_replays(tmp_path):
    registry = FormRegistry().register("payroll", name="Payroll", description="", load=_secure_form)
    path = tmp_path / "payroll.toml"
    REPLAYING_SEEN.clear()
    record(path, registry, "payroll", ["hi", "Dana Reeve", "QQ123456C", "4821"])
    text = path.read_text()
    assert "QQ123456C" not in text and "4821" not in text
    assert 'masked = ["ni_number", "pin"]' in text
    t = load(path)
    assert t.expect["status"] == "complete"
    assert t.expect["values"]["ni_number"] != "QQ123456C"
    assert REPLAYING_SEEN == [False]

    result = replay_file(path, registry=registry)
    assert result.passed, result.diff
    assert REPLAYING_SEEN == [False, True]  # the executor ran for real, and could tell it was a replay


# --------------------------------------------------------------------------- live replay


def _hand_written(tmp_path: Path, expect: str) -> Path:
    path = tmp_path / "transcripts" / "hand.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f'format = 1\nform = "client-intake"\n\n[[turns]]\ntext = "new"\n[[turns]]\ntext = "15"\n\n[expect]\n{expect}\n'
    )
    return path


def test_live_replay_grades_a_hand_written_transcript_on_expect(tmp_path):
    good = _hand_written(tmp_path, 'status = "abandoned"\nvalues = { age = 15 }\ncheckpoints = ["eligibility"]')
    assert replay_file(good, ReplayOptions(live=True), registry=forms_registry()).passed
    bad = _hand_written(tmp_path, 'status = "complete"\nvalues = { age = 51 }')
    result = replay_file(bad, ReplayOptions(live=True), registry=forms_registry())
    assert not result.passed
    assert 'status: expected "complete", got "abandoned"' in result.diff  # the author's value is "expected"
    assert "values.age: expected 51, got 15" in result.diff


def test_live_update_records_the_model_turns_so_the_transcript_replays_exactly(tmp_path):
    path = _hand_written(tmp_path, 'status = "abandoned"')
    assert not load(path).recorded
    assert replay_file(path, ReplayOptions(live=True, update=True), registry=forms_registry()).updated
    t = load(path)
    assert t.recorded and t.model == "guided"
    assert t.expect["checkpoints"] == ["eligibility"]
    assert replay_file(path, registry=forms_registry()).mode == "exact"
    assert replay_file(path, registry=forms_registry()).passed


# --------------------------------------------------------------------------- coverage


def test_coverage_lists_what_the_transcripts_never_exercised():
    cov = Coverage()
    assert replay_file(SHIPPED / "ineligible_terminated.toml", ReplayOptions(coverage=cov)).passed
    (summary,) = cov.summaries()
    assert summary["form"] == "client-intake"
    never = summary["never"]
    assert "new-client" in never["steps opened"]
    assert "email" in never["fields filled"]
    assert "route" in never["checkpoints fired"]
    assert "eligibility" not in never["checkpoints fired"]
    assert "checkpoint:eligibility" not in " ".join(never["gates seen both ways"])
    assert "never steps opened: contact, new-client, returning-client" in cov.render()


# --------------------------------------------------------------------------- pytest plugin


def _python(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.strip()


@pytest.mark.e2e
def test_the_pytest_plugin_and_the_cli_module_import_only_light_modules():
    heavy = ["formctl.forms.runner", "formctl.agent.loop", "pydantic", "anthropic", "tomli_w"]
    for module in ("formctl.transcripts.pytest_plugin", "formctl.transcripts.cli"):
        loaded = _python(f"import sys, {module}; print(' '.join(m for m in {heavy!r} if m in sys.modules))")
        assert loaded == "", f"{module} imports {loaded}"


def test_pytest_collects_each_transcript_as_a_test_with_the_diff_as_its_failure(pytester, monkeypatch):
    # pytest in this process (the plugin loaded from its entry point all the same); a child
    # pytest collecting an author's transcripts is the author loop's whole-loop test.
    ok = copy_shipped(pytester.path, "what_else")
    broken = copy_shipped(pytester.path, "rejected_then_fixed")
    broken.write_text(broken.read_text().replace('[expect]\nstatus = "active"', '[expect]\nstatus = "complete"'))
    monkeypatch.setenv("FORMCTL_FORMS", str(FORMS))
    out = pytester.runpytest_inprocess(
        "--formctl-transcripts", "-p", "no:cacheprovider", "-p", "no:randomly", "-q", str(pytester.path / "transcripts")
    )
    assert out.ret == 1, out.stdout.str()
    text = out.stdout.str()
    assert "1 failed, 1 passed" in text
    assert "rejected_then_fixed.toml" in text
    assert 'status: recorded "complete", now "active"' in text
    assert ok.exists()


def test_a_recording_over_a_resumed_instance_says_why_it_cannot_replay_exactly(tmp_path):
    registry = forms_registry()
    runner = FormRunner(MemoryAdapter(), registry=registry, subject="s")
    runner.start("travel-claim", seed={"full_name": "Dana Reeve"})
    model = GuidedModel(runner, form_id="travel-claim")
    path = tmp_path / "resumed.toml"
    rec = Recorder(path, form_id="travel-claim", form_version=1, model=model.name, subject="s", runner=runner)
    loop = ChatLoop(runner, model, form_id="travel-claim", on_event=rec.event)
    rec.person("AB1234")
    loop.send("AB1234")
    rec.finish(runner)
    assert "resumed = true" in path.read_text()
    result = replay_file(path, registry=registry)
    assert not result.passed
    assert "formctl resume" in result.diff and "--record" in result.diff


def test_any_other_log_can_mask_sensitive_values_the_way_transcripts_do():
    from formctl.transcripts.normalise import masker_for

    registry = FormRegistry().register("payroll", name="Payroll", description="", load=_secure_form)
    runner = FormRunner(MemoryAdapter(), registry=registry, subject="s")
    runner.start("payroll", seed={"full_name": "Dana Reeve", "ni_number": "QQ123456C", "pin": 4821})
    compiled, instance, _ = runner.evaluation()
    masker = masker_for(compiled, instance)
    line = masker.mask_text("person said: my NI number is QQ123456C, PIN 4821, name Dana Reeve")
    assert "QQ123456C" not in line and "4821" not in line
    assert "Dana Reeve" in line  # only sensitive fields are masked


def test_a_model_error_mid_conversation_is_recorded_and_replayed_at_the_same_point(tmp_path):
    from formctl.agent.models.base import ModelReply
    from formctl.agent.models.scripted import ScriptedModel

    registry = forms_registry()
    runner = FormRunner(MemoryAdapter(), registry=registry, subject="s")
    model = ScriptedModel(
        [
            ModelReply(
                [{"type": "tool_use", "id": "toolu_x", "name": "form_start", "input": {"form": "travel-claim"}}],
                stop_reason="tool_use",
            ),
            ModelReply([{"type": "text", "text": "Your full name?"}]),
        ]
    )  # a third call fails: the model is "down"
    path = tmp_path / "outage.toml"
    rec = Recorder(path, form_id="travel-claim", form_version=1, model="anthropic", subject="s", runner=runner)
    loop = ChatLoop(runner, model, form_id="travel-claim", on_event=rec.event)
    for message in ("hello", "Dana Reeve"):
        rec.person(message)
        loop.send(message)
    t = rec.finish(runner)
    assert t.turns[1].error and t.turns[1].iterations[-1].stop_reason == "error"
    assert replay_file(path, registry=registry).passed


def test_live_update_of_a_hand_written_transcript_masks_the_sensitive_values_it_typed(tmp_path):
    registry = FormRegistry().register("payroll", name="Payroll", description="", load=_secure_form)
    path = tmp_path / "payroll.toml"
    path.write_text(
        'format = 1\nform = "payroll"\n[[turns]]\ntext = "hi"\n[[turns]]\ntext = "Dana Reeve"\n'
        '[[turns]]\ntext = "QQ123456C"\n[[turns]]\ntext = "4821"\n[expect]\nstatus = "complete"\n'
    )
    assert replay_file(path, ReplayOptions(live=True, update=True), registry=registry).updated
    text = path.read_text()
    assert "QQ123456C" not in text and "4821" not in text
    assert replay_file(path, registry=registry).passed


# --------------------------------------------------------------------------- usage


def test_a_recording_keeps_what_the_conversation_cost_in_its_header_and_still_replays(tmp_path):
    from formctl.agent.models.base import ModelReply
    from formctl.agent.models.scripted import ScriptedModel

    registry = FormRegistry.from_toml(FORMS / "registry.toml")
    runner = FormRunner(MemoryAdapter(), registry=registry, subject="s")
    replies = [
        ModelReply(
            [{"type": "tool_use", "id": "toolu_1", "name": "form_list", "input": {}}],
            "tool_use",
            usage={"input_tokens": 1200, "output_tokens": 30, "cache_creation_input_tokens": 900},
        ),
        ModelReply(
            [{"type": "text", "text": "There are forms for travel and client intake."}],
            "end_turn",
            usage={"input_tokens": 50, "output_tokens": 12, "cache_read_input_tokens": 2100},
        ),
    ]
    path = tmp_path / "costed.toml"
    rec = Recorder(path, form_id="travel-claim", form_version=1, model="scripted", subject="s", runner=runner)
    loop = ChatLoop(runner, ScriptedModel(replies), form_id="travel-claim", on_event=rec.event)
    rec.person("What can I fill in?")
    loop.send("What can I fill in?")
    rec.finish(runner)

    expected = {
        "input_tokens": 1250,
        "output_tokens": 42,
        "cache_read_input_tokens": 2100,
        "cache_creation_input_tokens": 900,
    }
    assert loop.usage.to_dict() == expected
    header = path.read_text().split("[[turns]]")[0]
    assert "usage = " in header and load(path).usage == expected
    assert loop.usage.line() == "tokens: 1,250 in, 42 out, 2,100 cache reads, 900 cache writes"
    assert replay_file(path, registry=registry).passed


def test_a_guided_recording_has_no_usage_line(tmp_path):
    registry = FormRegistry.from_toml(FORMS / "registry.toml")
    transcript = record(tmp_path / "guided.toml", registry, "travel-claim", ["hello"])
    assert transcript.usage == {} and "usage" not in dumps(transcript)
