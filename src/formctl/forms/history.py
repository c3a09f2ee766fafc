"""The answer log: which field an undo or redo moves, what it would become, and a field's history.

A correction appends; retract, undo and redo only move the cursor. So every earlier
answer stays readable and every change stays reversible. These functions read the logs
and never write; the runner commits the cursor moves they choose.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from formctl.errors import NothingToMoveError
from formctl.forms.instance import FieldLog, Instance, provenance_kind

_ABSENT: Any = object()


def last_touched(instance: Instance, skip: Collection[str] = ()) -> str | None:
    """The bare-undo target: the field whose revision at the cursor (retractions included) has the
    highest seq. ``skip``: fields nobody moves (derived ones: they follow their inputs)."""
    best_id, best_seq = None, -1
    for field_id, log in instance.entries.items():
        if skip and field_id in skip:
            continue
        cursor = log.cursor
        if cursor >= 0:
            seq = log.revisions[cursor].seq
            if seq > best_seq:
                best_id, best_seq = field_id, seq
    return best_id


def next_redo(instance: Instance, skip: Collection[str] = ()) -> str | None:
    """The bare-redo target: among fields that can redo, the one whose revision a redo restores is oldest by seq."""
    best_id, best_seq = None, None
    for field_id, log in instance.entries.items():
        if skip and field_id in skip:
            continue
        target = moved_cursor(log, +1)
        if target is not None:
            seq = log.revisions[target].seq
            if best_seq is None or seq < best_seq:
                best_id, best_seq = field_id, seq
    return best_id


def moved_cursor(log: FieldLog | None, step: int) -> int | None:
    """Where an undo (``step=-1``) or redo (``+1``) moves this log's cursor; None when it cannot move.

    Exactly one revision either way, whatever the revision holds (docs/engine.md, 'The answer
    log'): a value refused when it was written is a revision like any other, so undoing the
    correction that followed it puts it back in force, invalid, as it was. That keeps "undo
    then redo puts back the value in force" true for every log. The previews name what the
    move restores and say when it was not accepted (:class:`MoveTarget`).

    The one place the target is decided: the act (:func:`cursor_move`), every preview
    (``undo_would``/``redo_would``, :func:`becomes_after`) and the evaluation's redo target
    all ask here, so what inspect says undo will do is what undo does.
    """
    if log is None:
        return None
    if step < 0:
        return log.cursor - 1 if log.cursor >= 0 else None
    return log.cursor + 1 if log.cursor < len(log.revisions) - 1 else None


def cursor_move(instance: Instance, field_id: str | None, step: int, skip: Collection[str] = ()) -> tuple[str, int]:
    """The field an undo (``step=-1``) or redo (``+1``) moves and the cursor it moves to.

    Without a field: undo moves the last one touched, redo the oldest pending redo, never one in
    ``skip`` (the derived fields). Raises NothingToMoveError when there is nothing to move.
    """
    target = field_id
    if target is None:
        target = last_touched(instance, skip) if step < 0 else next_redo(instance, skip)
        if target is None:
            if step < 0:
                raise NothingToMoveError("There is nothing to undo — no answer has been given yet.")
            raise NothingToMoveError("There is nothing to redo.")
    cursor = moved_cursor(instance.entries.get(target), step)
    if cursor is None:
        raise NothingToMoveError(f'Nothing to {"undo" if step < 0 else "redo"} on "{target}".')
    return target, cursor


def becomes_after(log: FieldLog, step: int) -> tuple[Any, bool]:
    """The raw value the field would hold after an undo (``-1``) or redo (``+1``) (``_ABSENT`` for
    empty), and whether that value was accepted when it was written."""
    target = moved_cursor(log, step)
    if target is not None and target >= 0:
        entry = log.revisions[target]
        if not entry.retracted:
            return entry.value, not entry.error
    return _ABSENT, True


@dataclass(frozen=True, slots=True)
class MoveTarget:
    """What ``undo``/``redo`` would do: ``field`` would become ``value`` (or empty).

    ``accepted`` is False when that value was refused when it was written: the move puts it
    back in force as it was, invalid, and every preview says so."""

    field: str
    label: str
    value: Any = _ABSENT
    accepted: bool = True

    @property
    def empties(self) -> bool:
        return self.value is _ABSENT


def move_target(
    instance: Instance,
    labels: dict[str, str],
    step: int,
    seqs: dict[str, int] | None = None,
    skip: Collection[str] = (),
) -> MoveTarget | None:
    """What a bare undo (``step=-1``) or redo (``+1``) would do, as :func:`cursor_move` picks the
    field; None when there is nothing to move. ``seqs``, from an evaluation, saves a scan: for
    undo each field's seq at its cursor (the highest moves), for redo the seq a redo restores
    (the lowest moves)."""
    if seqs is not None:
        pick = max if step < 0 else min
        field_id = pick(seqs, key=seqs.__getitem__) if seqs else None
    else:
        field_id = last_touched(instance, skip) if step < 0 else next_redo(instance, skip)
    if field_id is None:
        return None
    return MoveTarget(field_id, labels.get(field_id, field_id), *becomes_after(instance.entries[field_id], step))


@dataclass(frozen=True, slots=True)
class RevisionView:
    value: Any
    at: str
    retracted: bool
    invalid: bool
    in_force: bool
    actor: str
    source: str
    note: str | None
    kind: str = "host"  # how the value arrived (docs/engine.md, "Provenance")
    quote: str | None = None
    turn: int | None = None
    message: str | None = None
    hook: str | None = None
    moment: str | None = None  # a seed's: given with the form's start, or with a chat that continued it
    inputs: str | None = None  # a derived value's: the answers it was computed from (``field@seq``)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {}
        if not self.retracted:
            d["value"] = self.value
        d["at"] = self.at
        if self.retracted:
            d["retracted"] = True
        d["invalid"] = self.invalid
        d["in_force"] = self.in_force
        d["actor"] = self.actor
        d["source"] = self.source
        if self.note:
            d["note"] = self.note
        d["provenance"] = self.provenance()
        return d

    def provenance(self) -> dict[str, Any]:
        """How the value arrived: kind, and the person's words (quote, turn, message), the hook, or a seed's moment."""
        d: dict[str, Any] = {"kind": self.kind}
        for name in ("quote", "turn", "message", "hook", "moment", "inputs"):
            value = getattr(self, name)
            if value is not None:
                d[name] = value
        return d


@dataclass(frozen=True, slots=True)
class FieldHistory:
    """Every answer ever given to one field, oldest first (docs/engine.md, 'The answer log')."""

    field: str
    label: str
    revisions: tuple[RevisionView, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"field": self.field, "label": self.label, "revisions": [r.to_dict() for r in self.revisions]}


def field_history(instance: Instance, field_id: str, label: str) -> FieldHistory:
    log = instance.entries.get(field_id) or FieldLog()
    rows = tuple(
        RevisionView(
            value=None if e.retracted else e.value,
            at=e.at,
            retracted=e.retracted,
            invalid=bool(e.error),
            in_force=(i == log.cursor),
            actor=e.provenance.actor,
            source=e.provenance.source,
            note=e.provenance.note,
            kind=provenance_kind(e.provenance),
            quote=e.provenance.quote,
            turn=e.provenance.turn,
            message=e.provenance.message,
            hook=e.provenance.hook,
            moment=e.provenance.moment,
            inputs=e.provenance.inputs,
        )
        for i, e in enumerate(log.revisions)
    )
    return FieldHistory(field_id, label, rows)
