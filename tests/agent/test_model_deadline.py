"""Every model call has an end: a total deadline (``--model-timeout``), streaming and the SDK's
retries included, and a stop the caller can set (Ctrl-C). Both adapters, through their real SDKs
against the loopback servers; the chat's side is in tests/chat/test_model_deadline_chat.py.

A server here streams a reply that never ends in time (a 200 and then an empty piece every
0.2 s: each restarts the SDK's read timeout, which alone would wait for ever), or answers late.
"""

from __future__ import annotations

import threading
import time

import pytest

from fake_anthropic import FakeAnthropic
from fake_anthropic import text as a_text
from fake_anthropic import tool_use as a_tool_use
from fake_openai import FakeOpenAI
from fake_openai import text as o_text
from fake_openai import tool_use as o_tool_use
from formctl.agent.models.base import ModelRequest
from formctl.errors import ModelCancelledError, ModelError, ModelTimeoutError


def _anthropic(api: FakeAnthropic, **options):
    from formctl.agent.models.anthropic import AnthropicModel

    return AnthropicModel("claude-test", api_key="sk-test-deadline", base_url=api.url, max_retries=2, **options)


def _openai(api: FakeOpenAI, **options):
    from formctl.agent.models.openai import OpenAIChatModel

    return OpenAIChatModel("gpt-test", api_key="sk-test-deadline", base_url=api.base_url, max_retries=2, **options)


PROVIDERS = {
    "anthropic": (FakeAnthropic, _anthropic, a_text, a_tool_use),
    "openai": (FakeOpenAI, _openai, o_text, o_tool_use),
}


@pytest.fixture(params=sorted(PROVIDERS))
def provider(request):
    fake, build, text, tool_use = PROVIDERS[request.param]
    with fake() as api:

        def ready(**options):
            model = build(api, **options)
            model._get_client()  # the SDK's import is paid here, not inside the timings below
            return model

        yield api, ready, text, tool_use


def _request(stop: threading.Event | None = None) -> ModelRequest:
    return ModelRequest(system="You help.", tools=[], messages=[{"role": "user", "content": "hi"}], stop=stop)


def test_a_stream_that_never_ends_stops_at_the_deadline_and_the_next_call_works(provider):
    api, build, text, tool_use = provider
    api.trickle(30, every=0.2, late=[tool_use("form_start", {"form": "travel-claim"})])
    api.reply(text("Hello again."))
    model = build(deadline=1.0)
    shown: list[str] = []
    started = time.monotonic()
    with pytest.raises(ModelTimeoutError) as raised:
        model.respond(_request(), on_text=shown.append)
    took = time.monotonic() - started

    assert 1.0 <= took < 2.0, took
    assert "did not finish its reply within 1s (--model-timeout); nothing from it was applied" in raised.value.message
    assert "\n" not in raised.value.message
    assert shown == []
    assert raised.value.attempts == 1
    reply = model.respond(_request())  # a new client: the abandoned one is closed
    assert reply.text == "Hello again." and reply.attempts == 1


def test_the_deadline_comes_from_the_environment_and_a_bad_one_is_one_line(provider, monkeypatch):
    api, build, *_ = provider
    monkeypatch.setenv("FORMCTL_MODEL_TIMEOUT", "7.5")
    assert build().deadline == 7.5
    assert build(deadline=3).deadline == 3  # --model-timeout wins
    monkeypatch.delenv("FORMCTL_MODEL_TIMEOUT")
    assert build().deadline == 120.0
    for bad in ("soon", "0", "-1", "inf", "nan"):
        monkeypatch.setenv("FORMCTL_MODEL_TIMEOUT", bad)
        with pytest.raises(ModelError, match="FORMCTL_MODEL_TIMEOUT must be a number of seconds above 0"):
            build()


def test_a_stop_abandons_the_call_within_a_tick_and_its_late_reply_is_dropped(provider):
    api, build, text, tool_use = provider
    api.reply(tool_use("form_start", {"form": "travel-claim"}), delay=3.0)
    api.reply(text("Next."))
    model = build(deadline=30.0)
    stop = threading.Event()
    timer = threading.Timer(0.3, stop.set)
    timer.start()
    started = time.monotonic()
    with pytest.raises(ModelCancelledError):
        model.respond(_request(stop))
    assert time.monotonic() - started < 1.0
    timer.join()
    reply = model.respond(_request())
    assert reply.text == "Next."
    assert reply.tool_calls == []


def test_the_requests_a_call_sent_are_counted_retries_included(provider):
    api, build, text, _ = provider
    api.fault(500, times=2)
    api.reply(text("Third time lucky."))
    model = build()
    assert model.respond(_request()).attempts == 3
    api.fault(500, times=3)
    with pytest.raises(ModelError) as raised:
        model.respond(_request())
    assert raised.value.attempts == 3
