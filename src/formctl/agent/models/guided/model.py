"""The guided model: an offline, deterministic interviewer that needs no API key.

It speaks the same :class:`~formctl.agent.models.base.ChatModel` interface as the Anthropic
model and drives the same tools, so the chat loop, the transcripts and the status bar cannot
tell the two apart (docs/guided.md describes a turn and the decisions). Its replies are a
function of the request and the stored instance, so the same conversation always gives the
same replies; the little state it keeps only changes what it says, never what it writes.
"""

from __future__ import annotations

from typing import Any

from formctl.agent.models.base import ModelError, ModelReply, ModelRequest, TextSink, content_blocks
from formctl.agent.models.guided.answers import _Kind, _kind_of
from formctl.agent.models.guided.phrasing import READ_BACK_QUESTION, Phrasing
from formctl.agent.models.guided.planning import Planning, _Plan, _Snapshot
from formctl.agent.models.guided.words import _generic_kind, _read_turn


class GuidedModel(Planning, Phrasing):
    """The offline interviewer. ``GuidedModel(runner, form_id="travel-claim")``."""

    name = "guided"

    def __init__(self, runner: Any, *, form_id: str | None = None) -> None:
        self.runner = runner
        self.form_id = form_id
        self._calls = 0
        self._plan: _Plan | None = None
        self._asked: str | None = None  # the field the last reply asked for
        self._asked_at: tuple[str, int] | None = None  # (instance id, version) when it was asked
        self._asked_known = False  # False until this model has replied once (a restored conversation)
        self._focus: str | None = None  # a field to ask before the form's own order (back, rejected)
        self._skipped: set[str] = set()
        self._announced: str | None = None  # the step last announced with "Step i of n"
        self._shown_failures: set[tuple[str, str]] = set()
        self._kinds: dict[tuple[str, int, str], _Kind] = {}
        self._summarised: tuple[str, int] | None = None  # the instance version last read back in full
        self._preface: list[str] = []  # said first in the next reply (what changed, from a notice)
        self._read_back: tuple[str, int] | None = None  # the ready instance version read back for sending
        self._said: dict[str, list[str]] = {}  # field id -> what the reply being built said about it
        self._resumed_at_read_back = False  # a restored conversation whose last reply was the read-back
        self._revisit: Any = None  # the step being gone over and the answers kept (revisit.py)

    # ------------------------------------------------------------------ the interface

    def respond(self, request: ModelRequest, on_text: TextSink | None = None) -> ModelReply:
        try:
            reply = self._respond(request)
        except ModelError:
            raise
        except Exception as exc:  # the interface allows ModelError only
            raise ModelError(f"The guided model could not answer: {exc}") from exc
        if on_text is not None and reply.text:
            on_text(reply.text)
        return reply

    def _respond(self, request: ModelRequest) -> ModelReply:
        turn = _read_turn(request.messages)
        if not self._asked_known:
            self._resumed_at_read_back = _last_reply_asked_to_send(request.messages)
        if not turn.calls:
            self._plan = None
            return self._plan_turn(turn)
        plan = self._plan
        if plan is None or plan.call_ids != tuple(str(c.get("id")) for c in turn.calls):
            # A conversation this model did not plan (restored from disk): report what the
            # results say and carry on in the form's own order.
            plan = _Plan(_generic_kind(turn.calls))
        self._plan = None
        return self._speak(turn, plan)

    def asking(self) -> tuple[str | None, frozenset[str]]:
        """The field the last reply asked about, and the optional fields the person left out
        ("skip"): the chat's status bar shows the step of the question really asked (an
        optional question left behind belongs to an earlier step than the engine's open one)."""
        return self._asked, frozenset(self._skipped)

    # ------------------------------------------------------------------ replies

    def _tool_reply(self, plan: _Plan, calls: list[tuple[str, dict[str, Any]]]) -> ModelReply:
        blocks = []
        for name, tool_input in calls:
            self._calls += 1
            call_id = f"toolu_guided_{self._calls:04d}"
            blocks.append({"type": "tool_use", "id": call_id, "name": name, "input": tool_input})
        plan.call_ids = tuple(b["id"] for b in blocks)
        self._plan = plan
        return ModelReply(content=blocks, stop_reason="tool_use")

    def _text_reply(self, paragraphs: list[str]) -> ModelReply:
        self._asked_known = True
        preface, self._preface = self._preface, []
        text = "\n".join(p for p in preface + paragraphs if p)
        return ModelReply(content=[{"type": "text", "text": text}], stop_reason="end_turn")

    # ------------------------------------------------------------------ reading the store

    def _read(self, instance_id: str | None) -> _Snapshot | None:
        """The instance as any reader sees it, through the runner's read-only view (stale decided there)."""
        from formctl.forms.errors import NotFoundError
        from formctl.forms.project import step_view

        try:
            view = self.runner.view(instance_id)
        except NotFoundError:
            return None
        ev = view.evaluation
        return _Snapshot(view.compiled, view.instance, ev, step_view(view.compiled, ev, view.instance), view.stale)

    def _kind(self, compiled: Any, field_id: str) -> _Kind:
        key = (compiled.id, compiled.version, field_id)
        if key not in self._kinds:
            self._kinds[key] = _kind_of(compiled.field_by_id[field_id].schema)
        return self._kinds[key]


def _last_reply_asked_to_send(messages: list[dict[str, Any]]) -> bool:
    """Did the conversation's last reply (before this model spoke) read the answers back for sending?"""
    for message in reversed(messages):
        if message.get("role") == "assistant":
            texts = [b.get("text", "") for b in content_blocks(message.get("content")) if b.get("type") == "text"]
            return any(READ_BACK_QUESTION in t for t in texts)
    return False
