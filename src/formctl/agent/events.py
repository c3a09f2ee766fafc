"""What the chat loop tells its listeners: the CLI draws from these, the transcript recorder writes them.

Every event is a frozen dataclass with a ``kind`` class attribute (a stable string a
listener can switch on without importing the classes). The loop emits them in this order
for one model iteration::

    ModelCall → TextDelta* → ModelTurn → (ToolCall → ToolResult → Tier0Changed?)* → ...

and one ``TurnEnd`` (or a ``LoopError`` and then ``TurnEnd``) when the turn is over.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from formctl.agent.models.base import ModelReply, ModelRequest
from formctl.json_types import JsonObject, JsonValue


@dataclass(frozen=True)
class ModelCall:
    """Just before each model call. ``tier0`` is the text appended to the newest user turn ("" if none)."""

    kind: ClassVar[str] = "model_call"
    iteration: int
    request: ModelRequest
    tier0: str


@dataclass(frozen=True)
class TextDelta:
    """A piece of the model's text as it streams."""

    kind: ClassVar[str] = "text_delta"
    text: str


@dataclass(frozen=True)
class ModelTurn:
    """The model's complete reply for one iteration."""

    kind: ClassVar[str] = "model_turn"
    iteration: int
    reply: ModelReply


@dataclass(frozen=True)
class ToolCall:
    """A tool call about to run (``input`` exactly as the model sent it)."""

    kind: ClassVar[str] = "tool_call"
    id: str
    name: str
    input: JsonValue


@dataclass(frozen=True)
class ToolResult:
    """A tool call's outcome; ``result`` is the exact envelope dict the model receives."""

    kind: ClassVar[str] = "tool_result"
    id: str
    name: str
    result: JsonObject
    is_error: bool


@dataclass(frozen=True)
class Tier0Changed:
    """A tool changed the stored state's tier 0 (the status line); ``text`` is the new line ("" when none)."""

    kind: ClassVar[str] = "tier0_changed"
    text: str


@dataclass(frozen=True)
class LoopError:
    """One clear line: a model failure, the iteration limit, a cut-off reply, a cancellation."""

    kind: ClassVar[str] = "loop_error"
    message: str
    code: str | None = None  # the ModelError's code ("key_rejected": no further request can succeed)


@dataclass(frozen=True)
class TurnEnd:
    """The turn is over. ``text`` is the model's final text; ``stop_reason`` says why it stopped."""

    kind: ClassVar[str] = "turn_end"
    text: str
    stop_reason: str
    iterations: int


Event = ModelCall | TextDelta | ModelTurn | ToolCall | ToolResult | Tier0Changed | LoopError | TurnEnd

__all__ = [
    "Event",
    "LoopError",
    "ModelCall",
    "ModelTurn",
    "Tier0Changed",
    "TextDelta",
    "ToolCall",
    "ToolResult",
    "TurnEnd",
]
