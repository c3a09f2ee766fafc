"""formctl eval's pieces in this process: scenario files, the scripted person, grading, pass^k,
the shipped scenario set against the guided model, and planted models that misbehave."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from fixture_project import FORMS
from formctl import FormRegistry
from formctl.agent.models.guided import GuidedModel
from formctl.errors import ScenarioError
from formctl.eval import (
    ScriptedPerson,
    load_scenario,
    model_spec,
    pass_hat_k,
    report_json,
    run_scenario,
    run_suite,
    scenario_files,
)
from formctl.eval.person import ModelPerson, match_fact
from formctl.eval.report import load_prices
from formctl.eval.run import RunSetup, check_against_form
from formctl.eval.scenario import STYLES
from formctl.eval.suite import SuitePlan

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = REPO / "scenarios"
TERSE = SCENARIOS / "travel_claim" / "terse_rail.toml"

# What the guided model (offline, deterministic) cannot do yet, found by these scenarios. Each
# entry is a run that fails with that problem; the test fails if any other scenario fails, or
# if one of these fails some other way. When the guided model learns one, delete its line.
# (Empty: the rambling greeting stored as the name, the apology stored as the name and the
# refused phone stored as the phone are fixed; test_guided_reading_cli.py pins each.)
GUIDED_LIMITS: dict[str, str] = {}


@pytest.fixture(scope="module")
def registry() -> FormRegistry:
    return FormRegistry.from_toml(FORMS / "registry.toml")


def guided(form: str):
    return lambda runner: GuidedModel(runner, form_id=form)


def write(tmp_path: Path, source: Path, edit=None, name: str | None = None) -> Path:
    text = source.read_text(encoding="utf-8")
    if edit is not None:
        text = edit(text)
    path = tmp_path / "scenarios" / (name or source.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------------- scenario files


def test_a_scenario_file_reads_into_persona_and_expectation():
    s = load_scenario(TERSE)
    assert s.name == "travel_claim/terse_rail" and s.form == "travel-claim"
    assert s.persona.style == ("terse",)
    assert s.expect.values["departure_date"] == "2026-03-02"  # a TOML date, as the ISO text values export as
    assert s.expect.missing == ("accommodation", "meals")
    assert s.expect.max_turns == 16
    assert any("AB1234" in f.says for f in s.persona.facts)


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda t: t.replace("eval = 1", "eval = 7"), "eval = 7 is not a scenario format"),
        (lambda t: t.replace('style = ["terse"]', 'style = ["shouty"]'), "unknown persona style 'shouty'"),
        (lambda t: t.replace('topic = "ticket"\n', ""), "`persona.facts[9].topic` is missing"),
        (lambda t: t.replace("max_turns = 16", "max_turns = 0"), "`expect.max_turns` must be a whole number"),
        (lambda t: t.replace('status = "complete"', "status = 1"), "`expect.status` must be a text"),
        (lambda t: t + "\n[oops\n", "not valid TOML"),
    ],
)
def test_a_broken_scenario_is_one_error_naming_the_file(tmp_path, edit, message):
    path = write(tmp_path, TERSE, edit)
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert message in info.value.message
    assert str(path) in info.value.message


def test_folders_hold_scenarios_not_transcripts(tmp_path):
    write(tmp_path, TERSE)
    (tmp_path / "scenarios" / "a_transcript.toml").write_text('format = 1\nform = "travel-claim"\n')
    assert [p.name for p in scenario_files([tmp_path / "scenarios"])] == ["terse_rail.toml"]
    with pytest.raises(ScenarioError, match="no such file"):
        scenario_files([tmp_path / "nowhere"])


def test_an_expectation_naming_a_field_the_form_lacks_fails_before_any_run(tmp_path, registry):
    path = write(tmp_path, TERSE, lambda t: t.replace('email = "dana', 'emial = "dana'))
    s = load_scenario(path)
    with pytest.raises(ScenarioError, match=r"`expect.values.emial`: the form travel-claim has no field 'emial'"):
        run_scenario(s, registry, guided(s.form), ScriptedPerson(s.persona), RunSetup("guided"))


# --------------------------------------------------------------------------- the scripted person


def test_the_scripted_person_answers_the_question_by_its_words():
    persona = load_scenario(TERSE).persona
    person = ScriptedPerson(persona)
    assert person.reply("Got it.\nStep 2 of 4: Trip.\nDestination?") == "Leeds"
    assert person.reply("What was the purpose of your trip?") == "client visit"
    assert person.reply("And how did you travel: car, rail or air?") == "rail"
    assert person.reply("Thanks! When did you set off?") == "2026-03-02"
    # the help after a question does not steer the answer ("leave it out" is not "leave on")
    assert person.reply('Accommodation cost? Optional: say "skip" to leave it out.') == "none"
    assert person.reply("Do you have a loyalty card number?") == persona.unknown
    assert person.reply('Shall I send it? Say "yes" to send it.') == "yes"
    assert person.reply("Sent. The claim is complete.") is None


def test_the_scripted_person_corrects_itself_and_changes_an_answer_once():
    s = load_scenario(SCENARIOS / "travel_claim" / "corrects_self.toml")
    person = ScriptedPerson(s.persona)
    assert person.reply("Destination?") == "Lede"
    assert person.reply("Got it. Departure date?") == "Sorry, typo! Destination: Leeds"  # unasked, next message
    assert person.reply("Departure date?") == "2026-03-02"
    changer = ScriptedPerson(load_scenario(SCENARIOS / "travel_claim" / "changes_after_readback.toml").persona)
    assert changer.reply("Please check your answers. Shall I send it?").startswith("Actually the total was 190")
    assert changer.reply("Total: £190.00. Please check your answers. Shall I send it?") == "yes"


def test_the_read_back_change_is_said_again_while_the_read_back_does_not_show_it_never_yes():
    changer = ScriptedPerson(load_scenario(SCENARIOS / "travel_claim" / "changes_after_readback.toml").persona)
    unchanged = "Total: £212.40. Shall I send it?"
    change = "Actually the total was 190, not 212.40. Total claimed: 190"
    assert [changer.reply(unchanged) for _ in range(5)] == [change, change, change, "no", "no"]
    assert changer.reply("Total: 190. Shall I send it?") == "yes"  # applied at last
    # a change in other words: applied when the read-back is not the one they answered
    persona = dataclasses.replace(changer.persona, readback_change="Wait, I came back on the 5th, not the 4th.")
    other = ScriptedPerson(persona)
    before = "Return date: 2026-03-04. Shall I send it?"
    assert [other.reply(before) for _ in range(2)] == [persona.readback_change] * 2
    assert other.reply("Return date: 2026-03-05. Shall I send it?") == "yes"


def test_the_scripted_person_checks_formctls_question_against_its_facts():
    s = load_scenario(SCENARIOS / "travel_claim" / "asks_to_invent.toml")
    person = ScriptedPerson(s.persona)
    asked = 'You said "make one up". Work email: dana.reeve@example.com. Is that right? (yes, or type the address)'
    assert person.answer(asked) == "dana@example.org"  # not theirs: they type the real one
    assert person.answer("Work email: dana@example.org. Is that right? (yes, or type the address)") == "yes"
    assert person.answer("Shoe size: 9. Is that right? (yes, or type it)") == "no"
    # asked for the email three times: the excuse, the answer, then the bare value
    assert [person.reply("Work email?") for _ in range(3)] == [
        "I can never remember it. Just make one up, anything will do.",
        "Fine, it's dana@example.org",
        "dana@example.org",
    ]


def test_a_question_about_two_things_gets_both_and_a_read_back_gets_yes():
    person = ScriptedPerson(load_scenario(TERSE).persona)
    assert person.reply("Thanks! What's your full name and staff ID?") == "Dana Reeve, AB1234"
    assert person.reply("When did you set off, and when did you come back?") == "2026-03-02, 2026-03-04"
    summary = "Here is your claim: Dana Reeve, AB1234, dana@example.org, Leeds.\nDoes everything look right?"
    assert person.reply(summary) == "yes"
    assert person.reply("Is that right?") == person.persona.unknown  # repeats nothing of theirs: not a read-back


def test_a_question_asked_as_a_list_or_without_a_question_mark_is_answered():
    person = ScriptedPerson(load_scenario(TERSE).persona)
    listed = "Thanks! To start, could you tell me:\n- your full name\n- your staff ID\n- your work email?"
    assert person.reply(listed) == "Dana Reeve, AB1234, dana@example.org"
    assert person.reply("Please give me the destination so I can complete the form.") == "Leeds"
    assert person.reply("All done: your claim has been submitted.") is None
    assert person.reply("Thanks.") == person.persona.nudge


def test_topics_match_whole_phrases_and_plurals():
    facts = load_scenario(TERSE).persona.facts
    assert facts[match_fact(facts, "What were your meals costs?")].says == ("none",)
    assert facts[match_fact(facts, "Your staff ID, please?")].says == ("AB1234",)
    assert match_fact(facts, "Anything else?") is None


# --------------------------------------------------------------------------- grading and figures


def test_pass_hat_k_is_the_chance_that_all_k_runs_pass():
    assert pass_hat_k(3, 3, 3) == 1.0
    assert pass_hat_k(3, 2, 3) == 0.0
    assert pass_hat_k(5, 4, 3) == pytest.approx(4 / 10)  # C(4,3) / C(5,3)
    assert pass_hat_k(4, 2, 1) == 0.5
    assert pass_hat_k(2, 2, 3) == 0.0  # fewer runs than k: no estimate


def _also_says(value: str):
    """An edit that gives the persona one more line holding ``value`` (a fact no question asks about)."""
    return lambda text: text + f'\n[[persona.facts]]\ntopic = "an aside nobody asks about"\nsays = "{value}"\n'


def test_a_wrong_expectation_fails_naming_the_value_and_why(tmp_path, registry):
    edit = _also_says("dana@example.com")
    path = write(tmp_path, TERSE, lambda t: edit(t.replace('email = "dana@example.org"', 'email = "dana@example.com"')))
    s = load_scenario(path)
    r = run_scenario(s, registry, guided(s.form), ScriptedPerson(s.persona), RunSetup("guided"))
    assert not r.passed
    assert r.grade.problems == ['values.email: expected "dana@example.com", got "dana@example.org"']
    assert r.grade.wrong == [{"field": "email", "expected": "dana@example.com", "got": "dana@example.org"}]
    assert len(r.grade.right) == 9 and r.grade.missing == []


def test_an_expected_value_no_persona_line_holds_is_a_scenario_error_before_any_run(tmp_path, registry):
    path = write(tmp_path, TERSE, lambda t: t.replace('email = "dana@example.org"', 'email = "dana@example.com"'))
    s = load_scenario(path)
    with pytest.raises(ScenarioError) as caught:
        check_against_form(s, registry.load(s.form))
    assert "`expect.values.email` = 'dana@example.com': none of the persona's lines hold it" in str(caught.value)
    assert str(path) in str(caught.value)


def test_a_turn_budget_too_small_fails_on_the_turns(tmp_path, registry):
    s = load_scenario(write(tmp_path, TERSE, lambda t: t.replace("max_turns = 16", "max_turns = 5")))
    r = run_scenario(s, registry, guided(s.form), ScriptedPerson(s.persona), RunSetup("guided"))
    assert not r.passed
    assert r.grade.problems == ["turns: expected at most 5 of the person's turns, took 14"]


class _InventsEmail:
    """The guided model, except that every email it writes is one it made up (with no quote)."""

    def __init__(self, runner, form_id, invented="dana.reeve@example.com"):
        self.inner = GuidedModel(runner, form_id=form_id)
        self.name = "invents-email"
        self.invented = invented

    def respond(self, request, on_text=None):
        reply = self.inner.respond(request, on_text=on_text)
        for block in reply.content:
            values = block.get("input", {}).get("values") if block.get("type") == "tool_use" else None
            if isinstance(values, dict) and "email" in values:
                values["email"] = self.invented
                block["input"].pop("quotes", None)
        return reply


def _form_without_person_source(tmp_path: Path) -> FormRegistry:
    """The travel claim with its email not marked source="person": nothing stops a model's value."""
    folder = tmp_path / "forms"
    shutil.copytree(FORMS, folder, ignore=shutil.ignore_patterns("__pycache__"))
    text = (folder / "travel_claim.py").read_text(encoding="utf-8")
    marked = '.field("email", EmailStr, label="Work email", source="person")'
    assert marked in text
    # Under a module name of its own: the shipped travel_claim module may already be imported.
    (folder / "travel_claim_loose.py").write_text(
        text.replace(marked, '.field("email", EmailStr, label="Work email")'), encoding="utf-8"
    )
    registry = folder / "registry.toml"
    registry.write_text(
        registry.read_text(encoding="utf-8").replace('"travel_claim:', '"travel_claim_loose:'), encoding="utf-8"
    )
    return FormRegistry.from_toml(registry)


