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
from collections.abc import Iterator
from typing import Any

from formctl.cli.chat.plain import PlainChat
from formctl.cli.chat.session import CHAT_SOURCE, OPENER, ChatOptions, ChatSession
from formctl.cli.chat.terminal import TerminalChat
from formctl.goals.evaluate import is_asked, is_pending, is_settled

__all__ = ["run_program_chat"]


class ProgramChatSession(ChatSession):
    """A form's chat serving one program item: the goal tools are offered beside the form tools,
    and the goals line joins the status lines."""

    goal_tools: Any
    served_item: tuple[str, str]

    @classmethod
    def for_item(cls, options: ChatOptions, goal_tools: Any, goal: str, item: str) -> ProgramChatSession:
        """Open the form's chat (:meth:`ChatSession.open`) for ``goal``'s ``item``."""
        session = cls.open(options)
        session.goal_tools = goal_tools
        session.served_item = (goal, item)
        session.loop.attach_goals(goal_tools)  # before the first request: the prefix stays byte-identical
        return session

    def status_lines(self, runner: Any = None) -> list[str]:
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


def _until_served(session: Any, lines: Iterator[str]) -> Iterator[str]:
    """A face's lines, stopping once the chat's program item is settled (checked after each turn)."""
    if session.served():
        return
    for line in lines:
        yield line
        if session.served():
            return


class _PlainUntilServed(PlainChat):
    def _lines(self) -> Iterator[str]:
        return _until_served(self.session, super()._lines())


class _TerminalUntilServed(TerminalChat):
    def _lines(self) -> Iterator[str]:
        return _until_served(self.session, super()._lines())


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
    raw: Any = stream.readline() if stream is not None else sys.stdin.readline()
    if not raw:
        return None
    return (raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw).strip()


def _say(text: str) -> None:
    sys.stdout.write(text.rstrip("\n") + "\n")
    sys.stdout.flush()


def run_program_chat(options: ChatOptions, program_key: str) -> int:
    """The walk; returns the exit status (0: complete, or left to carry on later)."""
    from formctl.agent.goal_tools import GoalTools
    from formctl.cli.workspace import default_subject, open_registry, open_store, registry_path
    from formctl.errors import InvalidArgumentError
    from formctl.forms.runner import FormRunner
    from formctl.goals.registry import ProgramRegistry
    from formctl.goals.runner import GoalRunner
    from formctl.goals.state import GoalScope

    subject = options.subject or default_subject()
    adapter = open_store(options.store)
    scope = GoalScope(subject=subject, key=program_key)
    goals = GoalRunner(adapter, scope=scope, actor="agent", source=CHAT_SOURCE)
    status = goals.inspect()
    if status is None:
        program = ProgramRegistry.from_toml(registry_path(options.forms)).load(program_key)
        GoalRunner(adapter, scope=scope, actor=default_subject(), source=CHAT_SOURCE).start(program)
        _say(f"· started program {program_key} for {subject}")
    elif status.program.key != program_key:
        raise InvalidArgumentError(f'{subject} / {program_key} runs program "{status.program.key}".')
    tools = GoalTools(goals)
    registry = open_registry(options.forms)
    forms = FormRunner(adapter, registry=registry, subject=subject, actor="agent", source=CHAT_SOURCE)
    code = 0
    while True:
        status = goals.sync()
        assert status is not None
        if status.complete:
            _say(f"{status.line}")
            if status.follow_ups:
                owed = ", ".join(f"{f.label} ({f.reason})" if f.reason else f.label for f in status.follow_ups)
                _say(f"Program {status.program.key} is complete. Still owed: {owed}.")
            else:
                _say(f"Program {status.program.key} is complete.")
            return code
        goal = status.goal(status.active_goal or "")
        assert goal is not None
        pending = [i for i in goal.items if is_pending(i)]
        asked = [i for i in pending if is_asked(i)]
        if asked:
            if not _settle_items(options, goals, forms, tools, goal.key):
                _say(f"Saved. Carry on with: formctl run --program {program_key} --subject {subject}")
                return code
            continue
        item = pending[0]
        _say(f"· {goal.title}: {item.label} (form {item.form})")
        session = ProgramChatSession.for_item(dataclasses.replace(options, form=item.form), tools, goal.key, item.key)
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


def _settle_items(options: ChatOptions, goals: Any, forms: Any, tools: Any, goal_key: str) -> bool:
    """A chat over the goal's items that no form answers, until they are settled (True) or the
    person leaves (False)."""
    from formctl.agent.events import ToolResult
    from formctl.agent.loop import ChatLoop
    from formctl.agent.models import choose_model, pick_model
    from formctl.agent.models.guided_goals import GuidedGoalModel

    model: Any
    if choose_model(options.model, offline=options.offline).provider == "guided":
        model = GuidedGoalModel(goals)
    else:
        model = pick_model(forms, model_name=options.model, offline=options.offline, timeout=options.model_timeout)

    def event(ev: Any) -> None:
        if isinstance(ev, ToolResult) and ev.name == "goal_update":
            if ev.is_error:
                _say(f"· not saved: {ev.result.get('message')}")
            else:
                _say(f"· saved · {tools.line()}")

    loop = ChatLoop(forms, model, goals=tools, on_event=event)

    def unsettled() -> bool:
        status = goals.inspect()
        if status is None or status.active_goal != goal_key:
            return False
        goal = status.goal(goal_key)
        return any(is_asked(i) for i in goal.items)

    def turn(text: str) -> None:
        result = loop.send(text)
        if result.text:
            _say(result.text)
        if result.error:
            _say(f"· {result.error}")

    _say(tools.line())
    turn(OPENER)
    while unsettled():
        line = _read_line()
        if line is None or line in ("/quit", "/exit"):
            return False
        if line:
            turn(line)
    return True
