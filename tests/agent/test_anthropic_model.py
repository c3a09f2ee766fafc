"""Whole conversations through the real ``anthropic`` SDK, against a loopback Messages API.

The fake server (``tests/fake_anthropic.py``) speaks real HTTP and real SSE, so the SDK's
request building, streaming, retries and error mapping all run. Retries are set to one
and the server's ``retry-after-ms: 1`` keeps them instant.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fake_anthropic import FakeAnthropic, text, tool_use
from fixture_project import REGISTRY as FORMS  # noqa: E402
from formctl import FormRegistry, FormRunner, JsonFileAdapter
from formctl.agent.events import LoopError, TextDelta
from formctl.agent.loop import ChatLoop
from formctl.agent.models import pick_model
from formctl.agent.models.anthropic import AnthropicModel
from formctl.store.conversations import ConversationStore

KEY = "sk-ant-test-0123456789abcdef"
CLAIMANT = {"full_name": "Dana Reeve", "staff_id": "AB1234", "email": "dana@example.com"}


@pytest.fixture
def api():
    with FakeAnthropic() as server:
        yield server


def make_runner(store) -> FormRunner:
    return FormRunner(JsonFileAdapter(store), registry=FormRegistry.from_toml(FORMS), subject="dana")


def make_model(api, **kwargs) -> AnthropicModel:
    return AnthropicModel("claude-test", api_key=KEY, base_url=api.url, max_retries=1, timeout=5, **kwargs)


def make_loop(runner, api, form_id="travel-claim", **kwargs):
    events: list = []
    loop = ChatLoop(runner, make_model(api), form_id=form_id, on_event=events.append, **kwargs)
    return loop, events


def assert_well_formed(bodies: list[dict], form_id: str) -> None:
    """What every request must look like: fixed prefix, tier 0 only at the tail, cache breakpoints, no empty text."""
    assert bodies
    tools = {json.dumps(b["tools"]) for b in bodies}
    systems = {json.dumps(b["system"]) for b in bodies}
    assert len(tools) == 1 and len(systems) == 1  # byte-identical on every request
    first = bodies[0]
    # one breakpoint for the fixed prefix (tools, then system), at its end
    assert _count(first["tools"], "cache_control") == 0
    assert first["system"][-1]["cache_control"] == {"type": "ephemeral"}
    tag = f"[form: {form_id}]"
    for body in bodies:
        assert tag not in body["system"][0]["text"]
        assert _count(body, "cache_control") <= 4
        for message in body["messages"]:
            for block in message["content"]:
                assert not (block["type"] == "text" and not block["text"]), "empty text block sent"
        for message in body["messages"][:-1]:
            assert not any(b.get("text", "").startswith(tag) for b in message["content"]), "stale tier 0 kept"
        last = body["messages"][-1]
        assert last["role"] == "user"
        types = [b["type"] for b in last["content"]]
        if "tool_result" in types:  # a turn answering tool calls begins with all of its results
            n = types.count("tool_result")
            assert types[:n] == ["tool_result"] * n


def tier0_sent(body: dict) -> str | None:
    block = body["messages"][-1]["content"][-1]
    return block["text"] if block["type"] == "text" and block["text"].startswith("[form:") else None


def _count(node, key: str) -> int:
    if isinstance(node, dict):
        return sum((k == key) + _count(v, key) for k, v in node.items())
    if isinstance(node, list):
        return sum(_count(v, key) for v in node)
    return 0


# --------------------------------------------------------------------------- whole conversations


def test_a_travel_claim_completes_through_the_real_sdk(api, store):
    runner = make_runner(store)
    loop, events = make_loop(runner, api)

    api.reply(
        text("Thanks, Dana."),
        tool_use(
            "form_start",
            {
                "form": "travel-claim",
                "values": {"full_name": "Dana Reeve", "staff_id": "AB1234", "destination": "Leeds"},
                "quotes": {"full_name": "I'm Dana Reeve", "staff_id": "staff AB1234"},
            },
        ),
    )
    api.reply(text("What's your work email?"))
    assert (
        loop.send("I need to claim for a trip to Leeds. I'm Dana Reeve, staff AB1234.").text
        == "What's your work email?"
    )

    api.reply(
        tool_use(
            "form_fill",
            {
                "values": {
                    "email": "dana@example.com",
                    "departure_date": "2026-03-02",
                    "return_date": "2026-03-04",
                    "purpose": "Client workshop",
                },
                "quotes": {"email": "dana@example.com"},
            },
        )
    )
    api.reply(text("How did you travel?"))
    loop.send("dana@example.com. I went 2 to 4 March 2026 for a client workshop.")

    # two tool calls in one reply (parallel tool use), answered in one user turn, in order
    api.reply(
        tool_use("form_fill", {"values": {"mode": "rail"}}),
        tool_use("form_fill", {"values": {"ticket_reference": "TR-99812"}}),
    )
    api.reply(text("And the costs?"))
    turn = loop.send("By train, ticket TR-99812")
    assert turn.tool_calls == 2

    api.reply(
        tool_use(
            "form_fill",
            {
                "values": {"accommodation": 240, "meals": 45.5, "total": 285.5},
                "quotes": {"accommodation": "Hotel 240", "meals": "meals 45.50", "total": "total 285.50"},
            },
        )
    )
    api.reply(text("Here is everything I have: ... Shall I send it?"))
    turn = loop.send("Hotel 240, meals 45.50, total 285.50")
    assert turn.error is None and make_runner(store).open_instance().status == "ready"  # read back, not sent

    api.reply(tool_use("form_submit", {}))
    api.reply(text("All done: your claim is sent."))
    turn = loop.send("Yes, send it.")
    assert turn.error is None and turn.text == "All done: your claim is sent."

    instance = make_runner(store).open_instance()  # read back through a fresh runner: it is on disk
    assert instance.status == "complete"
    assert instance.in_force_values()["ticket_reference"] == "TR-99812"
    assert api.pending == 0 and not api.unexpected

    bodies = api.bodies
    assert len(bodies) == 10
    assert_well_formed(bodies, "travel-claim")
    assert tier0_sent(bodies[0]) is None  # nothing open yet
    assert tier0_sent(bodies[1]).startswith('[form: travel-claim] step 1/4 "Claimant" · pending: Work email')
    assert tier0_sent(bodies[5]).startswith('[form: travel-claim] step 4/4 "Costs"')
    assert tier0_sent(bodies[7]).startswith("[form: travel-claim] ready to send")
    assert "form_submit once the person confirms" in tier0_sent(bodies[8])
    assert tier0_sent(bodies[9]) is None  # sent: no tier 0, and no empty block in its place
    parallel = bodies[5]["messages"][-1]["content"]
    assert [b["type"] for b in parallel] == ["tool_result", "tool_result", "text"]
    assert "Conversational: one or two questions at a time." in bodies[0]["system"][0]["text"]
    streamed = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert "All done: your claim is sent." in streamed


def test_a_client_intake_completes_through_the_real_sdk(api, store):
    runner = make_runner(store)
    loop, _ = make_loop(runner, api, form_id="client-intake")
    api.reply(tool_use("form_start", {"form": "client-intake", "values": {"client_type": "new", "age": 34}}))
    api.reply(text("Welcome! What's your name and email?"))
    loop.send("Hi, I'm new here, I'm 34.")
    api.reply(
        tool_use(
            "form_fill",
            {
                "values": {"full_name": "Sam Lee", "email": "sam@example.com"},
                "quotes": {"full_name": "Sam Lee", "email": "sam@example.com"},
            },
        )
    )
    api.reply(text("How did you hear about us, and what do you need?"))
    loop.send("Sam Lee, sam@example.com, no phone")
    api.reply(tool_use("form_fill", {"values": {"referral": "web", "needs": "Housing advice"}}))
    api.reply(text("Thank you. Here's what I have: ... Shall I send it?"))
    loop.send("Found you on the web; I need housing advice.")
    assert make_runner(store).open_instance().status == "ready"
    api.reply(tool_use("form_submit", {}))
    api.reply(text("Sent."))
    loop.send("Yes.")
    assert make_runner(store).open_instance().status == "complete"
    bodies = api.bodies
    assert_well_formed(bodies, "client-intake")
    assert tier0_sent(bodies[3]).startswith('[form: client-intake] step 3/4 "New client details"')
    assert "Warm and brief. Ask one thing at a time." in bodies[0]["system"][0]["text"]


def test_the_newest_assistant_turn_carries_the_conversation_cache_breakpoint(api, store):
    loop, _ = make_loop(make_runner(store), api)
    api.reply(tool_use("form_list", {}))
    api.reply(text("There are two forms."))
    loop.send("What can I fill in?")
    second = api.bodies[1]
    assistant = second["messages"][1]
    assert assistant["role"] == "assistant"
    assert assistant["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert _count(second, "cache_control") == 2  # the fixed prefix's and the conversation's
    assert "cache_control" not in json.dumps(loop.messages)  # the wire shape never leaks into history


# --------------------------------------------------------------------------- faults


FAULTS = {
    "bad key (401)": (lambda api: api.fault(401), "refused the key"),
    "rate limit past the retries (429)": (lambda api: api.fault(429, times=2), "Rate-limited"),
    "overloaded (529)": (lambda api: api.fault(529, times=2), "overloaded (529)"),
    "server error (500)": (lambda api: api.fault(500, times=2), "failed (500)"),
    "connection dropped mid-stream": (lambda api: api.drop_mid_stream("Let me"), "dropped mid-reply"),
    "malformed body": (lambda api: api.malformed(), "malformed reply"),
    "error event mid-stream": (lambda api: api.stream_error("overloaded_error"), "overloaded"),
}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_fault_is_one_clear_line_loses_no_answer_and_the_next_message_works(api, store, fault):
    inject, words = FAULTS[fault]
    runner = make_runner(store)
    loop, events = make_loop(runner, api)
    api.reply(
        tool_use(
            "form_start",
            {"form": "travel-claim", "values": {"full_name": "Dana Reeve"}, "quotes": {"full_name": "Dana Reeve"}},
        )
    )
    api.reply(text("Your staff ID?"))
    loop.send("I'm Dana Reeve")

    inject(api)
    failed = loop.send("AB1234")
    assert failed.stop_reason == "error"
    assert words in failed.error and "\n" not in failed.error
    assert KEY not in failed.error
    assert [e.message for e in events if isinstance(e, LoopError)] == [failed.error]
    assert make_runner(store).open_instance().in_force_values() == {"full_name": "Dana Reeve"}

    api.reply(tool_use("form_fill", {"values": {"staff_id": "AB1234"}, "quotes": {"staff_id": "AB1234"}}))
    api.reply(text("Thanks. Your work email?"))
    retry = loop.send("Did you get that? AB1234")
    assert retry.error is None and retry.text == "Thanks. Your work email?"
    assert make_runner(store).open_instance().in_force_values() == {"full_name": "Dana Reeve", "staff_id": "AB1234"}
    resent = api.bodies[-2]["messages"][-1]
    assert [b.get("text") for b in resent["content"][:2]] == ["AB1234", "Did you get that? AB1234"]
    assert_well_formed(api.bodies, "travel-claim")
    assert not api.unexpected


def test_a_fault_in_the_middle_of_a_turn_keeps_the_tool_results_and_continues(api, store):
    runner = make_runner(store)
    loop, _ = make_loop(runner, api)
    api.reply(tool_use("form_start", {"form": "travel-claim", "values": CLAIMANT, "quotes": CLAIMANT}))
    api.fault(529, times=2)
    turn = loop.send("Dana Reeve, AB1234, dana@example.com")
    assert turn.error and runner.open_instance().in_force_values() == CLAIMANT
    api.reply(text("Where did you go?"))
    assert loop.send("Hello?").text == "Where did you go?"
    last = api.bodies[-1]["messages"][-1]["content"]
    assert [b["type"] for b in last] == ["tool_result", "text", "text"]
    assert_well_formed(api.bodies, "travel-claim")


def test_a_server_that_never_answers_is_a_timeout_line(api, store):
    loop = ChatLoop(
        make_runner(store),
        AnthropicModel("claude-test", api_key=KEY, base_url=api.url, max_retries=0, timeout=0.1),
        form_id="travel-claim",
    )
    api.hang(2.0)
    turn = loop.send("hi")
    assert turn.stop_reason == "error" and "did not answer within 0.1s" in turn.error


def test_no_key_is_a_model_error_not_a_crash(api, store):
    loop = ChatLoop(make_runner(store), AnthropicModel("claude-test", base_url=api.url), form_id="travel-claim")
    turn = loop.send("hi")
    assert "ANTHROPIC_API_KEY" in turn.error and api.requests == []


def test_a_single_rate_limit_is_retried_by_the_sdk(api, store):
    loop, _ = make_loop(make_runner(store), api)
    api.fault(429)
    api.reply(text("Hello!"))
    turn = loop.send("hi")
    assert turn.error is None and turn.text == "Hello!"
    assert len(api.bodies) == 2
    assert api.requests[-1].headers.get("x-stainless-retry-count") == "1"


def test_a_reply_cut_off_at_max_tokens_is_reported_not_taken_for_an_answer(api, store):
    loop, _ = make_loop(make_runner(store), api)
    api.reply(text("Let me just"), stop_reason="max_tokens")
    turn = loop.send("hi")
    assert turn.stop_reason == "max_tokens" and "token limit" in turn.error


def test_the_key_never_appears_in_an_error_line_or_the_saved_conversation(api, store):
    runner = make_runner(store)
    runner.start("travel-claim")
    conversations = ConversationStore(store)
    loop, _ = make_loop(runner, api, conversation_store=conversations)
    api.fault(400, message=f"invalid request for key {KEY}")
    turn = loop.send("hi")
    assert "rejected the request (400)" in turn.error and KEY not in turn.error
    saved = (Path(store) / "conversations" / f"{runner.open_instance().id}.jsonl").read_text()
    assert KEY not in saved and KEY not in repr(loop.model)


# --------------------------------------------------------------------------- environment


def test_only_the_key_and_base_url_variables_change_behaviour(api, store, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "another-token")
    monkeypatch.setenv("ANTHROPIC_CUSTOM_HEADERS", "x-injected: yes")
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("ALL_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("FORMCTL_MODEL", "claude-from-env")
    model = pick_model(make_runner(store))
    assert isinstance(model, AnthropicModel) and model.name == "claude-from-env"
    loop = ChatLoop(make_runner(store), model, form_id="travel-claim")
    api.reply(text("Hello."))
    assert loop.send("hi").text == "Hello."
    headers = api.requests[-1].headers
    assert "x-injected" not in headers
    assert KEY in (headers.get("authorization", "") + headers.get("x-api-key", ""))
    assert "another-token" not in json.dumps(headers)
    assert api.bodies[-1]["model"] == "claude-from-env"


def test_the_model_name_argument_wins_over_the_environment(monkeypatch, store):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("FORMCTL_MODEL", "claude-from-env")
    assert pick_model(make_runner(store), model_name="claude-from-flag").name == "claude-from-flag"


def test_without_a_key_or_when_offline_the_guided_model_is_picked(monkeypatch, store):
    pytest.importorskip("formctl.agent.models.guided")
    runner = make_runner(store)
    assert not isinstance(pick_model(runner, form_id="travel-claim"), AnthropicModel)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    assert not isinstance(pick_model(runner, offline=True, form_id="travel-claim"), AnthropicModel)


@pytest.mark.e2e
def test_importing_formctl_and_the_agent_does_not_import_anthropic():
    code = (
        "import sys, formctl, formctl.agent.loop, formctl.agent.tools, formctl.agent.models;"
        "formctl.FormRunner;"
        "bad = [m for m in ('anthropic', 'prompt_toolkit', 'httpx2') if m in sys.modules];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


# --------------------------------------------------------------------------- the display callback


def test_a_broken_pipe_while_showing_the_reply_is_not_reported_as_an_api_failure(api):
    from formctl.agent.models.base import ModelRequest
    from formctl.errors import ModelError

    api.reply(text("Hello there, Dana."))
    shown: list[str] = []

    def closed_pipe(chunk: str) -> None:
        shown.append(chunk)
        raise BrokenPipeError(32, "Broken pipe")

    request = ModelRequest(system="You help.", tools=[], messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(BrokenPipeError) as raised:
        make_model(api).respond(request, on_text=closed_pipe)
    assert not isinstance(raised.value, ModelError) and shown  # the API answered; our printing failed
    assert len(api.bodies) == 1  # and it was not retried as if the API had failed


def test_an_api_failure_while_streaming_is_still_one_model_error_line(api):
    from formctl.agent.models.base import ModelRequest
    from formctl.errors import ModelError

    api.drop_mid_stream("Let me")
    request = ModelRequest(system="You help.", tools=[], messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(ModelError, match="dropped mid-reply"):
        make_model(api).respond(request, on_text=lambda chunk: None)
