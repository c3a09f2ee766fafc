"""One contract for every model adapter (docs/models.md, "What every adapter promises").

Each test runs against both provider adapters, each through its real SDK against a strict
loopback server of its API (``fake_anthropic.py``, ``fake_openai.py``): the same scripted
replies (written once, in the Messages shape both fakes take), read back from each wire
format through a small :class:`Wire` view. The guarantees that live in the loop rather than
the wire (a fixed prefix, tier 0 at the tail, ids round-tripped, a clear stop) are also
checked on the scripted and guided models, which receive the same :class:`ModelRequest`.

The fakes refuse what the real APIs refuse (a tool result without its call, a system prompt
changed mid-conversation), and a test here sends exactly that, so this suite can fail.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

import pytest

import fake_anthropic
import fake_openai
from fixture_project import REGISTRY as FORMS
from formctl import FormRegistry, FormRunner, JsonFileAdapter
from formctl.agent.events import ToolResult
from formctl.agent.loop import NOTHING_SAID, ChatLoop
from formctl.agent.models.anthropic import AnthropicModel
from formctl.agent.models.base import ModelReply, ModelRequest
from formctl.agent.models.openai import OpenAIChatModel
from formctl.agent.models.scripted import ScriptedModel
from formctl.errors import KeyRejectedError, ModelError
from helpers.chat_loop import make_loop

KEY = "sk-contract-0123456789abcdef"
text = fake_anthropic.text  # both fakes take the same blocks
CLAIMANT = {"full_name": "Dana Reeve", "staff_id": "AB1234", "email": "dana@example.com"}


def tool_use(name: str, input: dict[str, Any], id: str | None = None) -> dict[str, Any]:
    return fake_anthropic.tool_use(name, input, id)


# --------------------------------------------------------------------------- each wire, read the same way


@dataclass
class Wire:
    """One provider: its fake server, its adapter, and how to read a request body it was sent."""

    provider: str
    api: Any
    build: Any

    def model(self, **kwargs: Any) -> Any:
        return self.build(self.api, **kwargs)

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return self.api.bodies

    def prefix(self, body: dict[str, Any]) -> tuple[str, str]:
        """The system prompt and the tool list, as the bytes that were sent."""
        if self.provider == "anthropic":
            return json.dumps(body["system"]), json.dumps(body["tools"])
        return json.dumps(body["messages"][0]), json.dumps(body["tools"])

    def system_text(self, body: dict[str, Any]) -> str:
        if self.provider == "anthropic":
            return body["system"][0]["text"]
        return body["messages"][0]["content"]

    def user_texts(self, body: dict[str, Any]) -> list[str]:
        """Every user text sent, oldest first, one entry per user message."""
        out = []
        for message in body["messages"]:
            if message["role"] != "user":
                continue
            content = message["content"]
            if isinstance(content, str):
                out.append(content)
            else:
                out.append("\n\n".join(b["text"] for b in content if b["type"] == "text"))
        return out

    def last_content_is(self, body: dict[str, Any], tier0: str) -> bool:
        """True when the request's very last content is ``tier0``."""
        last = body["messages"][-1]
        assert last["role"] == "user"
        if self.provider == "anthropic":
            block = last["content"][-1]
            return block["type"] == "text" and block["text"] == tier0
        return last["content"].endswith("\n\n" + tier0) or last["content"] == tier0

    def answered(self, body: dict[str, Any]) -> list[str]:
        """The call ids the request's last turn answers, in order."""
        if self.provider == "anthropic":
            return [b["tool_use_id"] for b in body["messages"][-1]["content"] if b["type"] == "tool_result"]
        out: list[str] = []
        for message in reversed(body["messages"][:-1]):
            if message["role"] != "tool":
                break
            out.insert(0, message["tool_call_id"])
        return out

    def fault(self, status: int, times: int = 1) -> None:
        self.api.fault(status, times=times)


def _anthropic(api: Any, **kwargs: Any) -> AnthropicModel:
    return AnthropicModel(
        "claude-test", **{"api_key": KEY, "base_url": api.url, "max_retries": 1, "timeout": 5, **kwargs}
    )


def _openai(api: Any, **kwargs: Any) -> OpenAIChatModel:
    options = {"api_key": KEY, "base_url": api.base_url, "max_retries": 1, "timeout": 5, **kwargs}
    return OpenAIChatModel("gpt-test", **options)


