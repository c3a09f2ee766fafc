"""formctl eval end to end through the real ``anthropic`` SDK, against the loopback server
(tests/fake_anthropic.py): the model under test is a scripted model behind real HTTP (the
guided model answering each request's body), and a model-played person goes through the SDK
too. Tokens and cost come from what the server reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from fake_anthropic import FakeAnthropic, text
from fixture_project import FORMS
from formctl import FormRegistry
from formctl.agent.models.anthropic import AnthropicModel
from formctl.agent.models.base import ModelRequest
from formctl.agent.models.guided import GuidedModel
from formctl.eval import ModelPerson, ModelSpec, ScriptedPerson, load_scenario, report_json, run_suite
from formctl.eval.report import Price, load_prices
from formctl.eval.suite import SuitePlan

REPO = Path(__file__).resolve().parents[2]
SUBSET = [
    REPO / "scenarios" / "travel_claim" / "terse_rail.toml",
    REPO / "scenarios" / "travel_claim" / "over_cap_approved.toml",
    REPO / "scenarios" / "client_intake" / "returning_client.toml",
]
KEY = "sk-ant-test-0123456789abcdef"


def _system_text(system) -> str:
    if isinstance(system, list):
        return "".join(b.get("text", "") for b in system if isinstance(b, dict))
    return system or ""


def _behind_the_sdk(api: FakeAnthropic) -> ModelSpec:
    """``anthropic:claude-test``: the real SDK over HTTP; the server answers as the guided model would."""

    def build(runner, form_id):
        scripted = GuidedModel(runner, form_id=form_id)

        def respond(body):
            request = ModelRequest(_system_text(body.get("system")), body.get("tools") or [], body["messages"])
            reply = scripted.respond(request)
            return reply.content, reply.stop_reason

        api.answer_with(respond)
        return AnthropicModel("claude-test", api_key=KEY, base_url=api.url, max_retries=0, timeout=10)

    return ModelSpec("anthropic:claude-test", build)


@pytest.fixture
def api():
    with FakeAnthropic() as server:
        yield server


def test_a_subset_runs_through_the_anthropic_sdk_with_tokens_and_cost(tmp_path, api):
    registry = FormRegistry.from_toml(FORMS / "registry.toml")
    scenarios = [load_scenario(p) for p in SUBSET]
    results = run_suite(
        scenarios,
        registry,
        [_behind_the_sdk(api)],
        SuitePlan(1, lambda s: ScriptedPerson(s.persona), tmp_path / "runs"),
    )
    assert [(r.scenario, r.passed) for r in results] == [(s.name, True) for s in scenarios], [
        r.grade.problems for r in results
    ]
    assert not api.unexpected
    calls = sum(r.model_calls for r in results)
    assert len(api.bodies) == calls > 0
    # the fake reports 100 input and 20 output tokens per reply
    assert sum(r.usage.input_tokens for r in results) == 100 * calls
    prices = {**load_prices(None), "claude-test": Price(3.0, 15.0, 0.3, 3.75)}
    report = report_json(results, k=1, prices=prices, person="scripted")
    (model,) = report["models"]
    assert model["model"] == "anthropic:claude-test" and model["pass_1"] == 1.0
    assert model["cost_usd"] == pytest.approx(calls * (100 * 3.0 + 20 * 15.0) / 1_000_000)
    # every request had the form's tools and the tier-0 tail, as `formctl run` sends them
    assert all(b["tools"] and b["model"] == "claude-test" for b in api.bodies)


def test_a_model_played_person_through_the_sdk(tmp_path, api):
    """The person is a model too (here the scripted person answering behind a second loopback server)."""
    registry = FormRegistry.from_toml(FORMS / "registry.toml")
    s = load_scenario(SUBSET[0])
    with FakeAnthropic() as person_api:
        scripted = ScriptedPerson(s.persona)

        def plays(body):
            heard = body["messages"][-1]["content"]
            heard = heard if isinstance(heard, str) else "".join(b.get("text", "") for b in heard)
            return [text(scripted.reply(heard) or "bye")], None

        person_api.answer_with(plays)
        person_model = AnthropicModel("claude-person", api_key=KEY, base_url=person_api.url, max_retries=0)
        results = run_suite(
            [s],
            registry,
            [_behind_the_sdk(api)],
            SuitePlan(1, lambda sc: ModelPerson(sc.persona, person_model), None),
        )
        (r,) = results
        assert r.passed, r.grade.problems
        bodies = person_api.bodies
        assert bodies and all(not b.get("tools") for b in bodies)
        assert "Dana Reeve" in _system_text(bodies[0]["system"]) and "staff_id" not in _system_text(bodies[0]["system"])
        assert r.person_usage.input_tokens == 100 * len(bodies)


# --------------------------------------------------------------------------- the OpenAI SDK


class _Recording:
    """The guided model, keeping every reply it gave: the script a loopback server plays back."""

    def __init__(self, runner, form_id, replies):
        self.inner, self.replies, self.name = GuidedModel(runner, form_id=form_id), replies, "guided"

    def respond(self, request, on_text=None):
        reply = self.inner.respond(request, on_text=on_text)
        self.replies.append(reply)
        return reply


@pytest.mark.parametrize("path", SUBSET, ids=lambda p: p.stem)
def test_a_subset_runs_through_the_openai_sdk(tmp_path, path):
    """A scripted model behind the real ``openai`` SDK: the guided model's replies for this
    scenario, recorded once, played back by the Chat Completions loopback server."""
    pytest.importorskip("openai")
    from fake_openai import FakeOpenAI
    from formctl.agent.models.openai import OpenAIChatModel

    registry = FormRegistry.from_toml(FORMS / "registry.toml")
    s = load_scenario(path)
    replies: list = []
    first = run_suite(
        [s],
        registry,
        [ModelSpec("guided", lambda runner, form: _Recording(runner, form, replies))],
        SuitePlan(1, lambda sc: ScriptedPerson(sc.persona), None),
    )
    assert first[0].passed, first[0].grade.problems
    with FakeOpenAI() as api:
        for reply in replies:
            api.reply(*reply.content, usage={"prompt_tokens": 300, "completion_tokens": 30, "cached_tokens": 200})
        spec = ModelSpec(
            "openai:gpt-test",
            lambda runner, form: OpenAIChatModel("gpt-test", api_key="sk-test", base_url=api.base_url, max_retries=0),
        )
        (r,) = run_suite([s], registry, [spec], SuitePlan(1, lambda sc: ScriptedPerson(sc.persona), tmp_path))
        assert not api.unexpected and not api.rejected, (api.unexpected, api.rejected)
        assert api.pending == 0
    assert r.passed, r.grade.problems
    assert r.values == first[0].values and r.model_calls == len(replies)
    assert r.usage.input_tokens + r.usage.cache_read_input_tokens == 300 * len(replies)
    report = report_json(
        [r], k=1, prices={**load_prices(None), "gpt-test": Price(2.0, 8.0, 0.5, 2.0)}, person="scripted"
    )
    assert report["models"][0]["cost_usd"] > 0
    assert Path(r.transcript).is_file()
