"""The guided model meets odd input: punctuation alone, a number too long to read, unreadable
words for a sensitive field; and it never shows a sensitive value it undoes, redoes or asks
to confirm."""

from __future__ import annotations

from typing import Any

from example_forms import secret
from formctl import FormRegistry, FormRunner, MemoryAdapter
from formctl.agent.loop import ChatLoop
from formctl.agent.models.guided import GuidedModel


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
    chat = _Chat(secret, "secret")
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


# --------------------------------------------------------------------------- guided: odd input


def test_punctuation_alone_is_not_taken_as_an_answer():
    chat = _Chat(secret, "secret")
    chat.say("hi")
    for words in ("...", "?", "!!!", "Full name: --"):
        said = chat.say(words)
        assert "Full name?" in said, said  # asked again
    instance = chat.runner.open_instance()
    assert instance.entries == {}  # nothing written: no invalid revision for "?"
    chat.say("Dana Reeve")
    assert chat.values() == {"full_name": "Dana Reeve"}


def test_a_number_too_long_to_read_is_answered_locally_not_a_model_failure():
    from helpers.guided_chat import Chat

    chat = Chat("travel-claim")
    chat.say("hi")
    said = chat.say("Miles driven: " + "1" * 5000)  # Chat.say asserts the turn had no error
    assert "Miles driven" in said and chat.tools == []


def test_the_guided_model_does_not_repeat_unreadable_words_given_for_a_sensitive_field():
    chat = _Chat(secret, "secret")
    chat.say("hi")
    chat.say("Dana Reeve")
    said = chat.say("four eight two one")  # no number in it: answered locally, nothing written
    assert "PIN" in said and "four eight" not in said
    assert "pin" not in chat.runner.open_instance().entries