@pytest.fixture(params=["anthropic", "openai"])
def wire(request):
    fake = fake_anthropic.FakeAnthropic if request.param == "anthropic" else fake_openai.FakeOpenAI
    build = _anthropic if request.param == "anthropic" else _openai
    with fake() as api:
        yield Wire(request.param, api, build)
        assert not api.unexpected, "the test sent more requests than it scripted"


def make_runner(store: str) -> FormRunner:
    return FormRunner(JsonFileAdapter(store), registry=FormRegistry.from_toml(FORMS), subject="dana")


# --------------------------------------------------------------------------- the prefix and the tail


def test_the_prefix_is_byte_identical_and_tier0_is_only_ever_the_last_content(wire, store):
    loop, _ = make_loop(make_runner(store), wire.model())
    wire.api.reply(tool_use("form_start", {"form": "travel-claim", "values": CLAIMANT, "quotes": CLAIMANT}))
    wire.api.reply(text("Where did you go?"))
    loop.send("Dana Reeve, AB1234, dana@example.com")
    wire.api.reply(tool_use("form_fill", {"values": {"destination": "Leeds"}, "quotes": {"destination": "Leeds"}}))
    wire.api.reply(text("When?"))
    loop.send("Leeds")
    wire.api.reply(text("Noted."))
    loop.send("Next week")

    bodies = wire.bodies
    assert len(bodies) == 5 and not wire.api.rejected
    assert len({wire.prefix(b) for b in bodies}) == 1  # byte-identical on every request
    tier0s = [b for b in bodies[1:]]  # from the second request on, a form is open
    for body in tier0s:
        assert "[form: travel-claim]" not in wire.system_text(body)
        sent = [t for t in wire.user_texts(body)]
        assert not any("[form: travel-claim]" in t for t in sent[:-1]), "a stale tier 0 was kept in an earlier turn"
        tier0 = "[form: travel-claim]" + sent[-1].rsplit("[form: travel-claim]", 1)[1]
        assert wire.last_content_is(body, tier0)
    assert loop.tier0 and wire.last_content_is(bodies[-1], loop.tier0)


def test_a_changed_system_prompt_mid_conversation_is_refused_by_the_server(wire, store):
    model = wire.model()
    messages = [{"role": "user", "content": [{"type": "text", "text": "Hello, I'm Dana"}]}]
    wire.api.reply(text("Hello Dana."))
    model.respond(ModelRequest(system="You help.", tools=[], messages=messages))
    messages += [
        {"role": "assistant", "content": [{"type": "text", "text": "Hello Dana."}]},
        {"role": "user", "content": [{"type": "text", "text": "Thanks"}]},
    ]
    with pytest.raises(ModelError, match=r"\(400\).*system prompt changed"):
        model.respond(ModelRequest(system="You help. Today is Tuesday.", tools=[], messages=messages))
    assert len(wire.api.rejected) == 1


def test_a_tool_result_without_its_call_is_refused_by_the_server(wire, store):
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "Hello"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Let me look."}]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "call_nobody_made", "content": "{}", "is_error": False},
                {"type": "text", "text": "and?"},
            ],
        },
    ]
    with pytest.raises(ModelError, match=r"\(400\)"):
        wire.model().respond(ModelRequest(system="You help.", tools=[], messages=messages))
    assert len(wire.api.rejected) == 1


# --------------------------------------------------------------------------- tool calls


def test_tool_call_ids_round_trip_and_several_calls_run_in_order(wire, store):
    loop, events = make_loop(make_runner(store), wire.model())
    wire.api.reply(tool_use("form_start", {"form": "travel-claim", "values": CLAIMANT, "quotes": CLAIMANT}, id="c0"))
    wire.api.reply(text("Where?"))
    loop.send("Dana Reeve, AB1234, dana@example.com")
    wire.api.reply(
        text("Noting both."),
        tool_use("form_fill", {"values": {"destination": "Leeds"}}, id="first_call"),
        tool_use("form_fill", {"values": {"destination": "York"}}, id="second_call"),
    )
    wire.api.reply(text("York, then."))
    turn = loop.send("Leeds. No, York.")
    assert turn.tool_calls == 2 and turn.error is None
    assert wire.answered(wire.bodies[-1]) == ["first_call", "second_call"]
    assert [e.id for e in events if isinstance(e, ToolResult)] == ["c0", "first_call", "second_call"]
    assert make_runner(store).open_instance().in_force_values()["destination"] == "York"  # run in the model's order


