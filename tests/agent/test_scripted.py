"""The scripted model plays recorded model turns back in order, and keeps what it was sent."""

from __future__ import annotations

import pytest

from formctl.agent.models.base import ChatModel, ModelReply, ModelRequest
from formctl.agent.models.scripted import ScriptedModel
from formctl.errors import ModelError


def _request(text: str) -> ModelRequest:
    return ModelRequest(
        system="sys", tools=[], messages=[{"role": "user", "content": [{"type": "text", "text": text}]}]
    )


def _replies() -> list[ModelReply]:
    return [
        ModelReply(
            content=[{"type": "tool_use", "id": "toolu_1", "name": "form_status", "input": {}}],
            stop_reason="tool_use",
            usage={"input_tokens": 10, "output_tokens": 5},
        ),
        ModelReply(content=[{"type": "text", "text": "What is your full name?"}]),
    ]


def test_scripted_model_is_a_chat_model_named_scripted_by_default():
    model = ScriptedModel([])
    assert isinstance(model, ChatModel)
    assert model.name == "scripted"
    assert ScriptedModel([], name="replay").name == "replay"


def test_recorded_turns_are_played_back_in_order():
    model = ScriptedModel(_replies())
    first = model.respond(_request("hi"))
    second = model.respond(_request("hi again"))
    assert first.tool_calls == [{"type": "tool_use", "id": "toolu_1", "name": "form_status", "input": {}}]
    assert first.stop_reason == "tool_use"
    assert first.usage == {"input_tokens": 10, "output_tokens": 5}
    assert second.text == "What is your full name?"
    assert second.stop_reason == "end_turn"
    assert model.played == 2
    assert model.remaining == 0


def test_running_out_of_turns_is_a_model_error_saying_how_many_were_played():
    model = ScriptedModel(_replies())
    model.respond(_request("a"))
    model.respond(_request("b"))
    with pytest.raises(ModelError, match=r"^The script has no more model turns \(2 played\)\.$") as info:
        model.respond(_request("c"))
    assert info.value.code == "model_error"
    assert model.played == 2


def test_an_empty_script_fails_on_the_first_call():
    with pytest.raises(ModelError, match=r"\(0 played\)"):
        ScriptedModel([]).respond(_request("a"))


def test_requests_are_kept_as_sent_even_if_the_caller_mutates_them_afterwards():
    model = ScriptedModel(_replies())
    request = _request("hello")
    model.respond(request)
    request.messages.append({"role": "assistant", "content": [{"type": "text", "text": "later"}]})
    request.messages[0]["content"][0]["text"] = "edited"
    assert len(model.requests) == 1
    assert model.requests[0].messages == [{"role": "user", "content": [{"type": "text", "text": "hello"}]}]


def test_a_request_that_ran_out_is_still_recorded():
    model = ScriptedModel([])
    with pytest.raises(ModelError):
        model.respond(_request("one too many"))
    assert [r.messages[0]["content"][0]["text"] for r in model.requests] == ["one too many"]


def test_editing_a_played_reply_does_not_change_the_recording():
    recorded = _replies()
    model = ScriptedModel(recorded)
    played = model.respond(_request("a"))
    played.content[0]["input"]["sneaky"] = True
    assert recorded[0].content[0]["input"] == {}


def test_reply_text_is_streamed_through_on_text():
    model = ScriptedModel(_replies())
    chunks: list[str] = []
    model.respond(_request("a"), on_text=chunks.append)  # a tool-only turn streams nothing
    model.respond(_request("b"), on_text=chunks.append)
    assert chunks == ["What is your full name?"]
