"""The scripted model: plays recorded assistant turns back, in order.

A transcript replay feeds the recorded user turns through the real chat loop while this
model answers each model call with the next recorded reply. The tools still run for
real against a fresh store, so every tool result can be compared with the recording.
The model keeps each :class:`ModelRequest` it received (``requests``), so a replay can
also compare what the loop *sent* (for example the tier-0 line) with what was recorded.

Running out of turns is a :class:`ModelError`, not an ``IndexError``: in a replay it
means the conversation took more model calls than the recording did (a divergence the
replay reports), and in the chat loop it is the one error a model may raise.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable

from formctl.agent.models.base import ModelReply, ModelRequest, TextSink
from formctl.errors import ModelError


class ScriptedModel:
    """A :class:`~formctl.agent.models.base.ChatModel` that answers from a list of recorded replies."""

    def __init__(self, replies: Iterable[ModelReply], *, name: str = "scripted") -> None:
        self.name = name
        self._replies: list[ModelReply] = list(replies)
        self.requests: list[ModelRequest] = []
        self.played = 0

    @property
    def remaining(self) -> int:
        """How many recorded turns have not been played yet."""
        return len(self._replies) - self.played

    def respond(self, request: ModelRequest, on_text: TextSink | None = None) -> ModelReply:
        # The loop mutates its message list after the call (appending the reply and the
        # tool results) and re-renders the tier-0 tail, so keep a copy of what was sent.
        # (The ``stop`` event is the caller's, shared, and cannot be copied.)
        self.requests.append(
            ModelRequest(request.system, request.tools, copy.deepcopy(request.messages), request.max_tokens)
        )
        if self.played >= len(self._replies):
            raise ModelError(f"The script has no more model turns ({self.played} played).")
        recorded = self._replies[self.played]
        self.played += 1
        # A fresh copy each time: the loop stores the reply's content in its history, and a
        # later edit there must not change the recording.
        reply = ModelReply(
            content=copy.deepcopy(recorded.content),
            stop_reason=recorded.stop_reason,
            usage=dict(recorded.usage),
        )
        if on_text is not None and reply.text:
            on_text(reply.text)
        return reply