def test_an_unknown_tool_is_an_error_result_and_nothing_is_written(wire, store):
    loop, events = make_loop(make_runner(store), wire.model())
    wire.api.reply(tool_use("form_start", {"form": "travel-claim", "values": CLAIMANT, "quotes": CLAIMANT}))
    wire.api.reply(text("Where?"))
    loop.send("Dana Reeve, AB1234, dana@example.com")
    version = make_runner(store).open_instance().version
    wire.api.reply(tool_use("form_delete_everything", {"values": {"destination": "Leeds"}}))
    wire.api.reply(text("Sorry. Where did you go?"))
    assert loop.send("Leeds").error is None
    result = [e for e in events if isinstance(e, ToolResult)][-1]
    assert result.is_error and result.result["data"] == {"code": "unknown_tool"}
    assert make_runner(store).open_instance().version == version


def test_an_endless_tool_loop_is_stopped_with_one_line(wire, store):
    loop, _ = make_loop(make_runner(store), wire.model(), max_iterations=3)
    for _ in range(3):
        wire.api.reply(tool_use("form_list", {}))
    turn = loop.send("What can I fill in?")
    assert turn.stop_reason == "iteration_limit" and "iteration limit" in turn.error
    wire.api.reply(text("Two forms."))
    assert loop.send("Well?").text == "Two forms."  # the conversation is still valid to the server


def test_a_reply_with_nothing_in_it_is_a_clear_stop(wire, store):
    loop, _ = make_loop(make_runner(store), wire.model())
    wire.api.reply()
    assert loop.send("Hello?").error == NOTHING_SAID


# --------------------------------------------------------------------------- the fault ladder


LADDER = {
    "refused key (401)": (401, 1, "refused the key"),
    "rate limit past the retries (429)": (429, 2, "Rate-limited"),
    "server error past the retries (500)": (500, 2, "failed (500)"),
}


@pytest.mark.parametrize("rung", list(LADDER))
def test_a_fault_is_one_line_loses_no_answer_and_the_next_message_works(wire, store, rung):
    status, times, words = LADDER[rung]
    loop, _ = make_loop(make_runner(store), wire.model())
    wire.api.reply(tool_use("form_start", {"form": "travel-claim", "values": CLAIMANT, "quotes": CLAIMANT}))
    wire.api.reply(text("Where?"))
    loop.send("Dana Reeve, AB1234, dana@example.com")
    wire.fault(status, times)
    failed = loop.send("Leeds")
    assert failed.stop_reason == "error" and words in failed.error and "\n" not in failed.error
    assert KEY not in failed.error
    assert (failed.code == KeyRejectedError.code) == (status == 401)
    assert make_runner(store).open_instance().in_force_values() == CLAIMANT
    wire.api.reply(text("Where did you go?"))
    assert loop.send("Leeds, I said").text == "Where did you go?"
    assert wire.user_texts(wire.bodies[-1])[-1].startswith("Leeds\n\nLeeds, I said")


def test_a_single_rate_limit_is_retried_by_the_sdk(wire, store):
    loop, _ = make_loop(make_runner(store), wire.model())
    wire.fault(429)
    wire.api.reply(text("Hello!"))
    assert loop.send("hi").text == "Hello!"
    assert len(wire.bodies) == 2  # the refused request, then the SDK's retry


def test_a_dropped_stream_applies_nothing(wire, store):
    loop, _ = make_loop(make_runner(store), wire.model())
    wire.api.drop_mid_stream("Let me")
    turn = loop.send("hi")
    assert "dropped mid-reply" in turn.error and loop.messages[-1]["role"] == "user"


def test_a_stream_that_stalls_after_its_first_bytes_is_a_reply_cut_off_not_a_server_that_never_answered(wire, store):
    # SDK releases report a read timeout mid-stream differently (the HTTP library's own error, or
    # the SDK's APITimeoutError): the line follows from the reply having begun
    loop = ChatLoop(make_runner(store), wire.model(max_retries=0, timeout=0.3), form_id="travel-claim")
    wire.api.drop_mid_stream("Let me", stall=1.5)
    turn = loop.send("hi")
    assert "dropped mid-reply; nothing from that reply was applied" in turn.error and "\n" not in turn.error
    assert loop.messages[-1]["role"] == "user"
    wire.api.reply(text("Hello!"))
    assert loop.send("hello?").text == "Hello!"


