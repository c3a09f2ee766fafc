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
