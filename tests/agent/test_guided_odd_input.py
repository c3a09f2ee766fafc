"""QA: adversarial checks of the agent (guided model, tools) and transcripts (masking, determinism)."""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import Field

from formctl import FormRegistry, FormRunner, Jump, MemoryAdapter, define_form
from formctl.agent.loop import ChatLoop
from formctl.agent.models.guided import GuidedModel


def _secret_form():
    return (
        define_form("secret", name="Secret")
        .step("who", title="Who")
        .field("full_name", Annotated[str, Field(min_length=2)], label="Full name")
        .field("pin", Annotated[int, Field(ge=1000, le=9999)], label="PIN", sensitive=True)
        .field("colour", str, label="Colour")
        .checkpoint("again", when=lambda v, s: v["colour"] == "again", run=lambda ctx: Jump("who"))
        .build()
    )


class _Chat:
    def __init__(self, factory, form_id: str) -> None:
        registry = FormRegistry().register(form_id, name=form_id, description="", load=factory)
        self.runner = FormRunner(MemoryAdapter(), registry=registry, subject="qa")
        self.loop = ChatLoop(self.runner, GuidedModel(self.runner, form_id=form_id), form_id=form_id)

    def say(self, text: str) -> str:
        turn = self.loop.send(text)
        assert turn.error is None, turn.error
        return turn.text

    def values(self) -> dict[str, Any]:
        return dict(self.runner.evaluation()[2].values)


def test_the_guided_model_never_shows_a_sensitive_value_it_undoes_redoes_or_asks_to_confirm():
    chat = _Chat(_secret_form, "secret")
    chat.say("hi")
    chat.say("Dana Reeve")
    assert "4821" not in chat.say("4821")
    assert "4822" not in chat.say("PIN: 4822")
    said = [chat.say("undo"), chat.say("redo")]
    assert chat.values()["pin"] == 4822
    said.append(chat.say("again"))  # the checkpoint jumps back: the step's answers are asked again
    said.append(chat.say("Dana Reeve"))  # ... "It is 4822 now; say "same" to keep it."
    for text in said:
        assert "4821" not in text and "4822" not in text, text


# --------------------------------------------------------------------------- transcripts: masking

import re  # noqa: E402

from pydantic import BaseModel  # noqa: E402

from formctl.transcripts.replay import replay_file  # noqa: E402
from helpers.recording import record  # noqa: E402


class _Bank(BaseModel):
    sort_code: str
    account: str


def _card_form():
    return (
        define_form("card", name="Card")
        .step("who", title="Who")
        .field("full_name", Annotated[str, Field(min_length=2)], label="Full name")
        .field("cvv", Annotated[str, Field(pattern=r"^\d{3}$")], label="CVV", sensitive=True)
        .field("bank", _Bank, label="Bank", sensitive=True)
        .build()
    )


def test_short_and_structured_sensitive_values_are_masked_everywhere_and_the_transcript_replays(tmp_path):
    registry = FormRegistry().register("card", name="Card", description="", load=_card_form)
    path = tmp_path / "card.toml"
    record(
        path,
        registry,
        "card",
        ["hi", "Dana Reeve", "123", "undo", "CVV: 456", '{"sort_code": "12-34-56", "account": "87654321"}'],
    )
    text = path.read_text()
    for secret in ("123", "456", "12-34-56", "87654321"):
        assert not re.search(rf"(?<![0-9A-Za-z]){re.escape(secret)}(?![0-9A-Za-z])", text), secret
    assert 'masked = ["bank", "cvv"]' in text
    result = replay_file(path, registry=registry)
    assert result.passed, result.diff


# --------------------------------------------------------------------------- guided: odd input


def test_punctuation_alone_is_not_taken_as_an_answer():
    chat = _Chat(_secret_form, "secret")
    chat.say("hi")
    for words in ("...", "?", "!!!", "Full name: --"):
        said = chat.say(words)
        assert "Full name?" in said, said  # asked again
    instance = chat.runner.open_instance()
    assert instance.entries == {}  # nothing written: no invalid revision for "?"
    chat.say("Dana Reeve")
    assert chat.values() == {"full_name": "Dana Reeve"}