def test_a_server_that_never_answers_is_a_timeout_line(wire, store):
    loop = ChatLoop(make_runner(store), wire.model(max_retries=0, timeout=0.1), form_id="travel-claim")
    wire.api.hang(1.5)
    assert "did not answer within 0.1s" in loop.send("hi").error


def _named(wire: Wire, base_url: str | None = None) -> tuple[str, str, str]:
    """How each adapter's lines name its service: (name, where a connection failed, what to check)."""
    if wire.provider == "anthropic":
        return "the Anthropic API", f"the Anthropic API at {base_url or wire.api.url}", "the connection"
    name = f"the model server at {base_url or wire.api.base_url}"
    return name, name, "the connection (and OPENAI_BASE_URL)"


def test_what_both_sdks_raise_alike_is_the_same_line_naming_each_service(wire, store):
    """Both SDKs come from one code generator: a cut-off reply, a timeout and a server out of reach
    are worded once, for either adapter, naming its own service."""
    name, _, _ = _named(wire)
    who = name[0].upper() + name[1:]
    loop = ChatLoop(make_runner(store), wire.model(max_retries=0, timeout=0.2), form_id="travel-claim")
    wire.api.drop_mid_stream("Let me")
    assert loop.send("hi").error == (
        f"The connection to {name} dropped mid-reply; nothing from that reply was applied. Send again."
    )
    wire.api.hang(1.0)
    assert loop.send("hi").error == f"{who} did not answer within 0.2s. Send again."

    nowhere = "http://127.0.0.1:9/v1"
    _, reach, check = _named(wire, nowhere)
    away = ChatLoop(make_runner(store), wire.model(base_url=nowhere, max_retries=0), form_id="travel-claim")
    error = away.send("hi").error
    assert error.startswith(f"Could not reach {reach}") and error.endswith(f"Check {check}, then send again.")
    assert "\n" not in error


# --------------------------------------------------------------------------- usage


def test_usage_with_cached_prompt_tokens_adds_up(wire, store):
    loop, _ = make_loop(make_runner(store), wire.model())
    if wire.provider == "anthropic":
        wire.api.reply(text("One."), usage={"input_tokens": 50, "output_tokens": 5, "cache_read_input_tokens": 1200})
        wire.api.reply(text("Two."), usage={"input_tokens": 70, "output_tokens": 6, "cache_read_input_tokens": 1300})
    else:  # prompt_tokens include the cached ones
        wire.api.reply(text("One."), usage={"prompt_tokens": 1250, "completion_tokens": 5, "cached_tokens": 1200})
        wire.api.reply(text("Two."), usage={"prompt_tokens": 1370, "completion_tokens": 6, "cached_tokens": 1300})
    loop.send("one")
    loop.send("two")
    assert loop.usage.input_tokens == 120
    assert loop.usage.output_tokens == 11
    assert loop.usage.cache_read_input_tokens == 2500
    assert "2,500 cache reads" in loop.usage.line()


# --------------------------------------------------------------------------- the models that run offline


