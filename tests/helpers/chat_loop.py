"""A chat loop whose events a test reads: one helper for the model adapters' tests
(tests/agent/test_anthropic_model.py, test_openai_model.py, test_model_contract.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from formctl.agent.loop import ChatLoop

if TYPE_CHECKING:
    from formctl.agent.models.base import ChatModel
    from formctl.forms.runner import FormRunner


def make_loop(
    runner: FormRunner, model: ChatModel, form_id: str = "travel-claim", **kwargs: Any
) -> tuple[ChatLoop, list[Any]]:
    """A :class:`ChatLoop` over ``runner`` and ``model`` (``kwargs``: the loop's other options), and
    the list its events are appended to, in order."""
    events: list[Any] = []
    loop = ChatLoop(runner, model, form_id=form_id, on_event=events.append, **kwargs)
    return loop, events