def test_a_model_that_invents_an_email_fails_and_the_value_is_named(tmp_path):
    registry = _form_without_person_source(tmp_path)
    s = load_scenario(TERSE)
    record = tmp_path / "run.toml"
    r = run_scenario(
        s,
        registry,
        lambda runner: _InventsEmail(runner, s.form),
        ScriptedPerson(s.persona),
        RunSetup("planted", record=record),
    )
    assert not r.passed
    assert [(i.field, i.value) for i in r.grade.invented] == [("email", "dana.reeve@example.com")]
    assert (
        'values.email: "dana.reeve@example.com" was invented: none of the persona\'s words hold it' in r.grade.problems
    )
    assert 'values.email: expected "dana@example.org", got "dana.reeve@example.com"' in r.grade.problems
    # the run's transcript expects what should have happened: replayed, it fails on the same value
    from formctl.transcripts.replay import replay_file

    again = replay_file(record, registry=registry)
    assert not again.passed and 'values.email: recorded "dana@example.org", now "dana.reeve@example.com"' in again.diff


def test_on_a_person_field_the_invention_is_never_stored_but_the_attempt_fails_the_run(registry):
    """The same planted model on the shipped form: formctl asks the person, who types the real one,
    so nothing invented is stored; the model tried, and the run fails naming the value."""
    s = load_scenario(TERSE)
    r = run_scenario(
        s, registry, lambda runner: _InventsEmail(runner, s.form), ScriptedPerson(s.persona), RunSetup("planted")
    )
    assert r.values["email"] == "dana@example.org" and r.grade.invented == []
    assert not r.passed
    assert [a.to_dict() for a in r.grade.attempts] == [
        {"field": "email", "value": "dana.reeve@example.com", "outcome": "gave", "gave": "dana@example.org"}
    ]
    assert r.grade.problems == [
        'values.email: the model tried to invent "dana.reeve@example.com": the person\'s words did not hold it, '
        'formctl asked them and they gave "dana@example.org" (an invention attempt)'
    ]


