"""Goal programs: an intake that spans forms and visits (docs/goals.md).

A program is ordered goals with checklist items (:mod:`.definition`); its meaning is pure
functions of definition and progress (:mod:`.evaluate`); :class:`GoalRunner` is the only place
that commits (:mod:`.runner`), through a :class:`GoalStore` (:mod:`.store`), and runs the
host's hooks at least once (:mod:`.hooks`). The stores live in :mod:`formctl.store`.
"""

from __future__ import annotations

from formctl.errors import GoalConflictError, GoalLockedError
from formctl.goals.definition import Goal, Item, Program, define_program
from formctl.goals.hooks import GoalEvent, HookOutcome
from formctl.goals.runner import GoalChange, GoalRunner
from formctl.goals.state import GoalScope
from formctl.goals.store import GoalStore
from formctl.goals.view import GoalStatus

__all__ = [
    "Goal",
    "GoalChange",
    "GoalConflictError",
    "GoalEvent",
    "GoalLockedError",
    "GoalRunner",
    "GoalScope",
    "GoalStatus",
    "GoalStore",
    "HookOutcome",
    "Item",
    "Program",
    "define_program",
]
