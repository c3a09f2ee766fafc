"""Which program item a form instance serves, for ``formctl instances`` and ``formctl inspect``.

An item bound to a form (``Item(..., form="client-intake")``) serves the subject's instance of
that form that completed it (its progress records the instance), or, while it is not
completed, the subject's open instance of the form.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from formctl.forms.lifecycle import is_open_status
from formctl.goals.definition import Program
from formctl.goals.state import COMPLETED
from formctl.goals.store import GoalStore
from formctl.json_types import JsonObject

if TYPE_CHECKING:
    from formctl.forms.adapter import FormAdapter
    from formctl.forms.reading import InstanceSummary

__all__ = ["items_served", "items_served_each", "settle_bound"]


def items_served(store: GoalStore, subject: str, def_id: str, instance_id: str, status: str) -> list[JsonObject]:
    """``[{"program", "scope", "goal", "item", "label"}]`` for every live item of the subject's
    programs that ``instance_id`` (of form ``def_id``, in ``status``) serves."""
    out: list[JsonObject] = []
    for scope in store.scopes(subject):
        state = store.get(scope)
        if state is None:
            continue
        for goal in state.program.goals:
            for item in goal.items:
                if item.form != def_id or goal.retired or item.retired:
                    continue
                p = state.progress.get((goal.key, item.key))
                if p is not None and p.instance == instance_id:
                    serves = True
                else:
                    serves = (p is None or p.disposition != COMPLETED) and is_open_status(status)
                if serves:
                    out.append(
                        {
                            "program": state.program.key,
                            "scope": scope.to_json(),
                            "goal": goal.key,
                            "item": item.key,
                            "label": item.label,
                        }
                    )
    return out


def items_served_each(store: GoalStore, instances: Sequence[InstanceSummary]) -> list[list[JsonObject]]:
    """:func:`items_served` for each listed instance, in order; one look for any program at all
    first, so a store that keeps none costs one read for the whole listing, not one per row."""
    if not instances or not store.scopes():
        return [[] for _ in instances]
    return [items_served(store, row.subject, row.form, row.instance_id, row.status) for row in instances]


def settle_bound(adapter: FormAdapter, subject: str, def_id: str, *, actor: str, source: str) -> None:
    """Settle, in each of ``subject``'s programs with a live item bound to ``def_id``, the items a
    completed instance of it completes: what ``formctl program sync`` does, done by the write that
    completed the form (docs/goals.md, "Form-bound items"). An item reopened since that completion
    stays open: only a completion newer than the item's last change settles it."""
    from formctl.goals.runner import GoalRunner, goal_store_of

    store = goal_store_of(adapter)
    for scope in store.scopes(subject):
        state = store.get(scope)
        if state is None or not _binds(state.program, def_id):
            continue
        GoalRunner(adapter, scope=scope, actor=actor, source=source).sync()


def _binds(program: Program, def_id: str) -> bool:
    return any(
        item.form == def_id and not (goal.retired or item.retired) for goal in program.goals for item in goal.items
    )
