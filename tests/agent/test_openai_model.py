"""Whole conversations through the real ``openai`` SDK, against a loopback Chat Completions API.

The fake server (``tests/fake_openai.py``) speaks real HTTP and real SSE, so the SDK's
request building, streaming, retries and error mapping all run. What every adapter must do
is in ``test_model_contract.py``; this file holds what is particular to Chat Completions:
the wire shape, a weaker model's mistakes, finish reasons, local servers, choosing the model.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from fake_openai import FakeOpenAI, text, tool_use
from fixture_project import REGISTRY as FORMS
from formctl import FormRegistry, FormRunner, JsonFileAdapter
from formctl.agent.events import ToolResult
from formctl.agent.loop import NOTHING_SAID, ChatLoop
from formctl.agent.models import choose_model, model_label, pick_model
from formctl.agent.models.anthropic import AnthropicModel
from formctl.agent.models.base import ModelRequest
from formctl.agent.models.openai import LOCAL_KEY, OpenAIChatModel
from formctl.errors import KeyRejectedError, ModelError
from helpers.chat_loop import make_loop

KEY = "sk-proj-test-0123456789abcdef"
CLAIMANT = {"full_name": "Dana Reeve", "staff_id": "AB1234", "email": "dana@example.com"}


@pytest.fixture
def api():
    with FakeOpenAI() as server:
        yield server


def make_runner(store) -> FormRunner:
    return FormRunner(JsonFileAdapter(store), registry=FormRegistry.from_toml(FORMS), subject="dana")


def make_model(api, **kwargs) -> OpenAIChatModel:
    options = {"api_key": KEY, "base_url": api.base_url, "max_retries": 1, "timeout": 5, **kwargs}
    return OpenAIChatModel("gpt-test", **options)


def started(api, loop, values=CLAIMANT) -> None:
    api.reply(tool_use("form_start", {"form": "travel-claim", "values": values, "quotes": values}))
    api.reply(text("Where did you go?"))
    loop.send("Dana Reeve, AB1234, dana@example.com")


# --------------------------------------------------------------------------- the wire shape


def test_the_request_is_chat_completions_with_the_system_prompt_first_and_tier0_ending_the_last_user_message(
    api, store
):
    loop, _ = make_loop(make_runner(store), make_model(api))
    api.reply(text("Hi! "), tool_use("form_start", {"form": "travel-claim", "values": {"full_name": "Dana Reeve"}}))
    api.reply(text("Your staff ID?"))
    loop.send("I'm Dana Reeve")
    first, second = api.bodies
    assert first["messages"][0] == {"role": "system", "content": loop.system_prompt}
    assert first["stream"] is True and first["stream_options"] == {"include_usage": True}
    assert first["max_tokens"] == 1024 and "max_completion_tokens" not in first  # not OpenAI's own API
    assert [t["function"]["name"] for t in first["tools"]] == [t["name"] for t in loop.tool_definitions]
    assert first["tools"][0]["function"]["parameters"] == loop.tool_definitions[0]["input_schema"]
    assert first["messages"][-1] == {"role": "user", "content": "I'm Dana Reeve"}  # nothing open: no tier 0
    assistant, result, user = second["messages"][-3:]
    call = assistant["tool_calls"][0]
    assert assistant["content"] == "Hi! " and call["function"]["name"] == "form_start"
    assert json.loads(call["function"]["arguments"])["values"] == {"full_name": "Dana Reeve"}
    assert result["role"] == "tool" and result["tool_call_id"] == call["id"]
    assert json.loads(result["content"])["status"] == "success"
    assert user["role"] == "user" and user["content"].endswith(loop.tier0) and user["content"].startswith("[form:")


def test_openais_own_api_gets_max_completion_tokens():
    params = OpenAIChatModel("gpt-test", api_key=KEY).request_params(
        ModelRequest(system="s", tools=[], messages=[{"role": "user", "content": "hi"}], max_tokens=300)
    )
    assert params["max_completion_tokens"] == 300 and "max_tokens" not in params


def test_a_server_that_numbers_no_tool_call_still_gets_each_call_answered_in_order(api, store):
    loop, _ = make_loop(make_runner(store), make_model(api))
    started(api, loop)
    api.reply(
        tool_use("form_fill", {"values": {"destination": "Leeds"}}, id="a1"),
        tool_use("form_fill", {"values": {"purpose": "Workshop"}}, id="a2"),
        indexed=False,
    )
    api.reply(text("When?"))
    turn = loop.send("Leeds, for a workshop")
    assert turn.tool_calls == 2 and turn.error is None
    assert make_runner(store).open_instance().in_force_values()["purpose"] == "Workshop"
    answered = [m["tool_call_id"] for m in api.bodies[-1]["messages"] if m["role"] == "tool"]
    assert answered[-2:] == ["a1", "a2"]


# --------------------------------------------------------------------------- a weaker model


def test_arguments_that_are_not_json_are_an_error_result_and_nothing_is_written(api, store):
    runner = make_runner(store)
    loop, events = make_loop(runner, make_model(api))
    started(api, loop)
    before = runner.open_instance().version
    api.reply(tool_use("form_fill", id="bad", arguments='{"values": {"destination": "Leeds"'))
    api.reply(text("Sorry, where did you go?"))
    turn = loop.send("Leeds")
    assert turn.error is None and turn.text == "Sorry, where did you go?"
    result = [e for e in events if isinstance(e, ToolResult)][-1]
    assert result.is_error and "expected a JSON object" in result.result["message"]
    assert make_runner(store).open_instance().version == before
    sent_back = api.bodies[-1]["messages"]
    call = next(m for m in sent_back if m.get("tool_calls") and m["tool_calls"][0]["id"] == "bad")
    assert call["tool_calls"][0]["function"]["arguments"] == '{"values": {"destination": "Leeds"'  # as the model said


def test_arguments_that_are_json_but_not_an_object_are_an_error_result(api, store):
    runner = make_runner(store)
    loop, events = make_loop(runner, make_model(api))
    started(api, loop)
    api.reply(tool_use("form_fill", arguments='["Leeds"]'))
    api.reply(text("Where?"))
    loop.send("Leeds")
    result = [e for e in events if isinstance(e, ToolResult)][-1]
    assert result.is_error and "got str" in result.result["message"]


def test_empty_arguments_are_an_empty_object(api, store):
    loop, events = make_loop(make_runner(store), make_model(api))
    api.reply(tool_use("form_list", arguments=""))
    api.reply(text("Two forms."))
    loop.send("What is there?")
    result = [e for e in events if isinstance(e, ToolResult)][-1]
    assert not result.is_error


def test_a_reply_with_neither_text_nor_a_tool_call_is_a_clear_stop(api, store):
    loop, _ = make_loop(make_runner(store), make_model(api))
    api.reply()
    turn = loop.send("hello?")
    assert turn.error == NOTHING_SAID
    api.reply(text("Hello!"))
    assert loop.send("hello??").text == "Hello!"
    assert api.bodies[-1]["messages"][-1] == {"role": "user", "content": "hello?\n\nhello??"}


def test_a_reply_cut_off_at_length_runs_none_of_its_tool_calls(api, store):
    runner = make_runner(store)
    loop, _ = make_loop(runner, make_model(api))
    started(api, loop)
    before = runner.open_instance().version
    api.reply(text("Noting"), tool_use("form_fill", {"values": {"destination": "Leeds"}}), finish_reason="length")
    turn = loop.send("Leeds")
    assert turn.stop_reason == "max_tokens" and "token limit" in turn.error
    assert make_runner(store).open_instance().version == before


def test_a_content_filtered_reply_is_said_plainly_and_its_tool_calls_are_not_run(api, store):
    runner = make_runner(store)
    loop, _ = make_loop(runner, make_model(api))
    started(api, loop)
    before = runner.open_instance().version
    api.reply(text("I"), tool_use("form_fill", {"values": {"destination": "Leeds"}}), finish_reason="content_filter")
    turn = loop.send("Leeds")
    assert "content filter" in turn.error and turn.tool_calls == 0
    assert make_runner(store).open_instance().version == before


def test_a_server_that_says_stop_with_tool_calls_still_has_them_run(api, store):
    loop, _ = make_loop(make_runner(store), make_model(api))
    started(api, loop)
    api.reply(tool_use("form_fill", {"values": {"destination": "Leeds"}}), finish_reason="stop")  # Ollama does this
    api.reply(text("When?"))
    assert loop.send("Leeds").tool_calls == 1
    assert make_runner(store).open_instance().in_force_values()["destination"] == "Leeds"


# --------------------------------------------------------------------------- failures


@pytest.mark.parametrize(
    ("inject", "words"),
    [
        (
            lambda api: api.fault(400, code="context_length_exceeded", message="maximum context length is 8192"),
            "context window",
        ),
        (lambda api: api.fault(400, code="content_filter", message="flagged"), "content filter"),
        (lambda api: api.fault(429, times=2, code="insufficient_quota", message="You exceeded your quota"), "quota"),
        (lambda api: api.fault(503, times=2), "failed (503) after 1 retry"),
        (lambda api: api.stream_error("server_error"), "error mid-reply"),
        (lambda api: api.drop_mid_stream(), "dropped mid-reply"),
        (lambda api: api.malformed(), "nothing from it was applied"),
    ],
)
def test_each_failure_is_one_line_that_says_what_happened(api, store, inject, words):
    loop, _ = make_loop(make_runner(store), make_model(api))
    inject(api)
    turn = loop.send("hi")
    assert turn.stop_reason == "error" and words in turn.error and "\n" not in turn.error
    assert KEY not in turn.error


def test_a_refused_key_stops_the_chat_and_never_shows_the_key(api, store):
    loop, _ = make_loop(make_runner(store), make_model(api))
    api.fault(401, message=f"Incorrect API key provided: {KEY}")
    turn = loop.send("hi")
    assert turn.code == KeyRejectedError.code and "refused the key (401)" in turn.error
    assert KEY not in turn.error and KEY not in repr(loop.model)
    assert api.requests[-1].headers["authorization"] == f"Bearer {KEY}"


def test_a_rate_limit_is_retried_by_the_sdk(api, store):
    loop, _ = make_loop(make_runner(store), make_model(api))
    api.fault(429)
    api.reply(text("Hello!"))
    assert loop.send("hi").text == "Hello!"
    assert len(api.bodies) == 2  # the refused request, then the SDK's retry


def test_nothing_listening_is_one_line_naming_the_server(store):
    loop = ChatLoop(
        make_runner(store),
        OpenAIChatModel("llama3.1", base_url="http://127.0.0.1:9/v1", max_retries=0, timeout=2),
        form_id="travel-claim",
    )
    turn = loop.send("hi")
    assert turn.error.startswith("Could not reach the model server at http://127.0.0.1:9/v1")


def test_a_server_that_does_not_know_stream_options_is_asked_again_without_them(store):
    with FakeOpenAI(knows_stream_options=False) as api:
        loop, _ = make_loop(make_runner(store), make_model(api))
        api.reply(text("Hello."))
        api.reply(text("Still here."))
        assert loop.send("hi").text == "Hello."
        assert loop.send("and?").text == "Still here."
        assert ["stream_options" in b for b in api.bodies] == [True, False, False]  # asked once, then never
        assert loop.usage.output_tokens == 0  # such a server sends no usage: the figures stay at zero


# --------------------------------------------------------------------------- choosing the model


def test_a_local_server_needs_no_key(api, store, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", api.base_url)
    monkeypatch.setenv("FORMCTL_MODEL", "openai:llama3.1")
    model = pick_model(make_runner(store))
    assert isinstance(model, OpenAIChatModel) and model.name == "llama3.1" and model_label(model) == "openai:llama3.1"
    api.reply(text("Hello."))
    assert ChatLoop(make_runner(store), model, form_id="travel-claim").send("hi").text == "Hello."
    assert api.requests[-1].headers["authorization"] == f"Bearer {LOCAL_KEY}"
    assert api.bodies[-1]["model"] == "llama3.1"


def test_openais_own_api_without_a_key_is_a_line_not_a_request(store):
    turn = ChatLoop(make_runner(store), OpenAIChatModel("gpt-test"), form_id="travel-claim").send("hi")
    assert "No OPENAI_API_KEY is set" in turn.error


def test_the_provider_is_the_prefix_or_else_the_key_that_is_set(monkeypatch):
    assert choose_model().provider == "guided"
    assert choose_model("gpt-4.1").provider == "guided"  # a bare name and no key: offline
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    assert choose_model("gpt-4.1").spec == "openai:gpt-4.1"
    assert choose_model().spec == "openai:gpt-4.1"
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    assert choose_model("claude-x").spec == "anthropic:claude-x"  # both keys: Anthropic, as before
    assert choose_model("openai:gpt-4.1-mini").spec == "openai:gpt-4.1-mini"
    assert choose_model("OpenAI:gpt-x").provider == "openai"
    assert choose_model("guided").provider == "guided" and choose_model("guided:").provider == "guided"
    assert choose_model("openai:gpt-x", offline=True).provider == "guided"  # --offline wins
    monkeypatch.setenv("FORMCTL_MODEL", "openai:from-env")
    assert choose_model().spec == "openai:from-env" and choose_model("anthropic:flag").spec == "anthropic:flag"


def test_a_named_provider_without_its_key_or_an_unknown_one_is_an_error(monkeypatch):
    with pytest.raises(ModelError, match="needs OPENAI_API_KEY"):
        choose_model("openai:gpt-4.1")
    with pytest.raises(ModelError, match="needs ANTHROPIC_API_KEY"):
        choose_model("anthropic:claude-x")
    with pytest.raises(ModelError, match='Unknown model provider "gemini"'):
        choose_model("gemini:pro")


def test_pick_model_builds_the_adapter_it_names(monkeypatch, store):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    runner = make_runner(store)
    assert isinstance(pick_model(runner, model_name="openai:gpt-x"), OpenAIChatModel)
    assert isinstance(pick_model(runner, model_name="anthropic:claude-x"), AnthropicModel)
    assert model_label(pick_model(runner, model_name="claude-x")) == "anthropic:claude-x"


@pytest.mark.e2e
def test_importing_formctl_and_the_models_imports_neither_sdk():
    code = (
        "import sys, formctl, formctl.agent.loop, formctl.agent.models, formctl.agent.models.openai;"
        "formctl.agent.models.choose_model('guided');"
        "bad = [m for m in ('openai', 'anthropic', 'httpx2', 'httpx') if m in sys.modules];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
