"""Goal hooks: ``on_enter``, ``on_complete`` and ``on_reopen``, run at least once per transition.

A commit saves its transitions with the progress, and the store a ``pending`` receipt for
each, in the same all-or-nothing write. After the commit the runner claims each receipt
(an owner-fenced lease), runs the host's hook with the transition's stable idempotency key,
and settles the receipt ``ok`` or ``failed``. A receipt that is ``ok`` is never run again; a
``failed`` one, or a ``running`` one whose process died (or whose lease ran out), is run again
by ``resume_hooks()`` under the same key. Delivery is therefore at least once: an effect
outside formctl deduplicates on ``event.idempotency_key`` to happen exactly once
(docs/goals.md, "Hooks"). The call itself reuses the forms' executor machinery
(:mod:`formctl.forms.executors`): owners, liveness, async hooks and the one-line fault text.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from formctl.errors import InvalidArgumentError
from formctl.forms.executors import _run_awaitable, fault_text, owner
from formctl.forms.instance import now_iso
from formctl.goals.definition import Goal, Program
from formctl.goals.state import RECEIPT_FAILED, RECEIPT_OK, GoalScope, Receipt, Transition
from formctl.goals.store import GoalStore

__all__ = ["GoalEvent", "HookOutcome", "HOOK_NAMES", "run_receipts"]

HOOK_NAMES = {"enter": "on_enter", "complete": "on_complete", "reopen": "on_reopen"}
DEFAULT_LEASE = 300.0
_log = logging.getLogger("formctl.goals.hooks")


@dataclass(frozen=True, slots=True)
class GoalEvent:
    """What a hook receives: the goal's definition as of the transition, the transition (its
    kind, the goal's status then, the version that made it), the reason given, and the key to
    deduplicate external effects on."""

    scope: GoalScope
    goal: Goal
    transition: Transition
    reason: str | None
    idempotency_key: str
    attempt: int

    @property
    def kind(self) -> str:
        return self.transition.kind

    @property
    def status(self) -> str:
        return self.transition.status


@dataclass(frozen=True, slots=True)
class HookOutcome:
    key: str
    goal: str
    kind: str
    status: str  # ok | failed | skipped (done, or held by a live owner) | none (no hook for it)
    error: str | None = None


Hook = Callable[[GoalEvent], object]
"""A goal hook: called with the event; what it returns is ignored, unless it is awaitable (an
``async def`` hook), which is awaited."""
Hooks = Mapping[str, Hook]
"""The host's hooks by name: ``on_enter``, ``on_complete``, ``on_reopen``."""


def check_hooks(hooks: Hooks | object | None) -> dict[str, Hook]:
    """The host's hooks as a dict keyed ``on_enter|on_complete|on_reopen``; from a mapping or an
    object with those attributes. Anything else is refused at construction, not at the first
    transition."""
    if hooks is None:
        return {}
    names = set(HOOK_NAMES.values())
    if isinstance(hooks, Mapping):
        unknown = set(hooks) - names
        if unknown:
            raise InvalidArgumentError(f"Unknown goal hooks: {', '.join(sorted(unknown))} (hooks are {sorted(names)}).")
        found: dict[str, object] = dict(hooks)
    else:
        found = {n: getattr(hooks, n) for n in names if getattr(hooks, n, None) is not None}
    checked: dict[str, Hook] = {}
    for name, fn in found.items():
        if not callable(fn):
            raise InvalidArgumentError(f"The goal hook {name} is not callable.")
        checked[name] = fn
    return checked


def _goal_of(program: Program | None, key: str) -> Goal:
    goal = program.goal(key) if program is not None else None
    return goal if goal is not None else Goal(key, title=key)


def run_receipts(
    store: GoalStore,
    scope: GoalScope,
    hooks: Hooks,
    receipts: list[Receipt],
    programs: Callable[[int], Program | None],
    *,
    lease_seconds: float = DEFAULT_LEASE,
) -> list[HookOutcome]:
    """Claim, run and settle each receipt in turn; one outcome per receipt. ``programs(version)``
    gives the definition as of a transition's version (the goal the hook receives)."""
    outcomes: list[HookOutcome] = []
    me = owner()
    for receipt in receipts:
        t = receipt.transition
        fn = hooks.get(HOOK_NAMES.get(t.kind, ""))
        claimed = store.claim(scope, receipt.key, me, lease_seconds=lease_seconds, now=time.time())
        if claimed is None:
            outcomes.append(HookOutcome(receipt.key, t.goal, t.kind, "skipped"))
            continue
        if fn is None:
            # No hook for this kind: settled at once, so it is not offered again.
            store.settle(scope, receipt.key, me, ok=True, at=now_iso(), error=None)
            outcomes.append(HookOutcome(receipt.key, t.goal, t.kind, "none"))
            continue
        event = GoalEvent(scope, _goal_of(programs(t.version), t.goal), t, t.reason, receipt.key, claimed.attempts)
        error: str | None = None
        try:
            result = fn(event)
            if hasattr(result, "__await__"):
                _run_awaitable(result)
        except Exception as exc:
            error = fault_text(exc)
            _log.info("goal hook %s (%s) raised: %s", HOOK_NAMES[t.kind], receipt.key, error, exc_info=exc)
        settled = store.settle(scope, receipt.key, me, ok=error is None, at=now_iso(), error=error)
        status = (RECEIPT_OK if error is None else RECEIPT_FAILED) if settled else "skipped"
        outcomes.append(HookOutcome(receipt.key, t.goal, t.kind, status, error))
    return outcomes
