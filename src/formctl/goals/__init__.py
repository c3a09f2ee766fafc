"""Goal programs: an intake that spans forms and visits (docs/goals.md).

A program is ordered goals with checklist items (:mod:`.definition`); its meaning is pure
functions of definition and progress (:mod:`.evaluate`); :class:`GoalRunner` is the only place
that commits (:mod:`.runner`), through a :class:`GoalStore` (:mod:`.store`), and runs the
host's hooks at least once (:mod:`.hooks`). The stores live in :mod:`formctl.store`.

The names below load on first use (PEP 562), as ``formctl``'s own do: importing one module of
this package (``formctl.goals.store``, which ``formctl inspect`` needs to say which program an
instance serves) runs this file first, and should not pay for the runner, the hooks and the
views too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from formctl._lazy import lazy_exports

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

_EXPORTS = {
    "Goal": "formctl.goals.definition",
    "GoalChange": "formctl.goals.runner",
    "GoalConflictError": "formctl.errors",
    "GoalEvent": "formctl.goals.hooks",
    "GoalLockedError": "formctl.errors",
    "GoalRunner": "formctl.goals.runner",
    "GoalScope": "formctl.goals.state",
    "GoalStatus": "formctl.goals.view",
    "GoalStore": "formctl.goals.store",
    "HookOutcome": "formctl.goals.hooks",
    "Item": "formctl.goals.definition",
    "Program": "formctl.goals.definition",
    "define_program": "formctl.goals.definition",
}


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from formctl.errors import GoalConflictError, GoalLockedError
    from formctl.goals.definition import Goal, Item, Program, define_program
    from formctl.goals.hooks import GoalEvent, HookOutcome
    from formctl.goals.runner import GoalChange, GoalRunner
    from formctl.goals.state import GoalScope
    from formctl.goals.store import GoalStore
    from formctl.goals.view import GoalStatus