# --------------------------------------------------------------------------- transcripts: determinism


def _record_claim(path, adapter, subject):
    from formctl.transcripts.record import Recorder
    from helpers.recording import forms_registry

    runner = FormRunner(adapter, registry=forms_registry(), subject=subject)
    model = GuidedModel(runner, form_id="travel-claim")
    rec = Recorder(path, form_id="travel-claim", form_version=1, model=model.name, subject=subject, runner=runner)
    loop = ChatLoop(runner, model, form_id="travel-claim", on_event=rec.event)
    for words in [
        "hi",
        "Dana Reeve",
        "AB1234",
        "dana@example.org",
        "Leeds",
        "2026-11-03",
        "2026-11-05",
        "conference",
        "rail",
        "TKT-991",
        "skip",
        "skip",
        "900",
        "status",
    ]:
        rec.person(words)
        loop.send(words)
    rec.finish(runner)
    return path.read_text()


def test_two_recordings_with_different_subjects_and_stores_are_identical_even_while_waiting(tmp_path):
    from formctl import JsonFileAdapter

    first = _record_claim(tmp_path / "a.toml", MemoryAdapter(), "dana")
    second = _record_claim(tmp_path / "b.toml", JsonFileAdapter(tmp_path / "store"), "sam")
    assert 'status = "awaiting"' in first
    assert not re.search(r"form_[0-9a-z]{1,16}_[0-9a-z]{6}", first)  # the model's text names the instance too
    assert first == second


class _ExplicitInstance:
    """A model that names the instance in every write (as a real model copying it from a result may)."""

    def __init__(self, inner) -> None:
        self.inner, self.name = inner, inner.name

    def respond(self, request, on_text=None):
        reply = self.inner.respond(request, on_text)
        seen = None
        for message in request.messages:
            for block in message.get("content") if isinstance(message.get("content"), list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    data = json.loads(block["content"]).get("data")
                    if isinstance(data, dict) and isinstance(data.get("instance_id"), str):
                        seen = data["instance_id"]
        for block in reply.content:
            if block.get("type") == "tool_use" and block["name"] in ("form_fill", "form_revise") and seen:
                block["input"] = {**block["input"], "instance_id": seen}
        return reply


def test_a_transcript_whose_model_named_the_instance_still_replays(tmp_path):
    from formctl.transcripts.record import Recorder

    registry = FormRegistry().register("secret", name="Secret", description="", load=_secret_form)
    runner = FormRunner(MemoryAdapter(), registry=registry, subject="qa")
    model = _ExplicitInstance(GuidedModel(runner, form_id="secret"))
    path = tmp_path / "explicit.toml"
    rec = Recorder(path, form_id="secret", form_version=1, model=model.name, subject="qa", runner=runner)
    loop = ChatLoop(runner, model, form_id="secret", on_event=rec.event)
    for words in ["hi", "Dana Reeve", "4821", "undo", "4822", "blue"]:
        rec.person(words)
        loop.send(words)
    rec.finish(runner)
    assert 'instance_id = "<instance>"' in path.read_text()
    result = replay_file(path, registry=registry)
    assert result.passed, result.diff


def test_a_number_too_long_to_read_is_answered_locally_not_a_model_failure():
    from helpers.guided_chat import Chat

    chat = Chat("travel-claim")
    chat.say("hi")
    said = chat.say("Miles driven: " + "1" * 5000)  # Chat.say asserts the turn had no error
    assert "Miles driven" in said and chat.tools == []


def test_the_guided_model_does_not_repeat_unreadable_words_given_for_a_sensitive_field():
    chat = _Chat(_secret_form, "secret")
    chat.say("hi")
    chat.say("Dana Reeve")
    said = chat.say("four eight two one")  # no number in it: answered locally, nothing written
    assert "PIN" in said and "four eight" not in said
    assert "pin" not in chat.runner.open_instance().entries
