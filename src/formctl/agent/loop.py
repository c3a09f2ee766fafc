"""The chat loop: user message → model → tools → results → model … until it answers in text.

One :meth:`ChatLoop.send` is one user turn. Before every model call the loop renders tier 0
from stored state (``runner.tier0()``) and appends it to the newest user turn as a
transient text block, after any ``tool_result`` blocks (the Messages API answers 400 when
a turn that answers tool calls does not *begin* with its results). Tier 0 is never put
in the system prompt, and never saved: ``messages`` holds the conversation without it,
so earlier turns carry no stale status and the saved conversation resumes cleanly. The
system prompt and the tool list are fixed at construction and byte-identical on every
request, which is what lets a provider's prompt cache hold them (docs/engine.md, 'Tier 0').

What the loop promises when things go wrong:

- A model failure (``ModelError``) ends the turn with one clear line (``LoopError``,
  ``Turn.error``); ``send`` never raises for it. Every answer a tool committed stays
  committed, and ``messages`` stays a valid conversation: the next ``send`` simply tries
  again, its text joined to the unanswered user turn (two user turns in a row would be a
  malformed conversation).
- A reply cut off at ``max_tokens`` is reported, not taken for an answer; its tool calls
  (whose input may be truncated) are not run. A ``refusal`` is reported the same way.
- ``cancel()`` (thread-safe, e.g. from a Ctrl-C handler) stops the turn at the next safe
  point: before a model call, during it (the request carries the event as ``stop``: a model
  over a network abandons the request within a tick and its reply, if it comes, is dropped),
  after it returns (its reply is discarded), or between tool calls (the calls not run get an
  error result, so the conversation stays valid). A ``KeyboardInterrupt`` inside ``send`` is
  treated the same way.
- The iteration limit (default 12 model calls per turn) stops a model that keeps calling
  tools without answering; a reply with neither text nor a tool call ends the turn with
  one line too (``NOTHING_SAID``), and a reply stopped by a provider's content filter is
  reported, not taken for an answer.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from formctl.agent.events import (
    Event,
    LoopError,
    ModelCall,
    ModelTurn,
    TextDelta,
    Tier0Changed,
    ToolCall,
    ToolResult,
    TurnEnd,
)
from formctl.agent.models.base import ChatModel, ModelReply, ModelRequest, content_blocks
from formctl.agent.person import Person
from formctl.agent.prompt import system_prompt as build_system_prompt
from formctl.agent.sharing import SavedConversation, SavesConversations, Sharing
from formctl.agent.tools import FormTools, Scope, is_error
from formctl.agent.usage import Usage
from formctl.errors import FormError, ModelError, StoreError
from formctl.json_types import JsonObject
from formctl.redact import StreamRedactor, redact, redact_data

if TYPE_CHECKING:
    from formctl.agent.goal_tools import GoalTools
    from formctl.forms.runner import FormRunner

__all__ = ["ChatLoop", "Turn", "tool_result_block"]

DEFAULT_MAX_ITERATIONS = 12
CANCELLED = "Cancelled. Every answer already given is saved."
# A reply with neither text nor a tool call (weaker models do this): a clear stop, not a silent turn.
NOTHING_SAID = "The model replied with neither text nor a tool call. Send another message to continue."
_NOT_RUN = {"status": "error", "message": "Not run: the turn was cancelled.", "data": {"code": "cancelled"}}


@dataclass
class Turn:
    """The outcome of one :meth:`ChatLoop.send`."""

    text: str
    stop_reason: (
        str  # end_turn | tool_use | max_tokens | refusal | stop_sequence | error | iteration_limit | cancelled | empty
    )
    iterations: int
    error: str | None = None
    tool_calls: int = 0
    code: str | None = None  # the model error's code, when the model failed


_ANSWERED = {"end_turn", "stop_sequence", "tool_use", "", None}


def _stop_line(stop_reason: str | None) -> str | None:
    """One line for a reply that stopped for a reason other than having answered; None if it answered."""
    if stop_reason in _ANSWERED:
        return None
    if stop_reason == "refusal":
        return "The model declined to continue this conversation (refusal)."
    if stop_reason == "model_context_window_exceeded":
        return "The conversation no longer fits the model's context window (model_context_window_exceeded)."
    if stop_reason == "content_filter":
        return "The provider's content filter stopped the model's reply; nothing in it was applied."
    return f"The model stopped without answering ({stop_reason}). Send another message to continue."


def tool_result_block(tool_use_id: str, envelope: JsonObject) -> JsonObject:
    """The ``tool_result`` block carrying one envelope (compact JSON: every character is re-sent)."""
    return {
        "type": "tool_result",
        "tool_use_id": tool_use_id,
        "content": json.dumps(envelope, ensure_ascii=False, separators=(",", ":")),
        "is_error": is_error(envelope),
    }


def _clean(reply: ModelReply) -> ModelReply:
    """Drop empty text blocks: the API refuses them when the reply is sent back as history."""
    content = [b for b in reply.content if not (b.get("type") == "text" and not b.get("text"))]
    if len(content) == len(reply.content):
        return reply
    return ModelReply(content=content, stop_reason=reply.stop_reason, usage=dict(reply.usage))


class ChatLoop:
    """Drives one conversation between a person and a model over one runner's forms.

    ``system`` replaces the base prompt (the tools' conventions); the form's name,
    description and conduct are appended either way. The form is ``form_id`` if given,
    else the subject's open form, if any. ``messages`` resumes an earlier conversation
    (as saved by :class:`~formctl.store.conversations.ConversationStore`), or ``conversation``
    the same as every chat that took part saved it (its turns keep their numbers); pass
    ``conversation_store`` to have the loop save it after every turn, under the instance
    the conversation is about (``instance_id``: the open form it began with, or the one its
    own ``form_start`` created). ``scope`` is whose instances the tools may reach (see
    :class:`~formctl.agent.tools.FormTools`): by default the runner's subject.
    """

    def __init__(
        self,
        runner: FormRunner,
        model: ChatModel,
        *,
        form_id: str | None = None,
        system: str | None = None,
        max_iterations: int = DEFAULT_MAX_ITERATIONS,
        on_event: Callable[[Event], object] | None = None,
        messages: list[JsonObject] | None = None,
        allow: list[str] | None = None,
        deny: list[str] | None = None,
        conversation_store: SavesConversations | None = None,
        conversation: SavedConversation | None = None,
        max_tokens: int | None = None,
        scope: Scope = None,
        person: Person | None = None,
        goals: GoalTools | None = None,
    ) -> None:
        self.runner = runner
        self.model = model
        self.max_iterations = max(1, int(max_iterations))
        self.on_event = on_event
        self.conversation_store = conversation_store
        self.max_tokens = int(max_tokens or getattr(model, "max_tokens", None) or 1024)
        self.usage = Usage()  # the tokens every reply of this conversation cost, added up
        # The HTTP requests the model calls of this conversation sent, the SDK's retries included
        # (ModelReply.attempts, ModelError.attempts): a call retried twice counts three.
        self.attempts = 0
        # The person's own messages (what a model's quotes are checked against) and, when the front
        # end can, formctl asking them about a value their words don't hold (formctl.agent.person).
        self.person: Person = person if person is not None else Person()
        self.tools = FormTools(runner, allow=allow, deny=deny, scope=scope, person=self.person)
        self.tool_definitions: list[JsonObject] = self.tools.definitions
        self.goals: GoalTools | None = None
        self._open_on(form_id, system)
        if goals is not None:
            self.attach_goals(goals)
        self._join(conversation.messages if messages is None and conversation is not None else messages, conversation)
        self._cancel = threading.Event()
        self._busy = threading.Lock()
        self._tier0: str | None = None
        self._stream = StreamRedactor()  # the model's streamed text, redacted across its pieces
        # What the person was last shown of the instance, saved with the conversation. The chat
        # sets it when a turn ends (TurnEnd is emitted before the turn's last save).
        self.seen: JsonObject | None = None

    def _open_on(self, form_id: str | None, system: str | None) -> None:
        """The instance the conversation is about (the subject's open one, if any), the form it
        serves (``form_id``, else that instance's) and the system prompt that names the form."""
        try:
            open_instance = self.runner.open_instance()
        except FormError:
            open_instance = None
        self.instance_id: str | None = open_instance.id if open_instance is not None else None
        if self.person.opened_on is None:  # seeds written into it come with a chat that continued it
            self.person.opened_on = self.instance_id
        form = None
        if form_id is not None:
            form = self.runner.compiled(form_id)
        elif open_instance is not None:
            try:
                form = self.runner.compiled(open_instance.def_id)
            except FormError:
                form = None
        self.form_id: str | None = form.id if form is not None else form_id
        self.system_prompt: str = build_system_prompt(form, base=system)

    def _join(self, messages: list[JsonObject] | None, conversation: SavedConversation | None) -> None:
        """Take up the conversation so far (none for a new one): its messages, made valid to send
        again, and what the person said in it (what a model's quotes are checked against)."""
        self.messages: list[JsonObject] = _repair([dict(m) for m in (messages or [])])
        # Other chats may write this conversation too: turns are numbered, and exchanges saved,
        # for all of them alike (formctl.agent.sharing).
        from formctl.agent.models import model_label

        self._sharing = Sharing(self.conversation_store, self.person, model=model_label(self.model) or None)
        if not self.person.messages:  # a resumed conversation: what the person said before counts
            if conversation is not None:
                self._sharing.resume(conversation, person_texts)
            else:
                for text in person_texts(self.messages):
                    self.person.said(text, at=None)
        if self.person.numbering is None:
            self.person.numbering = self._number

    # ------------------------------------------------------------------ public

    def attach_goals(self, goals: GoalTools) -> None:
        """Serve a goal program too (:class:`formctl.agent.goal_tools.GoalTools`): its tools follow
        the form tools, a fixed sentence about its line ends the system prompt, and the line
        follows tier 0 at the tail of every request. Before the first request only: the prefix
        must stay byte-identical for the whole conversation."""
        self.goals = goals
        self.tool_definitions = [*self.tool_definitions, *goals.definitions]
        self.system_prompt = f"{self.system_prompt}\n{goals.prompt}"

    def cancel(self) -> None:
        """Stop the current turn at the next safe point. Safe to call from any thread."""
        self._cancel.set()

    @property
    def tier0(self) -> str:
        """The tier-0 line as of now, from stored state ("" when there is no open form)."""
        return self._render_tier0()

    def send(self, text: str) -> Turn:
        """One user turn. Never raises for a model failure: see :class:`Turn` ``.error``."""
        with self._busy:
            self._cancel.clear()
            if not isinstance(text, str) or not text.strip():
                return self._finish(Turn("", "empty", 0, "Nothing to send: the message is empty."))
            text = redact(text)  # a key pasted into the chat is neither sent nor saved
            self._sharing.begin(self.messages, self.instance_id)
            self._append_user_text(text)
            self.person.said(text)
            try:
                turn = self._run()
            except KeyboardInterrupt:
                self._settle_unanswered()
                turn = Turn("", "cancelled", 0, CANCELLED)
            return self._finish(turn)

    # ------------------------------------------------------------------ the loop

    def _run(self) -> Turn:
        iterations = 0
        tool_calls = 0
        while True:
            if self._cancel.is_set():
                return Turn("", "cancelled", iterations, CANCELLED, tool_calls)
            if iterations >= self.max_iterations:
                return Turn(
                    "",
                    "iteration_limit",
                    iterations,
                    f"Stopped after {iterations} model calls without a reply (the iteration limit). "
                    "Every answer given is saved; send another message to continue.",
                    tool_calls,
                )
            iterations += 1
            reply = self._ask_model(iterations, tool_calls)
            if isinstance(reply, Turn):
                return reply
            if reply.stop_reason == "max_tokens":
                text_only = [b for b in reply.content if b.get("type") == "text"]
                if text_only:
                    self.messages.append({"role": "assistant", "content": text_only})
                return Turn(
                    reply.text,
                    "max_tokens",
                    iterations,
                    f"The model's reply was cut off at its token limit ({self.max_tokens}); "
                    "nothing in it was applied. Send another message to continue.",
                    tool_calls,
                )
            calls = reply.tool_calls
            if reply.content:
                self.messages.append({"role": "assistant", "content": list(reply.content)})
            if not calls:
                error = _stop_line(reply.stop_reason)
                if error is None and not reply.text:
                    error = NOTHING_SAID
                return Turn(reply.text, reply.stop_reason or "end_turn", iterations, error, tool_calls)
            results: list[JsonObject] = []
            self.messages.append({"role": "user", "content": results})  # filled in place, call by call
            for call in calls:
                if self._cancel.is_set():
                    results.append(tool_result_block(call.get("id", ""), _NOT_RUN))
                    continue
                tool_calls += 1
                results.append(self._run_tool(call))
            self._save()  # the answers just committed are on disk; so is the conversation that led to them
            if self._cancel.is_set():
                return Turn("", "cancelled", iterations, CANCELLED, tool_calls)

    def _ask_model(self, iterations: int, tool_calls: int) -> ModelReply | Turn:
        """One model call: its reply, with every secret taken out of its text and tool arguments
        (formctl.redact), or the :class:`Turn` that ends the turn instead (a failure, a cancel)."""
        tier0 = self._render_tier0()
        self._tier0 = tier0
        request = ModelRequest(
            system=self.system_prompt,
            tools=self.tool_definitions,
            messages=self._request_messages(tier0, self._render_goals()),
            max_tokens=self.max_tokens,
            stop=self._cancel,
        )
        self._emit(ModelCall(iterations, request, tier0))
        self._stream = StreamRedactor()
        try:
            reply = self.model.respond(request, on_text=self._on_text)
        except (ModelError, StoreError) as exc:  # a store error names the store, not the model
            self.attempts += getattr(exc, "attempts", 0)
            if self._cancel.is_set():  # the request was abandoned (Ctrl-C): its reply is dropped
                return Turn("", "cancelled", iterations, CANCELLED, tool_calls)
            return Turn("", "error", iterations, exc.message, tool_calls, code=exc.code)
        except KeyboardInterrupt:
            raise
        except Exception as exc:  # a model that broke its contract: still one line, still no traceback
            return Turn("", "error", iterations, f"The model failed: {type(exc).__name__}: {exc}", tool_calls)
        self.usage.add(reply.usage)
        self.attempts += reply.attempts
        if self._cancel.is_set():
            return Turn("", "cancelled", iterations, CANCELLED, tool_calls)
        self._on_text(self._stream.flush(), redacted=True)
        reply = _clean(ModelReply(redact_data(reply.content), reply.stop_reason, reply.usage, reply.attempts))
        self._emit(ModelTurn(iterations, reply))
        return reply

    def _run_tool(self, call: JsonObject) -> JsonObject:
        call_id, name, arguments = call.get("id", ""), call.get("name", ""), call.get("input")
        self._emit(ToolCall(call_id, name, arguments))
        if self.goals is not None and self.goals.handles(name):
            envelope = self.goals.call(name, arguments)
        else:
            envelope = self.tools.call(name, arguments)
        envelope = redact_data(envelope)  # a value a store held, a message that quoted one
        self._emit(ToolResult(call_id, name, envelope, is_error(envelope)))
        data = envelope.get("data")
        if (
            name == "form_start"
            and envelope.get("status") == "success"
            and isinstance(data, dict)
            and isinstance(data.get("instance_id"), str)
        ):
            # The conversation moves only to an instance it started. An id the model merely
            # named (form_status, form_fill ...) never becomes the conversation's: saving under
            # it would write this conversation over that instance's own.
            self.instance_id = data["instance_id"]
        tier0 = self._render_tier0()
        if tier0 != self._tier0:
            self._tier0 = tier0
            self._emit(Tier0Changed(tier0))
        return tool_result_block(call_id, envelope)

    # ------------------------------------------------------------------ messages

    def _append_user_text(self, text: str) -> None:
        block = {"type": "text", "text": text}
        if self.messages and self.messages[-1].get("role") == "user":
            # The last turn went unanswered (a model error, a cancel, the iteration limit):
            # join it, so the conversation keeps alternating and nothing the person said is lost.
            last = self.messages[-1]
            self.messages[-1] = {"role": "user", "content": [*content_blocks(last.get("content")), block]}
        else:
            self.messages.append({"role": "user", "content": [block]})

    def _request_messages(self, tier0: str, goals: str = "") -> list[JsonObject]:
        """The conversation as sent: ``messages`` with tier 0, then the goals line (docs/goals.md),
        appended to the newest user turn only."""
        messages = list(self.messages)
        tail = [{"type": "text", "text": line} for line in (tier0, goals) if line]
        if tail and messages and messages[-1].get("role") == "user":
            last = messages[-1]
            messages[-1] = {**last, "content": [*content_blocks(last.get("content")), *tail]}
        return messages

    def _settle_unanswered(self) -> None:
        """After an interrupt: give every tool call still lacking a result a "not run" result."""
        self.messages[:] = _repair(self.messages)

    # ------------------------------------------------------------------ plumbing

    def _render_tier0(self) -> str:
        try:
            return self.runner.tier0() or ""
        except Exception:
            return ""

    def _render_goals(self) -> str:
        return self.goals.line() if self.goals is not None else ""

    def _on_text(self, text: str, *, redacted: bool = False) -> None:
        if not redacted:
            text = self._stream.feed(text)  # a secret split between two pieces is caught too
        if text and not self._cancel.is_set():
            self._emit(TextDelta(text))

    def _emit(self, event: Event) -> None:
        if self.on_event is not None:
            self.on_event(event)

    def _finish(self, turn: Turn) -> Turn:
        turn.text, turn.error = redact(turn.text), redact(turn.error) if turn.error else turn.error
        if turn.error:
            self._emit(LoopError(turn.error, turn.code))
        self._emit(TurnEnd(turn.text, turn.stop_reason, turn.iterations))
        self._save()
        return turn

    def _number(self) -> int:
        """The next turn number of the person (formctl.agent.sharing)."""
        self._sharing.store = self.conversation_store
        return self._sharing.number(self.instance_id)

    def _save(self) -> None:
        if self.conversation_store is None or self.instance_id is None:
            return
        self._sharing.store = self.conversation_store
        try:
            self._sharing.save(self.instance_id, self.messages, self.seen)
        except FormError as exc:
            self._emit(LoopError(f"Could not save the conversation: {exc.message}"))


def person_texts(messages: list[JsonObject]) -> list[str]:
    """Every message the person typed, oldest first: the text blocks of user turns (never tool results)."""
    return [
        b.get("text", "")
        for m in messages
        if m.get("role") == "user"
        for b in content_blocks(m.get("content"))
        if b.get("type") == "text" and b.get("text")
    ]


def _repair(messages: list[JsonObject]) -> list[JsonObject]:
    """Make the tail valid: tool calls of the last assistant turn all answered, in a turn that begins with them.

    A conversation saved by a process that died between a tool call and its result (or
    interrupted mid-tool) would otherwise be refused by the API on the next request.
    """
    if not messages:
        return messages
    index = len(messages) - 1
    if messages[index].get("role") == "user" and index > 0:
        index -= 1
    last_assistant = messages[index]
    if last_assistant.get("role") != "assistant":
        return messages
    wanted = [b.get("id", "") for b in content_blocks(last_assistant.get("content")) if b.get("type") == "tool_use"]
    if not wanted:
        return messages
    following = messages[index + 1] if index + 1 < len(messages) else None
    existing = content_blocks(following.get("content")) if following is not None else []
    answered = {b.get("tool_use_id") for b in existing if b.get("type") == "tool_result"}
    missing = [tool_result_block(i, _NOT_RUN) for i in wanted if i not in answered]
    if not missing:
        return messages
    results = [b for b in existing if b.get("type") == "tool_result"] + missing
    others = [b for b in existing if b.get("type") != "tool_result"]
    repaired = {"role": "user", "content": results + others}
    return [*messages[: index + 1], repaired]
