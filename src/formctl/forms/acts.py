"""Acts: who changed an instance, when, and why, for every change, answers or not.

An answer carries its author already: every revision has a provenance (who, from where,
when, the note). The acts that append no answer are recorded beside them, in the same commit
as the change itself: an undo or redo (a cursor move), a submit, an abandon, a reopen, a
withdrawal of an approval request, a migration. Each is a record in the instance's dispatch
map under its own key ``ID:act:VERB:N``, as a checkpoint's resolution is
(:mod:`formctl.forms.resolutions`), so every store keeps it with no change to its format, and a
later act never overwrites an earlier one. ``detail`` says what moved (``total: 812.5 → 81.25``,
``complete → active``); ``override`` the rule the actor set aside on their explicit word.

:func:`acts` reads the whole account back, oldest first: the recorded acts, the answers written
by a host or the person (fill, revise, retract, from their provenance), and the resolutions.
Pure: nothing here loads or writes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from formctl.forms.instance import DISPATCH_OK, DispatchState, Instance, provenance_kind

__all__ = ["MARK", "RECORDED", "Act", "act_dispatch", "acts", "is_act", "moved_detail"]

MARK = ":act:"

RECORDED = ("undo", "redo", "submit", "abandon", "reopen", "withdraw", "migrate")
"""The verbs recorded as acts of their own (the others are answers or resolutions)."""

_WRITERS = frozenset({"host", "confirmed", "said", "reading"})
"""Revision kinds listed as acts: a host's writes and the person's own words. A model's
assumptions and an executor's patches are in the field histories, not among the acts."""


def moved_detail(field_id: str, log: Any, cursor: int) -> str:
    """What an undo or redo of ``field_id`` to ``cursor`` moved, as its act says it:
    ``total: 812.5 → 81.25`` (``empty`` before the first answer)."""
    return f"{field_id}: {_shown(log, log.cursor)} → {_shown(log, cursor)}"


def _shown(log: Any, cursor: int) -> str:
    if cursor < 0 or cursor >= len(log.revisions) or log.revisions[cursor].retracted:
        return "empty"
    value = log.revisions[cursor].value
    return value if isinstance(value, str) else _as_json(value)


_as_json = json.JSONEncoder(ensure_ascii=False).encode
"""``json.dumps(value, ensure_ascii=False)`` without building an encoder per call (every undo and
redo says what it moved: 2.4 µs a call, against 0.5)."""


def is_act(key: str) -> bool:
    """Is this dispatch key an act's record (not an executor's run, not a resolution)?"""
    return MARK in key


def act_dispatch(instance: Instance, act: Act) -> dict[str, DispatchState]:
    """The record of ``act`` on ``instance`` (its verb, who, when, why, what it moved, the rule
    set aside), as the ``dispatches`` of the commit that makes it."""
    stem = f"{instance.id}{MARK}{act.act}:"
    n = _next_number(instance.dispatches, stem)
    record = DispatchState(
        f"act:{act.act}",
        DISPATCH_OK,
        1,
        act.at,
        actor=act.actor,
        reason=act.reason or None,
        detail=act.detail,
        override=act.override,
    )
    return {f"{stem}{n}": record}


def _next_number(dispatches: Mapping[str, DispatchState], stem: str) -> int:
    """The number of the next act under ``stem``: one past the last, as acts are numbered 1, 2, 3...
    in turn. Found by doubling then halving over the numbers taken (a dozen lookups for a
    thousand acts), not by a walk over the map, which holds every run and act ever made and is
    asked on every undo, redo and submit (benchmarks/engine.py). Whatever the map holds, the
    number returned is free, and the one before it taken (or it is 1)."""
    if f"{stem}1" not in dispatches:
        return 1
    taken, free = 1, 2  # stem+taken is in the map; stem+free is the candidate
    while f"{stem}{free}" in dispatches:
        taken, free = free, free * 2
    while free - taken > 1:  # taken is in, free is out: halve the gap
        middle = (taken + free) // 2
        if f"{stem}{middle}" in dispatches:
            taken = middle
        else:
            free = middle
    return free


@dataclass(frozen=True, slots=True)
class Act:
    """One change to an instance: what (``act``), by whom, when, why, and what it moved."""

    act: str
    actor: str | None
    at: str
    reason: str | None = None
    detail: str | None = None
    override: str | None = None
    fields: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"act": self.act, "actor": self.actor, "at": self.at}
        if self.fields:
            d["fields"] = list(self.fields)
        for name in ("reason", "detail", "override"):
            value = getattr(self, name)
            if value is not None:
                d[name] = value
        return d

    def text(self) -> str:
        """``undo by Sam Jones at 2026-…: total: 81.25 → 812.5 (typo)``."""
        what = f"{self.act} {', '.join(self.fields)}" if self.fields else self.act
        who = f" by {self.actor}" if self.actor else ""
        if self.override:
            who += f" ({self.override})"
        detail = f": {self.detail}" if self.detail else ""
        why = f" ({self.reason})" if self.reason else ""
        return f"{what}{who} at {self.at}{detail}{why}"


def _reason_of(note: str | None, verb: str) -> str | None:
    """The reason a revision's note carries (``revision: typo`` → ``typo``)."""
    if not note:
        return None
    head, sep, rest = note.partition(": ")
    if sep and head in ("revision", "retracted", "fill"):
        return rest or None
    return None if note in ("revision", "retracted", "start", "fill") else note


def acts(instance: Instance) -> list[Act]:
    """Every act on the instance, oldest first: recorded acts, written answers, resolutions."""
    from formctl.forms.resolutions import resolutions

    out: list[tuple[str, int, Act]] = []
    order = 0
    # Answers: one act per commit and author (a fill of three fields is one act).
    grouped: dict[tuple[str, str, str, str | None], list[str]] = {}
    for field_id, log in instance.entries.items():
        for i, entry in enumerate(log.revisions):
            prov = entry.provenance
            kind = provenance_kind(prov)
            if kind not in _WRITERS or prov.note == "start":
                continue
            verb = "retract" if entry.retracted else ("revise" if i > 0 else "fill")
            grouped.setdefault((prov.timestamp, prov.actor, verb, prov.note), []).append(field_id)
    for (at, actor, verb, note), fields in grouped.items():
        out.append((at, order, Act(verb, actor, at, _reason_of(note, verb), fields=tuple(fields))))
        order += 1
    for key, record in instance.dispatches.items():
        if is_act(key):
            verb = record.hook_id.partition(":")[2]
            out.append(
                (record.at, order, Act(verb, record.actor, record.at, record.reason, record.detail, record.override))
            )
            order += 1
    for r in resolutions(instance):
        if r.outcome == "withdrawn":
            continue  # its withdraw act says it
        out.append((r.at, order, Act("resolve", r.actor, r.at, r.reason, f"{r.checkpoint} {r.outcome}", r.override)))
        order += 1
    out.sort(key=lambda item: (item[0], item[1]))
    return [a for _, _, a in out]
