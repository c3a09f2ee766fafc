"""``formctl run --program KEY --subject S``: walk a goal program's active goal in one chat.

The walk (docs/goals.md, "The person's side"): while the program has an active goal, its
pending items that no form answers are asked about and settled through ``goal_update`` (by
the model; offline, by :class:`~formctl.agent.models.guided_goals.GuidedGoalModel`, which asks
"Verify the client: done, later, or not needed?"), and a pending item bound to a form opens
that form's chat, with the goal tools beside the form tools and the goals line in the status
bar and at the tail of the model's input. The form's chat ends as soon as its instance
completes, which completes the item (``GoalRunner.sync``), and the walk goes on. End of input,
or /quit, leaves everything saved; the same command carries on.

The scope is ``(subject, KEY)``; the program is started from the registry when the subject has
none yet. The form's chat is the ordinary one (:class:`ChatSession` and its two faces), given
the goal tools after it is built, so nothing of the chat itself changes here.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from formctl.cli.chat.plain import Face, PlainChat
from formctl.cli.chat.session import CHAT_SOURCE, OPENER, ChatOptions, ChatSession
from formctl.cli.chat.terminal import TerminalChat
from formctl.goals.evaluate import is_asked, is_pending, is_settled
from formctl.json_types import JsonValue

if TYPE_CHECKING:  # pragma: no cover
    from formctl.agent.events import Event
    from formctl.agent.goal_tools import GoalTools
    from formctl.agent.models.base import ChatModel
    from formctl.cli.chat.program_record import ProgramRecording
    from formctl.forms.runner import FormRunner
    from formctl.goals.runner import GoalRunner

__all__ = ["run_program_chat"]


class ProgramChatSession(ChatSession):
    """A form's chat serving one program item: the goal tools are offered beside the form tools,
    and the goals line joins the status lines."""

    goal_tools: GoalTools
    served_item: tuple[str, str]

    @classmethod
    def for_item(cls, options: ChatOptions, goal_tools: GoalTools, goal: str, item: str) -> ProgramChatSession:
        """Open the form's chat (:meth:`ChatSession.open`) for ``goal``'s ``item``."""
        session = cls.open(options)
        session.goal_tools = goal_tools
        session.served_item = (goal, item)
        session.loop.attach_goals(goal_tools)  # before the first request: the prefix stays byte-identical
        return session

    def status_lines(self, runner: FormRunner | None = None) -> list[str]:
        lines = super().status_lines(runner)
        goals = self.goal_tools.line()
        return [lines[0], goals, *lines[1:]] if goals else lines

    def goodbye(self) -> str:
        said = super().goodbye()
        if self.served():
            return said
        scope = self.goal_tools.runner.scope
        return f"{said}; the whole program: formctl run --program {scope.key} --subject {scope.subject}"

    def served(self) -> bool:
        """Has the item this chat serves been settled (its form completed, or the model settled it)?"""
        status = self.goal_tools.runner.sync()
        if status is None:
            return False
        item = status.item(*self.served_item)
        return item is None or is_settled(item)


def _until_served(served: Callable[[], bool], lines: Iterator[str]) -> Iterator[str]:
    """A face's lines, stopping once the chat's program item is ``served()`` (checked after each turn)."""
    if served():
        return
    for line in lines:
        yield line
        if served():
            return


class _UntilServed(Face):
    """A face (mixed in before it) whose lines stop once the chat's program item is settled."""

    def __init__(self, session: ProgramChatSession) -> None:
        super().__init__(session)
        self.served = session.served

    def _lines(self) -> Iterator[str]:
        return _until_served(self.served, super()._lines())


class _PlainUntilServed(_UntilServed, PlainChat):
    pass


class _TerminalUntilServed(_UntilServed, TerminalChat):
    pass


def _terminal() -> bool:
    import os

    return sys.stdin.isatty() and sys.stdout.isatty() and os.environ.get("TERM") != "dumb"