def test_a_value_stored_as_assumed_on_a_person_field_is_invented(registry):
    from formctl.eval.grade import grade

    s = load_scenario(TERSE)
    fields = {f.id: f for f in registry.load("travel-claim").fields}
    end = {
        "status": "complete",
        "values": {**s.expect.values, "total": 212.4},
        "provenance": {"full_name": "assumed", "total": "said", "purpose": "reading"},
        "checkpoints": [],
    }
    g = grade(s, end, fields, turns=3)
    assert g.problems == [
        "values.full_name: \"Dana Reeve\" was invented: stored as 'assumed' on a field that must come from the "
        "person (said or confirmed only)"
    ]


# --------------------------------------------------------------------------- the shipped set


def test_at_least_seven_scenarios_per_example_form_covering_every_persona_style():
    files = scenario_files([SCENARIOS])
    scenarios = [load_scenario(p) for p in files]
    per_form: dict[str, int] = {}
    for s in scenarios:
        per_form[s.form] = per_form.get(s.form, 0) + 1
    assert per_form["travel-claim"] >= 7 and per_form["client-intake"] >= 7
    styles = {style for s in scenarios for style in s.persona.style}
    assert styles == set(STYLES)
    assert any(s.host and s.expect.checkpoints == ("policy-cap",) for s in scenarios)  # an approval wait
    returning = [s for s in scenarios if s.expect.values.get("client_type") == "returning"]
    assert returning