class Recording:
    """Wraps a model and keeps a copy of every request the loop sent it."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.name = model.name
        self.requests: list[ModelRequest] = []

    def respond(self, request: ModelRequest, on_text: Any = None) -> ModelReply:
        self.requests.append(ModelRequest(request.system, request.tools, json.loads(json.dumps(request.messages))))
        return self.model.respond(request, on_text)


def _assert_prefix_and_tail(requests: list[ModelRequest]) -> None:
    assert requests
    assert len({(r.system, json.dumps(r.tools)) for r in requests}) == 1
    for request in requests:
        assert "[form: travel-claim]" not in request.system
        last = request.messages[-1]
        earlier = json.dumps(request.messages[:-1])
        assert "[form: travel-claim]" not in earlier
        blocks = last["content"]
        tier0 = [b for b in blocks if b.get("type") == "text" and b["text"].startswith("[form: travel-claim]")]
        assert tier0 in ([], [blocks[-1]])


def test_the_scripted_model_gets_the_same_prefix_and_tail_and_its_ids_round_trip(store):
    scripted = ScriptedModel(
        [
            ModelReply([tool_use("form_start", {"form": "travel-claim", "values": CLAIMANT}, id="s1")], "tool_use"),
            ModelReply([text("Where?")]),
            ModelReply(
                [
                    tool_use("form_fill", {"values": {"destination": "Leeds"}}, id="s2"),
                    tool_use("form_fill", {"values": {"purpose": "Workshop"}}, id="s3"),
                ],
                "tool_use",
            ),
            ModelReply([]),
        ]
    )
    loop = ChatLoop(make_runner(store), scripted, form_id="travel-claim")
    loop.send("Dana Reeve, AB1234, dana@example.com")
    assert loop.send("Leeds, a workshop").error == NOTHING_SAID
    _assert_prefix_and_tail(scripted.requests)
    answered = [b["tool_use_id"] for b in scripted.requests[-1].messages[-1]["content"] if b["type"] == "tool_result"]
    assert answered == ["s2", "s3"]


def test_the_guided_model_gets_the_same_prefix_and_tail(store):
    from formctl.agent.models.guided import GuidedModel

    runner = make_runner(store)
    model = Recording(GuidedModel(runner, form_id="travel-claim"))
    loop = ChatLoop(runner, model, form_id="travel-claim")
    for line in ["Hello", "Dana Reeve", "AB1234", "dana@example.com"]:
        assert loop.send(line).error is None
    _assert_prefix_and_tail(model.requests)
    assert make_runner(store).open_instance().in_force_values()["staff_id"] == "AB1234"


def test_a_line_with_an_undecodable_byte_does_not_break_the_conversation(wire, store):
    """A terminal that cannot decode a byte hands formctl a lone surrogate ("Jos\\udce9"): UTF-8
    cannot encode one, so sent as it is it would fail this request and every later one."""
    loop, _ = make_loop(make_runner(store), wire.model())
    wire.api.reply(text("Nice to meet you."))
    assert loop.send("I'm Jos\udce9").error is None
    wire.api.reply(text("Where to?"))
    assert loop.send("Claim, please").error is None
    assert wire.user_texts(wire.bodies[-1])[0] == "I'm Jos\ufffd"
    assert loop.messages[0]["content"][0]["text"] == "I'm Jos\udce9"  # the history keeps what was typed


# --------------------------------------------------------------------------- what the adapters share (_sdk.py)


def test_the_sdks_debug_log_variable_never_leaves_a_log_on_that_could_carry_the_key(wire, store, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_LOG" if wire.provider == "anthropic" else "OPENAI_LOG", "debug")
    loggers = [logging.getLogger(name) for name in (wire.provider, "httpx")]
    levels = [logger.level for logger in loggers]
    try:
        for logger in loggers:
            logger.setLevel(logging.DEBUG)  # what the SDK does at import with the variable set
        loop, _ = make_loop(make_runner(store), wire.model())
        wire.api.reply(text("Hello."))

        assert loop.send("hi").text == "Hello."

        assert [logger.level for logger in loggers] == [logging.WARNING, logging.WARNING]
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


def test_a_key_is_scrubbed_from_an_error_line_unless_too_short_to_find_safely():
    from formctl.agent.models._sdk import scrub

    assert scrub(f"401 for key {KEY}\n  at https://api?k={KEY}", KEY) == "401 for key [key] at https://api?k=[key]"
    assert scrub("a bad request", "a") == "a bad request"


@pytest.mark.parametrize("adapter", [AnthropicModel, OpenAIChatModel])
def test_both_sdk_adapters_take_the_same_keywords_and_refuse_a_misspelt_one(adapter, monkeypatch):
    for name in ("ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "FORMCTL_MODEL_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    model = adapter(
        "m", api_key="sk-test-0123456789", base_url="http://127.0.0.1:9/v1/", max_retries=0, timeout=5,
        max_tokens=77, deadline=30,
    )  # fmt: skip
    assert (model.max_retries, model.timeout, model.deadline, model.max_tokens) == (0, 5, 30, 77)
    assert model.base_url.startswith("http://127.0.0.1:9/v1")
    with pytest.raises(TypeError, match="max_retry"):
        adapter("m", api_key="sk-test-0123456789", max_retry=1)
