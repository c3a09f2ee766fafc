"""Which of a subject's goal programs a command means: one rule for every command and the chat
(docs/goals.md, "Finding a subject's program").

A program runs in a scope ``(subject, key, agent)``. ``formctl program start client-intake --key
intake`` runs the program ``client-intake`` in the scope keyed ``intake``, so a name a person gives
may be either key. The rule:

1. A name (``--key K``, or ``run --program K``) means the scope keyed ``K`` when there is one;
   otherwise the one scope whose program is ``K``. Several scopes running ``K`` is a question, not a
   guess: the choices are listed and nothing is done.
2. No name means the subject's one program, whatever its keys; several are listed the same way.
3. Nothing found is None: a command that reads says so; a command that starts one may start it.
   A second program is never started beside one the name already finds.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from formctl.errors import InvalidArgumentError
from formctl.goals.definition import Program
from formctl.goals.state import GoalScope
from formctl.goals.store import GoalStore

__all__ = ["ProgramChoiceError", "RunningProgram", "check_bound_forms", "find_scope", "running_programs"]


@dataclass(frozen=True, slots=True)
class RunningProgram:
    """One of a subject's programs: the scope it runs in and the program's key."""

    scope: GoalScope
    program: str

    def option(self) -> str:
        """How a command names it: ``--key intake (program client-intake)``."""
        agent = f" --agent {self.scope.agent}" if self.scope.agent else ""
        return f"--key {self.scope.key}{agent} (program {self.program})"


class ProgramChoiceError(InvalidArgumentError):
    """A name (or no name) that fits several of a subject's programs: the message lists them and
    says how to choose one."""

    def __init__(self, subject: str, found: list[RunningProgram]) -> None:
        choices = "; ".join(p.option() for p in found)
        super().__init__(f"{subject} has several goal programs: {choices}. Name one with --key.")
        self.found = found


def running_programs(store: GoalStore, subject: str, agent: str | None = None) -> list[RunningProgram]:
    """The subject's programs (of ``agent``'s scopes when given), in the store's order."""
    out = []
    for scope in store.scopes(subject):
        if agent is not None and scope.agent != agent:
            continue
        state = store.get(scope)
        if state is not None:
            out.append(RunningProgram(scope, state.program.key))
    return out


def find_scope(store: GoalStore, subject: str, name: str | None = None, agent: str | None = None) -> GoalScope | None:
    """The scope ``name`` means for ``subject`` (see the module), or None when nothing fits.
    Raises :class:`ProgramChoiceError` when several do."""
    found = running_programs(store, subject, agent)
    if name is None:
        fits = found
    else:
        fits = [p for p in found if p.scope.key == name] or [p for p in found if p.program == name]
    if len(fits) > 1:
        raise ProgramChoiceError(subject, fits)
    return fits[0].scope if fits else None


def check_bound_forms(program: Program, forms: Collection[str]) -> None:
    """Refuse a program a live item of which is bound to a form no registration names (a typo would
    otherwise be stored, and fail only when the item's turn came). Retired items are never walked."""
    unknown = [
        f'{goal.key}.{item.key} -> "{item.form}"'
        for goal in program.goals
        for item in goal.items
        if item.form is not None and not (goal.retired or item.retired) and item.form not in forms
    ]
    if unknown:
        known = ", ".join(sorted(forms)) or "none"
        raise InvalidArgumentError(
            f"Program {program.key} binds items to forms that are not registered: {', '.join(unknown)} "
            f"(registered forms: {known}). Nothing was stored."
        )