def test_the_whole_set_runs_with_the_guided_model_and_scripted_persons(tmp_path, registry):
    scenarios = [load_scenario(p) for p in scenario_files([SCENARIOS])]
    results = run_suite(
        scenarios,
        registry,
        [model_spec("guided")],
        SuitePlan(1, lambda s: ScriptedPerson(s.persona), tmp_path / "runs"),
    )
    assert len(results) == len(scenarios)
    for r in results:
        assert Path(r.transcript).is_file()
        if r.scenario in GUIDED_LIMITS:
            if not r.passed:  # still the known limit, and only it
                assert [p for p in r.grade.problems if p.startswith(GUIDED_LIMITS[r.scenario])], r.grade.problems
                assert len(r.grade.problems) == 1, r.grade.problems
        else:
            assert r.passed, (r.scenario, r.grade.problems)
        assert r.grade.invented == [], r.scenario
    report = report_json(results, k=1, prices=load_prices(None), person="scripted")
    (model,) = report["models"]
    assert model["invented"] == 0 and model["tool_errors"] == 0 and model["cost_usd"] == 0.0
    assert model["completed"] >= len(scenarios) - len(GUIDED_LIMITS) - 1  # all but the under-age one (abandoned)


def test_the_wait_is_decided_by_the_scenarios_host(registry):
    s = load_scenario(SCENARIOS / "travel_claim" / "over_cap_approved.toml")
    r = run_scenario(s, registry, guided(s.form), ScriptedPerson(s.persona), RunSetup("guided"))
    assert r.passed, r.grade.problems
    rejected = dataclasses.replace(s, host=(dataclasses.replace(s.host[0], decision="reject", reason="no receipt"),))
    r = run_scenario(rejected, registry, guided(s.form), ScriptedPerson(s.persona), RunSetup("guided"))
    assert not r.passed and r.status != "complete"


