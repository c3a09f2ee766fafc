"""The guided model: an offline, deterministic interviewer that needs no API key.

It speaks the same :class:`~formctl.agent.models.base.ChatModel` interface as the Anthropic
model and drives the same tools, so the chat loop, the transcripts and the status bar cannot
tell the two apart (docs/guided.md describes a turn and the decisions). Its replies are a
function of the request and the stored instance, so the same conversation always gives the
same replies; the little state it keeps (:class:`~.state.GuidedState`) only changes what it
says, never what it writes.

The model holds the state and reads the store through the runner; :mod:`.planning` turns the
person's words into a plan, :mod:`.phrasing` says what the plan's tools did and what comes next.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from formctl.agent.models.base import ModelReply, ModelRequest, TextSink, content_blocks
from formctl.agent.models.guided.phrasing import (
    READ_BACK_QUESTION,
    list_text,
    problem_paragraphs,
    speak,
    state_paragraphs,
    turn_errors,
)
from formctl.agent.models.guided.planning import form_named, plan_start, plan_turn
from formctl.agent.models.guided.restore import restore
from formctl.agent.models.guided.state import GuidedState, Plan, Snapshot
from formctl.agent.models.guided.words import Turn, generic_kind, read_turn
from formctl.errors import ModelError, StoreError
from formctl.forms.evaluate import FILLED
from formctl.json_types import JsonObject

if TYPE_CHECKING:
    from formctl.forms.runner import FormRunner


class GuidedModel:
    """The offline interviewer. ``GuidedModel(runner, form_id="travel-claim", locale="en-GB")``.

    ``locale`` chooses the conventions the person's words are read by (day/month order, a phone
    number's region); None reads it from the environment (``FORMCTL_LOCALE``, ``LANG``).
    """

    name = "guided"

    def __init__(self, runner: FormRunner | None, *, form_id: str | None = None, locale: str | None = None) -> None:
        from formctl.agent.models.guided.values.context import locale_from_env, normalise_locale

        if runner is None:  # a model built to play the person (formctl eval) drives no form
            raise ModelError("The guided model interviews over a form's runner; it has none here.")
        self.runner: FormRunner = runner
        self.state = GuidedState(form_id=form_id, locale=normalise_locale(locale) or locale_from_env())

    @property
    def form_id(self) -> str | None:
        return self.state.form_id

    # ------------------------------------------------------------------ the interface

    def respond(self, request: ModelRequest, on_text: TextSink | None = None) -> ModelReply:
        try:
            reply = self._respond(request)
        except (ModelError, StoreError):
            raise  # a store that failed is the store's failure, not the model's: the loop says so
        except Exception as exc:  # the interface allows ModelError only
            raise ModelError(f"The guided model could not answer: {exc}") from exc
        if on_text is not None and reply.text:
            on_text(reply.text)
        return reply

    def asking(self) -> tuple[str | None, frozenset[str]]:
        """The field the last reply asked about, and the optional fields the person left out
        ("skip"): the chat's status bar shows the step of the question really asked (an
        optional question left behind belongs to an earlier step than the engine's open one)."""
        return self.state.asked, frozenset(self.state.skipped)

    # ------------------------------------------------------------------ one turn

    def _respond(self, request: ModelRequest) -> ModelReply:
        state = self.state
        state.said = {}  # what this reply says about each field (said once)
        turn = read_turn(request.messages)
        if not state.asked_known:
            state.resumed_at_read_back = _last_reply_asked_to_send(request.messages)
        if not turn.calls:
            state.plan = None
            return self._carry_out(*self._plan(turn, request.messages))
        plan = state.plan
        if plan is None or plan.call_ids != tuple(str(c.get("id")) for c in turn.calls):
            # A conversation this model did not plan (restored from disk): report what the
            # results say and carry on in the form's own order.
            plan = Plan(generic_kind(turn.calls))
        state.plan = None
        return self._text_reply(self._after_tools(turn, plan))

    def _plan(self, turn: Turn, messages: list[JsonObject]) -> tuple[Plan, Snapshot | None]:
        """The person's words into a plan, over the conversation's instance (or a new one)."""
        words = (turn.words or "").strip()
        snap = self._read(turn.instance_id)
        if snap is not None and turn.instance_id is None and self.form_id and snap.instance.def_id != self.form_id:
            snap = None  # the subject's open form is another form: start ours
        if snap is not None:
            if not self.state.asked_known and turn.conversation_started:
                restore(self.state, messages, snap)  # a conversation restored from disk (restore.py)
            plan = plan_turn(self.state, snap, turn)
            plan.in_force = frozenset(f.id for f in snap.compiled.fields if snap.ev.status[f.order] == FILLED)
            return plan, snap
        if turn.instance_id is not None:
            return Plan(
                "say", lead=["I can't find this form any more, so there is nothing more to fill in here."]
            ), None
        form_id = self.form_id or form_named(words, self.runner.list())
        compiled = None
        if form_id is not None:
            try:
                compiled = self.runner.compiled(form_id)
            except Exception:
                compiled = None
        return plan_start(self.state, words, form_id, compiled), None

    def _carry_out(self, plan: Plan, snap: Snapshot | None) -> ModelReply:
        """The plan's tool calls, or its reply made without tools (said over ``snap``)."""
        if plan.calls:
            return self._tool_reply(plan)
        paragraphs = list(plan.lead)
        if snap is not None and plan.say_problems:
            paragraphs += problem_paragraphs(self.state, snap, plan)
        if snap is not None and plan.say_state:
            paragraphs += state_paragraphs(self.state, snap, repeat=plan.repeat)
        return self._text_reply(paragraphs)

    def _after_tools(self, turn: Turn, plan: Plan) -> list[str]:
        """What the tools' results say, and what comes next."""
        errors = turn_errors(turn)
        if plan.kind == "list":
            return [list_text(turn)]
        if plan.kind == "start" and errors:
            return [f"I couldn't start the form: {errors[0].message}"]
        snap = self._read(turn.instance_id)
        if snap is None:
            message = errors[0].message if errors else "No form is open."
            return [f"I couldn't open the form: {message}"]
        return speak(self.state, snap, turn, plan)

    # ------------------------------------------------------------------ replies

    def _tool_reply(self, plan: Plan) -> ModelReply:
        blocks = []
        for name, tool_input in plan.calls:
            self.state.calls += 1
            call_id = f"toolu_guided_{self.state.calls:04d}"
            blocks.append({"type": "tool_use", "id": call_id, "name": name, "input": tool_input})
        plan.call_ids = tuple(str(b["id"]) for b in blocks)
        self.state.plan = plan
        return ModelReply(content=blocks, stop_reason="tool_use")

    def _text_reply(self, paragraphs: list[str]) -> ModelReply:
        self.state.asked_known = True
        preface, self.state.preface = self.state.preface, []
        text = "\n".join(p for p in preface + paragraphs if p)
        return ModelReply(content=[{"type": "text", "text": text}], stop_reason="end_turn")

    # ------------------------------------------------------------------ reading the store

    def _read(self, instance_id: str | None) -> Snapshot | None:
        """The instance as any reader sees it, through the runner's read-only view (stale decided there)."""
        from formctl.errors import NotFoundError
        from formctl.forms.project import step_view

        try:
            view = self.runner.view(instance_id)
        except NotFoundError:
            return None
        ev = view.evaluation
        return Snapshot(view.compiled, view.instance, ev, step_view(view.compiled, ev, view.instance), view.stale)


def _last_reply_asked_to_send(messages: list[JsonObject]) -> bool:
    """Did the conversation's last reply (before this model spoke) read the answers back for sending?"""
    for message in reversed(messages):
        if message.get("role") == "assistant":
            texts = [b.get("text", "") for b in content_blocks(message.get("content")) if b.get("type") == "text"]
            return any(READ_BACK_QUESTION in t for t in texts)
    return False