def _read_line() -> str | None:
    """One line from the person (the same stdin the form chats read, line by line)."""
    if _terminal():
        try:
            return input("you › ").strip()
        except EOFError:
            return None
    stream = getattr(sys.stdin, "buffer", None)
    raw: bytes | str = stream.readline() if stream is not None else sys.stdin.readline()
    if not raw:
        return None
    return (raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw).strip()


def _say(text: str) -> None:
    sys.stdout.write(text.rstrip("\n") + "\n")
    sys.stdout.flush()


def run_program_chat(options: ChatOptions, program_key: str) -> int:
    """The walk; returns the exit status (0: complete, or left to carry on later)."""
    from formctl.agent.goal_tools import GoalTools
    from formctl.cli.program_scope import ProgramConversation, open_program
    from formctl.cli.workspace import default_subject, open_registry, open_store
    from formctl.forms.runner import FormRunner

    subject = options.subject or default_subject()
    adapter = open_store(options.store)
    registry = open_registry(options.forms)
    conversation = ProgramConversation(
        subject, program_key, options.forms, actor="agent", starter=default_subject(), source=CHAT_SOURCE
    )
    goals, started = open_program(adapter, registry, conversation)
    if started:
        _say(f"· started program {program_key} for {subject}")
    recording = _recording(options, goals)
    tools = GoalTools(goals)
    forms = FormRunner(adapter, registry=registry, subject=subject, actor="agent", source=CHAT_SOURCE)
    begun = goals.inspect()
    owed = {(f.goal, f.item) for f in begun.follow_ups} if begun is not None else set()
    try:
        return _walk(_Walk(options, goals, forms, tools, recording), owed)
    finally:
        if recording is not None:
            recording.end(goals.inspect())


@dataclasses.dataclass
class _Walk:
    """What every chat of one walk shares."""

    options: ChatOptions
    goals: GoalRunner
    forms: FormRunner
    tools: GoalTools
    recording: ProgramRecording | None  # with --record


def _recording(options: ChatOptions, goals: GoalRunner) -> ProgramRecording | None:
    if not options.record:
        return None
    from formctl.agent.models import choose_model
    from formctl.cli.chat.program_record import ProgramRecording

    chosen = choose_model(options.model, offline=options.offline)
    label = "guided" if chosen.provider == "guided" else (options.model or chosen.provider)
    return ProgramRecording(options.record, goals, label)


def _walk(w: _Walk, owed: set[tuple[str, str]]) -> int:
    """Settle the active goal's items, one chat after another, until the program completes or the
    person leaves; then the deferred work owed since before the walk."""
    options, goals, tools, scope = w.options, w.goals, w.tools, w.goals.scope
    subject = scope.subject
    code = 0
    while True:
        status = goals.sync()
        assert status is not None
        if status.complete:
            _finish(w, owed)
            return code
        goal = status.goal(status.active_goal or "")
        assert goal is not None
        pending = [i for i in goal.items if is_pending(i)]
        asked = [i for i in pending if is_asked(i)]
        if asked:
            if not _settle_items(w, goal.key):
                _say(f"Saved. Carry on with: formctl run --program {scope.key} --subject {subject}")
                return code
            continue
        item = pending[0]
        assert item.form is not None  # an item no form answers is asked (settled above)
        _say(f"· {goal.title}: {item.label} (form {item.form})")
        session = ProgramChatSession.for_item(
            dataclasses.replace(options, form=item.form, record=None), tools, goal.key, item.key
        )
        if w.recording is not None:  # the form's chat is a segment of the walk's one transcript
            w.recording.segment = item.form
            session.recorder = w.recording
        try:
            if _terminal():
                _TerminalUntilServed(session).run()
            else:
                _PlainUntilServed(session).converse()
        finally:
            session.close()
        if session.stopped:
            sys.stderr.write(f"error: {session.stopped}\n")
            return 1
        if not session.served():
            return 1 if session.failed and session.instance_id is None else 0  # left mid-form: saved


