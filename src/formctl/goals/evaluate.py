"""The meaning of a goal program, as pure functions of (definition, progress).

No clock, no store, no hooks: :func:`evaluate` decides each goal's status, the active goal and
the follow-ups still owed; :func:`apply_update` and :func:`check_revision` decide whether a
change is allowed and what it yields; :func:`transitions` compares two evaluations. The runner
(:mod:`formctl.goals.runner`) is the only place that commits. The rules, and why they are so,
are in docs/goals.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from formctl.errors import GoalLockedError, InvalidArgumentError
from formctl.goals.definition import Goal, Item, Program
from formctl.goals.state import (
    COMPLETED,
    DECLINED,
    DEFERRED,
    PENDING,
    REOPENED,
    ItemProgress,
    Transition,
)

__all__ = [
    "item_reason",
    "Evaluation",
    "FollowUp",
    "GoalEval",
    "ItemEval",
    "ItemUpdate",
    "apply_update",
    "check_revision",
    "evaluate",
    "goals_line",
    "is_asked",
    "is_pending",
    "is_settled",
    "transitions",
]

# A goal's status: retired goals take no part in progression ("retirement is not completion").
GOAL_PENDING, GOAL_ACTIVE, GOAL_COMPLETE, GOAL_RETIRED = "pending", "active", "complete", "retired"

Progress = Mapping[tuple[str, str], ItemProgress]


class _Item(Protocol):
    """An item as evaluated (:class:`ItemEval`) or as shown (``goals.view.ItemView``)."""

    @property
    def disposition(self) -> str: ...
    @property
    def live(self) -> bool: ...
    @property
    def form(self) -> str | None: ...


# --------------------------------------------------------------------------- predicates
# The questions asked of an item's disposition, answered here and nowhere else.


def is_pending(item: _Item) -> bool:
    """The goal waits on it: pending and live. A retired item, or an item of a retired goal, is
    never waited on, whatever its stored disposition (retirement is not completion)."""
    return item.live and item.disposition == PENDING


def is_asked(item: _Item) -> bool:
    """Pending, and no form answers it: the person is asked about it in the chat ("done, later,
    or not needed?") and it is settled with ``goal_update``. A pending item bound to a form is
    answered by completing that form's instance instead."""
    return is_pending(item) and item.form is None


def is_settled(item: _Item) -> bool:
    """No longer pending: completed, deferred or declined (only completed is done: see
    :attr:`ItemEval.done`). A chat serving the item ends here."""
    return item.disposition != PENDING


@dataclass(frozen=True, slots=True)
class ItemEval:
    key: str
    label: str
    disposition: str
    live: bool  # defined, and neither it nor its goal retired
    retired: bool
    form: str | None
    progress: ItemProgress | None

    @property
    def done(self) -> bool:
        """Only ``completed`` is done; deferred and declined settle progression without being done."""
        return self.disposition == COMPLETED


@dataclass(frozen=True, slots=True)
class GoalEval:
    goal: Goal
    status: str
    items: tuple[ItemEval, ...]

    @property
    def key(self) -> str:
        return self.goal.key

    def pending(self) -> list[ItemEval]:
        return [i for i in self.items if is_pending(i)]


@dataclass(frozen=True, slots=True)
class FollowUp:
    """A deferral still owed: visible until completed or declined, also after the program
    completes and when its definition was removed or retired."""

    goal: str
    item: str
    label: str
    reason: str | None
    defined: bool  # False when the goal or the item is no longer in the program


@dataclass(frozen=True, slots=True)
class Evaluation:
    program: Program
    goals: tuple[GoalEval, ...]
    active: str | None
    follow_ups: tuple[FollowUp, ...]

    @property
    def complete(self) -> bool:
        """No goal has unresolved live items (deferred follow-ups may still be owed)."""
        return self.active is None

    def goal(self, key: str) -> GoalEval | None:
        for g in self.goals:
            if g.key == key:
                return g
        return None

    def statuses(self) -> dict[str, str]:
        return {g.key: g.status for g in self.goals}


def _disposition(progress: ItemProgress | None) -> str:
    return progress.disposition if progress is not None else PENDING


def evaluate(program: Program, progress: Progress) -> Evaluation:
    """Each goal's status, the active goal (the first goal with unresolved live items), and
    the deferrals still owed."""
    goals: list[GoalEval] = []
    active: str | None = None
    for goal in program.goals:
        items = tuple(
            ItemEval(
                item.key,
                item.label,
                _disposition(progress.get((goal.key, item.key))),
                not (goal.retired or item.retired),
                item.retired or goal.retired,
                item.form,
                progress.get((goal.key, item.key)),
            )
            for item in goal.items
        )
        if goal.retired:
            status = GOAL_RETIRED
        elif any(is_pending(i) for i in items):
            if active is None:
                active = goal.key
                status = GOAL_ACTIVE
            else:
                status = GOAL_PENDING
        else:
            status = GOAL_COMPLETE
        goals.append(GoalEval(goal, status, items))
    follow_ups = []
    for (goal_key, item_key), p in progress.items():
        if p.disposition != DEFERRED:
            continue
        g = program.goal(goal_key)
        item = g.item(item_key) if g is not None else None
        follow_ups.append(
            FollowUp(
                goal_key,
                item_key,
                item.label if item is not None else item_key,
                p.reason,
                item is not None and g is not None and not (g.retired or item.retired),
            )
        )
    follow_ups.sort(key=lambda f: _order(program, f.goal, f.item))
    return Evaluation(program, tuple(goals), active, tuple(follow_ups))


def _order(program: Program, goal_key: str, item_key: str) -> tuple[int, int]:
    for n, g in enumerate(program.goals):
        if g.key == goal_key:
            for m, i in enumerate(g.items):
                if i.key == item_key:
                    return n, m
            return n, len(g.items)
    return len(program.goals), 0


# --------------------------------------------------------------------------- updates


@dataclass(frozen=True, slots=True)
class Stamp:
    """Who makes a change, and when: what an item's progress records."""

    version: int
    at: str
    actor: str
    reason: str | None


def _keys(value: Iterable[str] | str, name: str) -> list[str]:
    if isinstance(value, str):
        raise InvalidArgumentError(f"{name} is a list of item keys, not one string.")
    keys = list(value)
    for key in keys:
        if not isinstance(key, str) or not key:
            raise InvalidArgumentError(f"{name} holds {key!r}, which is not an item key.")
    return keys


@dataclass(frozen=True, slots=True)
class ItemUpdate:
    """What one update asks of the items of ``goal``: the keys it completes, defers, declines and
    reopens, and the reason ``reasons`` gives an item of its own (item key -> reason). Each list
    is kept as given (a string too, which :meth:`asked` refuses in words)."""

    goal: str
    completed: Iterable[str] = ()
    deferred: Iterable[str] = ()
    declined: Iterable[str] = ()
    reopened: Iterable[str] = ()
    reasons: Mapping[str, str | None] | None = None

    @classmethod
    def listed(
        cls,
        goal: str,
        dispositions: tuple[Iterable[str], Iterable[str], Iterable[str], Iterable[str]],
        reasons: Mapping[str, str | None] | None,
    ) -> ItemUpdate:
        """The update with each of ``(completed, deferred, declined, reopened)`` read once into a
        list, so a retried update reads the same keys again (a generator is read once)."""
        completed, deferred, declined, reopened = (x if isinstance(x, str) else list(x) for x in dispositions)
        return cls(goal, completed, deferred, declined, reopened, reasons)

    def asked(self) -> list[tuple[str, str]]:
        """Every (item key, action) the update names, in that order; refused when it names none,
        or one twice (:func:`_asked`)."""
        return _asked(self.completed, self.deferred, self.declined, self.reopened)

    def named(self) -> list[str]:
        """The item keys the update names (a string given for a list names none)."""
        lists = (self.completed, self.deferred, self.declined, self.reopened)
        return [k for x in lists if not isinstance(x, str) for k in x]


def apply_update(
    program: Program, progress: Progress, update: ItemUpdate, stamp: Stamp
) -> tuple[dict[tuple[str, str], ItemProgress], list[str]]:
    """The progress after settling or reopening items of ``update.goal``, and the keys that changed.

    Each item keeps its own reason (:func:`item_reason`): the one ``update.reasons`` gives it,
    else the change's (``stamp.reason``), which explains the exceptions of an update that has
    some: a completed item is given it only when the update defers or declines nothing.

    The whole update is refused (InvalidArgumentError, nothing applied) when a key is unknown
    or named twice. A disposition an item already has is a no-op. The items an update may
    name are the goal's defined items, and, to settle a follow-up, a deferred item whose
    definition was removed or retired (complete or decline it); reopening needs a live item
    ("restore retired definitions before reopening them")."""
    asked = update.asked()
    goal = update.goal
    g = program.goal(goal)
    if g is None and not any(gk == goal for gk, _ in progress):
        known = ", ".join(x.key for x in program.goals) or "none"
        raise InvalidArgumentError(f'No goal "{goal}" (goals: {known}). Nothing was applied.')
    new = dict(progress)
    changed: list[str] = []
    for key, action in asked:
        current = progress.get((goal, key))
        _check_may_name(g, goal, key, action, current)
        disposition = PENDING if action == REOPENED else action
        if _disposition(current) == disposition:
            continue  # a repeated disposition is a no-op
        reason = item_reason(key, action, asked, stamp.reason, update.reasons)
        new[(goal, key)] = ItemProgress(disposition, action, stamp.version, stamp.at, stamp.actor, reason)
        changed.append(key)
    return new, changed


def item_reason(
    key: str,
    action: str,
    asked: list[tuple[str, str]],
    reason: str | None,
    reasons: Mapping[str, str | None] | None,
) -> str | None:
    """The reason item ``key`` keeps: its own (``reasons``), else the change's ``reason``, except
    that a completion beside a deferral or a decline keeps none ("completed changes, deferred
    documents: will send them tomorrow" is the deferral's why, not the completion's)."""
    if reasons is not None and key in reasons:
        return reasons[key]
    if action == COMPLETED and any(a in (DEFERRED, DECLINED) for _, a in asked):
        return None
    return reason


def _asked(
    completed: Iterable[str], deferred: Iterable[str], declined: Iterable[str], reopened: Iterable[str]
) -> list[tuple[str, str]]:
    """Every (item key, action) an update names, in that order; refused when it names none, or one twice."""
    asked: list[tuple[str, str]] = [
        *((k, COMPLETED) for k in _keys(completed, "completed")),
        *((k, DEFERRED) for k in _keys(deferred, "deferred")),
        *((k, DECLINED) for k in _keys(declined, "declined")),
        *((k, REOPENED) for k in _keys(reopened, "reopened")),
    ]
    if not asked:
        raise InvalidArgumentError("The update names no item: give completed, deferred, declined or reopened.")
    seen: set[str] = set()
    for key, _ in asked:
        if key in seen:
            raise InvalidArgumentError(f'Item "{key}" is named twice in one update. Nothing was applied.')
        seen.add(key)
    return asked


def _check_may_name(g: Goal | None, goal: str, key: str, action: str, current: ItemProgress | None) -> None:
    """Refuse an item the update may not name: unknown, or retired (a retired item's own deferral
    may still be completed or declined; reopening needs its definition restored)."""
    item: Item | None = g.item(key) if g is not None else None
    if item is not None and g is not None and not (g.retired or item.retired):
        return  # a live item: any action
    if action == REOPENED and item is not None:
        raise InvalidArgumentError(
            f'Item "{key}" of goal "{goal}" is retired: restore its definition before reopening it. '
            "Nothing was applied."
        )
    follow_up = current is not None and current.disposition == DEFERRED
    if follow_up and action in (COMPLETED, DECLINED):
        return
    if item is None:
        raise InvalidArgumentError(
            f'Goal "{goal}" has no item "{key}"'
            + (f" (items: {', '.join(i.key for i in g.items)})" if g is not None and g.items else "")
            + ". Nothing was applied."
        )
    raise InvalidArgumentError(
        f'Item "{key}" of goal "{goal}" is retired; only a deferral it left can be completed or '
        "declined. Nothing was applied."
    )


# --------------------------------------------------------------------------- revisions


def check_revision(current: Program, proposed: Program) -> None:
    """Raise unless ``proposed`` may replace ``current``: the same program identity, and no
    locked goal or item edited, removed, retired or unlocked (GoalLockedError naming them)."""
    if proposed.key != current.key:
        raise InvalidArgumentError(
            f'This scope runs program "{current.key}"; a revision cannot turn it into "{proposed.key}". '
            "Use another scope for another program."
        )
    broken: list[str] = []
    for goal in current.goals:
        after = proposed.goal(goal.key)
        if goal.locked:
            if after is None:
                broken.append(f'goal "{goal.key}" removed')
            elif (after.title, after.objective, after.locked, after.retired) != (
                goal.title,
                goal.objective,
                goal.locked,
                goal.retired,
            ):
                broken.append(f'goal "{goal.key}" edited')
        for item in goal.items:
            if not item.locked:
                continue
            moved = after.item(item.key) if after is not None else None
            if moved is None:
                broken.append(f'item "{goal.key}.{item.key}" removed')
            elif moved != item:
                broken.append(f'item "{goal.key}.{item.key}" edited')
    if broken:
        raise GoalLockedError(
            "Locked definitions cannot be edited, removed, retired or unlocked: " + "; ".join(broken) + ".",
            broken,
        )


# --------------------------------------------------------------------------- transitions


def transitions(
    before: Evaluation | None, after: Evaluation, *, scope_id: str, version: int, reason: str | None
) -> tuple[Transition, ...]:
    """The transitions from ``before`` (None: a program just started) to ``after``: per goal,
    ``complete`` then ``reopen`` then ``enter``, in program order. Retirement is not
    completion, and un-retiring a settled goal is not a reopening."""
    old = before.statuses() if before is not None else {}
    out: list[Transition] = []
    for g in after.goals:
        was = old.get(g.key, GOAL_PENDING)
        now = g.status
        kinds: list[str] = []
        if now == GOAL_COMPLETE and was in (GOAL_PENDING, GOAL_ACTIVE):
            kinds.append("complete")
        if was == GOAL_COMPLETE and now in (GOAL_PENDING, GOAL_ACTIVE):
            kinds.append("reopen")
        if now == GOAL_ACTIVE and was != GOAL_ACTIVE:
            kinds.append("enter")
        for kind in kinds:
            out.append(Transition(f"{scope_id}:{version}:{g.key}:{kind}", g.key, kind, now, version, reason))
    return tuple(out)


# --------------------------------------------------------------------------- the goals line


def goals_line(evaluation: Evaluation, *, limit: int = 4) -> str:
    """The one-line state a model reads at the tail of its input (docs/goals.md, "The goals line"):
    ``[goals: client-intake] goal 2/3 "Matter updates" · pending: New documents · deferred: 1``."""
    head = f"[goals: {evaluation.program.key}]"
    live = [g for g in evaluation.goals if g.status != GOAL_RETIRED]
    deferred = len(evaluation.follow_ups)
    parts: list[str]
    if evaluation.active is None:
        parts = [f"{head} complete"]
    else:
        n = next(i for i, g in enumerate(live, 1) if g.key == evaluation.active)
        active = live[n - 1]
        parts = [f'{head} goal {n}/{len(live)} "{active.goal.title}"']
        pending = active.pending()
        labels = [i.label for i in pending[:limit]]
        if len(pending) > limit:
            labels.append(f"+{len(pending) - limit} more")
        parts.append("pending: " + ", ".join(labels))
    if deferred:
        parts.append(f"deferred: {deferred}")
    return " · ".join(parts)
