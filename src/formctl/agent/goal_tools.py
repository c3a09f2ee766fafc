"""The model's goal tools, ``goal_status`` and ``goal_update``, over one :class:`GoalRunner`.

Beside the form tools (:mod:`formctl.agent.tools`), with the same envelope, the same strict
arguments and the same allow/deny selectors. Where the scope rule lives: the tools are given a
runner, which is built for one exact scope; no argument names a scope or a subject, so the
model cannot reach another. Starting and revising a program are host acts and are not tools.
A model's update always carries the version it read (``goal_update.version``): a change since
is ``goal_conflict``, and the model reads the status again (docs/goals.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from formctl.agent.arguments import GoalStatusArgs, GoalUpdateArgs, Tool, ToolArgs, row
from formctl.agent.tools import (
    answered,
    definition,
    error_envelope,
    fault_envelope,
    judged,
    select_tools,
    success_envelope,
)
from formctl.errors import FormError
from formctl.json_types import JsonObject, JsonValue

if TYPE_CHECKING:
    from formctl.goals.runner import GoalRunner

__all__ = ["GOAL_TOOL_NAMES", "GoalTools", "goal_tool_definitions"]


def _status(runner: GoalRunner, a: GoalStatusArgs) -> JsonValue:
    status = runner.inspect()
    if status is None:
        return {"program": None, "message": "No goal program has started for this conversation."}
    return status.to_dict()


def _update(runner: GoalRunner, a: GoalUpdateArgs) -> JsonValue:
    status = runner.update(
        goal=a.goal,
        completed=a.completed or (),
        deferred=a.deferred or (),
        declined=a.declined or (),
        reopened=a.reopened or (),
        reason=a.reason,
        if_version=a.version,
        reasons=a.reasons,
    )
    return status.to_dict()


_TOOLS: tuple[Tool[GoalRunner], ...] = (
    row(
        "goal_status",
        "The goal program: goals, items and their dispositions, follow-ups, and the version to update from.",
        GoalStatusArgs,
        _status,
    ),
    row(
        "goal_update",
        "Settle items of one goal: completed (done), deferred (later), declined (not needed), or reopened. "
        "Pass the version goal_status gave; on goal_conflict read goal_status again.",
        GoalUpdateArgs,
        _update,
    ),
)
_BY_NAME = {t.name: t for t in _TOOLS}
GOAL_TOOL_NAMES: tuple[str, ...] = tuple(t.name for t in _TOOLS)


def _select(allow: list[str] | None, deny: list[str] | None) -> list[str]:
    """The goal tools left after ``allow`` and ``deny``, by the form tools' one selection rule."""
    return select_tools(allow, deny, surface=GOAL_TOOL_NAMES, what="goal tool")


def goal_tool_definitions(allow: list[str] | None = None, deny: list[str] | None = None) -> list[JsonObject]:
    return [definition(_BY_NAME[name]) for name in _select(allow, deny)]


GOALS_PROMPT = (
    '- A line starting "[goals: …]" may follow it: the goal program this conversation serves, added by the '
    "system. Settle the items it lists as the person answers, with goal_update."
)


class GoalTools:
    """The selected goal tools bound to one runner; ``call`` never raises (every outcome is an
    envelope), and ``line()`` is the goals line for the tail of the model's input."""

    def __init__(self, runner: GoalRunner, *, allow: list[str] | None = None, deny: list[str] | None = None) -> None:
        self.runner = runner
        self.names: list[str] = _select(allow, deny)
        self.definitions: list[JsonObject] = goal_tool_definitions(allow, deny)
        self.prompt = GOALS_PROMPT

    def handles(self, name: str) -> bool:
        return name in GOAL_TOOL_NAMES

    def line(self) -> str:
        """The goals line as stored now ("" before the program starts, or when it cannot be read)."""
        try:
            status = self.runner.inspect()
        except Exception:
            return ""
        return status.line if status is not None else ""

    def call(self, name: str, arguments: JsonValue) -> JsonObject:
        found = judged(name, arguments, _BY_NAME, self.names, "Goal tools")
        return answered(found, lambda tool, args: self._run(name, tool, args))

    def _run(self, name: str, tool: Tool[GoalRunner], args: ToolArgs) -> JsonObject:
        try:
            return success_envelope(tool.run(self.runner, args, None))
        except FormError as exc:
            return error_envelope(exc.message, exc.code)
        except Exception as exc:  # a host's validate_change or hook raising its own error
            return fault_envelope("formctl.agent.goal_tools", name, exc)