def _finish(w: _Walk, owed: set[tuple[str, str]]) -> None:
    """The program is complete: say so, and settle the deferred work owed since before this walk
    ("The documents came in"), each asked once; work deferred during the walk is not asked again."""
    goals = w.goals
    status = goals.inspect()
    assert status is not None  # the walk found the program complete
    asking = [(f.goal, f.item) for f in status.follow_ups if (f.goal, f.item) in owed]
    if not asking:
        _say(status.line)
    else:
        _say(f"Program {status.program.key} is complete; deferred work is still owed.")
        chat = _GoalChat(w)
        if not chat.run(lambda: any(k not in chat.answered for k in asking)):
            scope = goals.scope
            _say(f"Saved. Carry on with: formctl run --program {scope.key} --subject {scope.subject}")
        status = goals.inspect()
        assert status is not None
    if status.follow_ups:
        still = ", ".join(f"{f.label} ({f.reason})" if f.reason else f.label for f in status.follow_ups)
        _say(f"Program {status.program.key} is complete. Still owed: {still}.")
    else:
        _say(f"Program {status.program.key} is complete.")


def _settle_items(w: _Walk, goal_key: str) -> bool:
    """A chat over the goal's items that no form answers, until they are settled (True) or the
    person leaves (False)."""

    def unsettled() -> bool:
        status = w.goals.inspect()
        if status is None or status.active_goal != goal_key:
            return False
        goal = status.goal(goal_key)
        return goal is not None and any(is_asked(i) for i in goal.items)

    return _GoalChat(w).run(unsettled)


class _GoalChat:
    """A chat with the goal tools (:meth:`run`). ``answered`` holds every item a ``goal_update``
    that went through named."""

    def __init__(self, w: _Walk) -> None:
        from formctl.agent.loop import ChatLoop

        self.tools, self.recording = w.tools, w.recording
        self.answered: set[tuple[str, str]] = set()
        self._calls: dict[str, JsonValue] = {}  # a goal_update's arguments, by call id, until its result
        if self.recording is not None:
            self.recording.segment = "goals"
        self.loop = ChatLoop(w.forms, _goal_model(w), goals=w.tools, on_event=self._event)

    def run(self, unsettled: Callable[[], bool]) -> bool:
        """Talk until ``unsettled()`` is False (True) or the person leaves (False)."""
        _say(self.tools.line())
        self._turn(OPENER)
        while unsettled():
            line = _read_line()
            if line is None or line in ("/quit", "/exit"):
                return False
            if line:
                self._turn(line)
        return True

    def _turn(self, text: str) -> None:
        if self.recording is not None:
            self.recording.person(text)
        result = self.loop.send(text)
        if result.text:
            _say(result.text)
        if result.error:
            _say(f"· {result.error}")

    def _event(self, ev: Event) -> None:
        from formctl.agent.events import ToolCall, ToolResult

        if self.recording is not None:
            self.recording.event(ev)
        if isinstance(ev, ToolCall) and ev.name == "goal_update":
            self._calls[ev.id] = ev.input
        if isinstance(ev, ToolResult) and ev.name == "goal_update":
            if ev.is_error:
                _say(f"· not saved: {ev.result.get('message')}")
                return
            self.answered.update(_named(self._calls.get(ev.id)))
            _say(f"· saved · {self.tools.line()}")


def _goal_model(w: _Walk) -> ChatModel:
    """The goal chat's model: offline, the guided goal model; else the one --model names."""
    from formctl.agent.models import choose_model, pick_model
    from formctl.agent.models.guided_goals import GuidedGoalModel

    options = w.options
    if choose_model(options.model, offline=options.offline).provider == "guided":
        return GuidedGoalModel(w.goals)
    return pick_model(
        w.forms,
        model_name=options.model,
        offline=options.offline,
        timeout=options.model_timeout,
        locale=options.locale,
    )


def _named(arguments: JsonValue) -> set[tuple[str, str]]:
    """The (goal, item) keys a goal_update's arguments name."""
    if not isinstance(arguments, dict) or not isinstance(arguments.get("goal"), str):
        return set()
    from formctl.goals.state import COMPLETED, DECLINED, DEFERRED, REOPENED

    keys = [k for what in (COMPLETED, DEFERRED, DECLINED, REOPENED) for k in arguments.get(what) or []]
    return {(arguments["goal"], k) for k in keys if isinstance(k, str)}
