"""The goal runner a program conversation works through: ``formctl run --program KEY`` and
``formctl mcp --program KEY`` open it here, by one rule.

``KEY`` is a scope's key or a program's (:func:`formctl.goals.finding.find_scope`): the subject's
program it names is the one served, whatever key it was started under. Only when the subject has
none is the registered program ``KEY`` started, in the scope keyed ``KEY``, once every form its
items are bound to is known to be registered. The runner gets the hooks the program registers
(docs/goals.md, "Hooks from the command line").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from formctl.forms.adapter import FormAdapter
    from formctl.forms.registry import FormRegistry
    from formctl.goals.runner import GoalRunner

__all__ = ["ProgramConversation", "open_program"]


@dataclass(frozen=True)
class ProgramConversation:
    """Who serves a program conversation: the subject, the program ``KEY`` names, and who acts."""

    subject: str
    key: str
    forms: str | None  # --forms (the registry file's folder)
    actor: str  # the model's writes ("agent")
    starter: str  # who a program started here is recorded as started by
    source: str  # "chat", "mcp"


def open_program(adapter: FormAdapter, registry: FormRegistry, c: ProgramConversation) -> tuple[GoalRunner, bool]:
    """The runner of the program ``c.key`` names for ``c.subject``, and whether it was started now."""
    from formctl.cli.workspace import registry_path
    from formctl.goals.finding import check_bound_forms, find_scope
    from formctl.goals.registry import ProgramRegistry
    from formctl.goals.runner import GoalRunner, goal_store_of
    from formctl.goals.state import GoalScope

    programs = ProgramRegistry.from_toml(registry_path(c.forms))
    store = goal_store_of(adapter)
    scope = find_scope(store, c.subject, c.key)
    started = scope is None
    if scope is None:
        program = programs.load(c.key)
        check_bound_forms(program, [f["id"] for f in registry.list()])
        scope = GoalScope(subject=c.subject, key=c.key)
        hooks = programs.hooks(c.key)
        GoalRunner(adapter, scope=scope, actor=c.starter, source=c.source, hooks=hooks).start(program)
    running = store.get(scope)
    hooks = programs.hooks(running.program.key) if running is not None else None
    return GoalRunner(adapter, scope=scope, actor=c.actor, source=c.source, hooks=hooks), started