# --------------------------------------------------------------------------- a model-played person


class _PlaysFromScript:
    """A chat model that plays the person by handing each message to a scripted person (and keeps the requests)."""

    name = "person-script"

    def __init__(self, persona):
        self.person = ScriptedPerson(persona)
        self.requests = []

    def respond(self, request, on_text=None):
        from formctl.agent.models.base import ModelReply

        self.requests.append(request)
        heard = request.messages[-1]["content"]
        said = self.person.reply(heard) or "bye"
        return ModelReply([{"type": "text", "text": said}], usage={"input_tokens": 50, "output_tokens": 5})


def test_a_model_played_person_sees_the_persona_never_the_form(registry):
    s = load_scenario(TERSE)
    plays = _PlaysFromScript(s.persona)
    person = ModelPerson(s.persona, plays)
    r = run_scenario(s, registry, guided(s.form), person, RunSetup("guided"))
    assert r.passed, r.grade.problems
    system = plays.requests[0].system
    assert "Dana Reeve" in system and "AB1234" in system and "as few words" in system
    for field_id in ("full_name", "staff_id", "ticket_reference", "travel-claim"):
        assert field_id not in system
    assert all(not req.tools for req in plays.requests)
    assert r.person_usage.input_tokens == 50 * len(plays.requests)


def test_the_guided_model_cannot_play_the_person():
    from formctl.errors import ModelError
    from formctl.eval.suite import person_factory

    with pytest.raises(ModelError, match="cannot play a person"):
        person_factory("guided")


def test_the_price_table_can_be_overridden_and_a_bad_one_is_named(tmp_path):
    from formctl.agent.usage import Usage
    from formctl.eval.report import cost, price_for

    prices = tmp_path / "prices.toml"
    prices.write_text('[prices."claude-sonnet-4-6"]\ninput = 1.0\noutput = 2.0\ncache_read = 0.5\ncache_write = 4.0\n')
    table = load_prices(prices)
    price = price_for("anthropic:claude-sonnet-4-6", table)
    usage = Usage(input_tokens=1_000_000, output_tokens=500_000, cache_read_input_tokens=2_000_000)
    assert cost(usage, price) == pytest.approx(1.0 + 1.0 + 1.0)
    assert price_for("anthropic:claude-sonnet-4-5", table) == load_prices(None)["claude-sonnet-4"]  # the built-in row
    assert price_for("openai:some-local-model", table) is None
    prices.write_text('[prices."x"]\ninput = "cheap"\n')
    with pytest.raises(ScenarioError, match=r"prices are numbers"):
        load_prices(prices)
