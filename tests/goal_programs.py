"""The goal programs the goal tests share: the returning-client story's program, before and after
its revision, and a recorder of hook calls."""

from __future__ import annotations

import dataclasses

from formctl import Goal, Item, define_program

IDENTITY = Goal(
    "identity",
    title="Confirm identity",
    objective="Know who is speaking",
    items=[Item("client", label="Verify the client", locked=True)],
)
ELIGIBILITY = Goal(
    "eligibility",
    title="Eligibility",
    objective="Decide whether we can take the matter",
    items=[Item("conflict", label="Conflict check"), Item("income", label="Income assessment")],
)
UPDATES = Goal(
    "updates",
    title="Matter updates",
    objective="Collect changes since the previous conversation",
    items=[Item("changes", label="New developments"), Item("documents", label="New documents")],
)


def intake():
    return define_program("client-intake", goals=[IDENTITY, ELIGIBILITY])


def follow_up(current):
    """The revision of the story: keep identity, retire the irrelevant, add the matter updates."""
    goals = [dataclasses.replace(g, retired=True) if g.key == "eligibility" else g for g in current.program.goals]
    return define_program(current.program.key, goals=[*goals, UPDATES])


class HookRecorder:
    """Hooks that record ``(kind, goal, status, reason, key)`` per call."""

    def __init__(self):
        self.calls = []

    def _record(self, event):
        self.calls.append((event.kind, event.goal.key, event.status, event.reason, event.idempotency_key))

    on_enter = on_complete = on_reopen = _record

    def kinds(self):
        return [(kind, goal) for kind, goal, *_ in self.calls]
