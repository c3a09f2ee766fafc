"""What ``inspect()``, ``history()``, the tools and the CLI show of a program: :class:`GoalStatus`.

Built from one snapshot by :func:`status_of` (pure); ``to_dict()`` is the exact JSON the
model's ``goal_status`` and ``formctl program show --json`` give.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from formctl.goals.definition import Goal, Program, program_to_json
from formctl.goals.evaluate import Evaluation, FollowUp, evaluate, goals_line
from formctl.goals.state import COMPLETED, GoalScope, GoalState, ItemProgress, Transition
from formctl.json_types import JsonObject

__all__ = ["GoalStatus", "GoalView", "ItemView", "status_of"]


@dataclass(frozen=True, slots=True)
class ItemView:
    """One item of a goal as the model and the CLI see it: its disposition and whether that is done
    (only ``completed`` is), whether it is live (defined, and neither it nor its goal retired), the
    form a form-bound item is answered with, and the reason and action of the progress that set it."""

    key: str
    label: str
    disposition: str
    done: bool
    live: bool
    retired: bool
    form: str | None
    instance: str | None  # the form instance serving a form-bound item (the completing one, once done)
    reason: str | None
    action: str | None

    def to_dict(self) -> JsonObject:
        out: JsonObject = {"key": self.key, "label": self.label, "disposition": self.disposition}
        if self.retired:
            out["retired"] = True
        if self.form is not None:
            out["form"] = self.form
            out["instance"] = self.instance
        if self.reason:
            out["reason"] = self.reason
        return out


@dataclass(frozen=True, slots=True)
class GoalView:
    """One goal of the program as it stands: its status, whether its definition is locked (a
    revision may not edit, remove, retire or unlock it), its items' views, and the definition."""

    key: str
    title: str
    objective: str
    status: str  # pending | active | complete | retired
    locked: bool
    items: tuple[ItemView, ...]
    definition: Goal

    def to_dict(self) -> JsonObject:
        out: JsonObject = {"key": self.key, "title": self.title, "status": self.status}
        if self.objective:
            out["objective"] = self.objective
        out["items"] = [i.to_dict() for i in self.items]
        return out


@dataclass(frozen=True, slots=True)
class GoalStatus:
    """One version of a program in its scope, with everything derived from it."""

    scope: GoalScope
    version: int
    program: Program
    goals: tuple[GoalView, ...]
    active_goal: str | None
    complete: bool
    follow_ups: tuple[FollowUp, ...]
    progress: Mapping[tuple[str, str], ItemProgress]
    transitions: tuple[Transition, ...]
    created_at: str
    updated_at: str
    actor: str
    source: str | None
    change: str
    reason: str | None
    evaluation: Evaluation

    @property
    def line(self) -> str:
        """The one-line state at the tail of a model's input."""
        return goals_line(self.evaluation)

    def goal(self, key: str) -> GoalView | None:
        return next((g for g in self.goals if g.key == key), None)

    def item(self, goal: str, key: str) -> ItemView | None:
        g = self.goal(goal)
        return next((i for i in g.items if i.key == key), None) if g is not None else None

    def to_dict(self, *, full: bool = False) -> JsonObject:
        """The status as JSON. ``full`` adds the definition, provenance and transitions (the CLI's ``--json``)."""
        out: JsonObject = {
            "program": self.program.key,
            "version": self.version,
            "active_goal": self.active_goal,
            "complete": self.complete,
            "goals": [g.to_dict() for g in self.goals],
            "follow_ups": [
                {"goal": f.goal, "item": f.item, "label": f.label, "reason": f.reason, "defined": f.defined}
                for f in self.follow_ups
            ],
        }
        if full:
            out["scope"] = self.scope.to_json()
            out["updated_at"] = self.updated_at
            out["created_at"] = self.created_at
            out["actor"] = self.actor
            out["source"] = self.source
            out["change"] = self.change
            out["reason"] = self.reason
            out["transitions"] = [t.to_json() for t in self.transitions]
            out["definition"] = program_to_json(self.program)
        return out


def status_of(state: GoalState, open_instances: Mapping[str, str] | None = None) -> GoalStatus:
    """The view of one snapshot. ``open_instances`` maps a form id to the subject's open
    instance of it, shown on a form-bound item that is not completed yet."""
    ev = evaluate(state.program, state.progress)
    goals = []
    for g in ev.goals:
        items = []
        for i in g.items:
            p = i.progress
            instance = p.instance if p is not None and p.instance else None
            if instance is None and i.form is not None and i.disposition != COMPLETED:
                instance = (open_instances or {}).get(i.form)
            items.append(
                ItemView(
                    i.key,
                    i.label,
                    i.disposition,
                    i.done,
                    i.live,
                    i.retired,
                    i.form,
                    instance,
                    p.reason if p is not None else None,
                    p.action if p is not None else None,
                )
            )
        goals.append(GoalView(g.key, g.goal.title, g.goal.objective, g.status, g.goal.locked, tuple(items), g.goal))
    return GoalStatus(
        scope=state.scope,
        version=state.version,
        program=state.program,
        goals=tuple(goals),
        active_goal=ev.active,
        complete=ev.complete,
        follow_ups=ev.follow_ups,
        progress=dict(state.progress),
        transitions=state.transitions,
        created_at=state.created_at,
        updated_at=state.updated_at,
        actor=state.actor,
        source=state.source,
        change=state.change,
        reason=state.reason,
        evaluation=ev,
    )
