"""One interface for every model the chat loop can drive: Anthropic, guided (offline), scripted.

The loop builds a :class:`ModelRequest` (a fixed system prompt, a fixed tool list, and the
conversation with tier 0 appended to the newest user turn) and the model answers with a
:class:`ModelReply`: text and tool calls as content blocks, in the Anthropic Messages
shape, which every model here speaks:

- ``{"type": "text", "text": ...}``
- ``{"type": "tool_use", "id": ..., "name": ..., "input": {...}}``
- ``{"type": "tool_result", "tool_use_id": ..., "content": "<json text>", "is_error": bool}`` (user turns)

The loop does not know which model it drives.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from formctl.errors import ModelError  # defined with every other formctl error
from formctl.json_types import JsonObject, JsonValue

__all__ = ["ChatModel", "ModelError", "ModelReply", "ModelRequest", "SaysWhatItAsked", "TextSink", "content_blocks"]

TextSink = Callable[[str], None]


def content_blocks(content: JsonValue) -> list[JsonObject]:
    """A message's ``content`` as a list of blocks: a plain string is one text block (none when
    empty), and anything in a list that is not a block is left out."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return [b for b in content or [] if isinstance(b, dict)]


@dataclass(slots=True)
class ModelRequest:
    system: str
    tools: list[JsonObject]
    messages: list[JsonObject]
    max_tokens: int = 1024
    # Set when the caller no longer wants the reply (Ctrl-C): a model that waits on a network
    # abandons the request at once and raises ModelCancelledError (docs/chat.md, "Ctrl-C").
    stop: threading.Event | None = None


@dataclass(slots=True)
class ModelReply:
    content: list[JsonObject]
    stop_reason: str = "end_turn"  # end_turn | tool_use | max_tokens | stop_sequence | refusal
    usage: dict[str, int] = field(default_factory=dict)
    # How many HTTP requests the reply took, the SDK's retries included (0 for a model that sends
    # none: guided, scripted). A failed call's count is on its ModelError.
    attempts: int = 0

    @property
    def text(self) -> str:
        return "".join(b.get("text", "") for b in self.content if b.get("type") == "text")

    @property
    def tool_calls(self) -> list[JsonObject]:
        return [b for b in self.content if b.get("type") == "tool_use"]


@runtime_checkable
class ChatModel(Protocol):
    """A model the loop can drive. ``name`` appears in transcripts and the CLI's header line."""

    name: str

    def respond(self, request: ModelRequest, on_text: TextSink | None = None) -> ModelReply:
        """Answer one request. Stream text through ``on_text`` as it arrives, if given.

        Raise :class:`ModelError` (never anything else) when no answer can be had.
        """
        ...


@runtime_checkable
class SaysWhatItAsked(Protocol):
    """A model that can say which field its last reply asked about (the guided model). The chat's
    status bar then shows the step of that question, which may be earlier than the engine's open
    step (an optional question left behind), and leaves out the optional fields the person skipped."""

    def asking(self) -> tuple[str | None, frozenset[str]]:
        """(the field id the last reply asked about, or None; the optional field ids left out)."""
        ...
