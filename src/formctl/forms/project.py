"""Projection: the views a model (and a person) reads, and the tier-0 line. Pure functions.

Tier 0 is one cheap standing line (the open step and what it still needs, plus what
comes later); tier 1 is the open step in full (``form_status``); tier 2 is any step, one
field, or the whole outline (``form_inspect``). Every view's ``to_dict()`` is the exact
JSON the model sees: keys with no value are left out, never sent as null.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any

from formctl.forms.compile import CompiledForm
from formctl.forms.evaluate import FILLED, HELD, INVALID, Evaluation
from formctl.forms.failures import Failure, check_words, failure_text, open_failures
from formctl.forms.history import MoveTarget, move_target
from formctl.forms.instance import (
    ABANDONED,
    AWAITING,
    COMPLETE,
    READY,
    STALE,
    Instance,
)
from formctl.forms.lifecycle import complete_flag, read_status
from formctl.forms.validate import to_jsonable

HELD_NOTE = (
    "Kept, but not applicable given the current answers: these don't count toward "
    "completion and come back if the answers change."
)
UNKNOWN_NOTE = (
    "Nothing was stored for these ids. Use did_you_mean where offered, or call "
    "form_inspect for the real ids; don't guess again."
)
NOT_STORED_NOTE = (
    "Not stored: the person's own words don't hold these values. Ask the person, and send their exact words in quotes."
)
IGNORED_NOTE = "Blank values are ignored, never written. To withdraw an answer use form_revise action=retract."
CLOSED_NOTE = "Collection has stopped: don't ask for the remaining fields. Tell the user why, using closed_reason."


# --------------------------------------------------------------------------- views


def _json_literal(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


@dataclass(slots=True)
class FieldRow:
    id: str
    label: str
    type: str
    required: bool
    status: str
    ask: bool
    description: str | None = None
    value: Any = None
    has_value: bool = False
    error: str | None = None
    # False for a field that does not apply given the other answers (a ticket on a car trip):
    # not needed, whatever ``required`` says. Shown by the command-line views; the tool results'
    # rows keep their shape (their status says held, or empty and never asked).
    applies: bool = True
    derived: bool = False  # the engine computes it from other answers; nobody sets it
    failed_check: str | None = None  # the message of a failing check that reads this answer

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "id": self.id,
            "label": self.label,
            "type": self.type,
            "required": self.required,
            "status": self.status,
            "ask": self.ask,
        }
        if self.description:
            d["description"] = self.description
        if self.has_value:
            d["value"] = self.value
        if self.error:
            d["error"] = self.error
        if self.derived:
            d["derived"] = True
        if self.failed_check:
            d["failed_check"] = self.failed_check
        return d


@dataclass(frozen=True, slots=True)
class FailedCheck:
    """A check that applies and fails (docs/engine.md, "Checks"): its id, its message, and the
    answers it reads (ids; ``labels`` as people read them)."""

    check: str
    message: str
    fields: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"check": self.check, "message": self.message}
        if self.fields:
            d["fields"] = list(self.fields)
        return d


def failed_checks(compiled: CompiledForm, ev: Evaluation) -> list[FailedCheck]:
    """The checks holding the form, as every view shows them."""
    labels = compiled.labels
    return [
        FailedCheck(c.id, ev.check_message(c), c.fields, tuple(labels[f] for f in c.fields)) for c in ev.failed_checks
    ]


def held_line(check: FailedCheck) -> str:
    """A failing check as the person's status says it: ``held: «message»``."""
    return f"held: {check.message}"


@dataclass(slots=True)
class _StepPlace:
    """A step and its place in the form's order, as every view of a step shows it."""

    id: str
    title: str
    number: int  # 1-based, as shown: "2/4"
    of: int

    def _placed(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "position": f"{self.number}/{self.of}"}


@dataclass(slots=True)
class StepBlock(_StepPlace):
    ask: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = self._placed()
        if self.ask:
            d["ask"] = self.ask
        return d


@dataclass(slots=True)
class StepSummary(_StepPlace):
    preview: str | None
    required: int
    filled: int
    complete: bool
    open: bool

    def to_dict(self) -> dict[str, Any]:
        d = self._placed()
        if self.preview:
            d["collects"] = self.preview
        d["progress"] = f"{self.filled}/{self.required}"
        d["complete"] = self.complete
        d["open"] = self.open
        return d


@dataclass(slots=True)
class FormView:
    """A step, field or outline view of one instance (tiers 1 and 2)."""

    instance_id: str
    def_id: str
    def_version: int
    name: str
    status: str
    scope: str
    complete: bool
    conduct: str | None = None
    step: StepBlock | None = None
    steps: list[StepSummary] | None = None
    fields: list[FieldRow] = dc_field(default_factory=list)
    blocked_on: str | None = None
    wait_message: str | None = None
    failures: list[Failure] = dc_field(default_factory=list)
    checks_failed: list[FailedCheck] = dc_field(default_factory=list)
    revisiting: bool = False
    closed_reason: str | None = None
    undo: MoveTarget | None = None
    redo: MoveTarget | None = None
    closed_on_version: int | None = None  # a closed record read as it closed (docs/engine.md, "Closed records")
    # The failures in plain words for a host's view, a check's id in brackets (not in to_dict:
    # the model reads ``failures``).
    failure_lines: list[str] = dc_field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        # The form's conduct is sent once, in the fixed system prompt (docs/engine.md, 'Views'), so views
        # leave it out rather than re-send it in every tool result.
        d: dict[str, Any] = {
            "instance_id": self.instance_id,
            "form": self.def_id,
            "name": self.name,
            "status": self.status,
            "complete": self.complete,
        }
        if self.revisiting:
            d["revisiting"] = True
        if self.step is not None:
            d["step"] = self.step.to_dict()
        if self.steps is not None:
            d["steps"] = [s.to_dict() for s in self.steps]
        d["fields"] = [f.to_dict() for f in self.fields]
        if self.blocked_on:
            d["blocked_on"] = self.blocked_on
            if self.wait_message:
                d["waiting"] = self.wait_message
        if self.failures:
            d["failures"] = [f.to_dict() for f in self.failures]
        if self.checks_failed:
            d["checks_failed"] = [c.to_dict() for c in self.checks_failed]
        if self.undo is not None:
            d["undo_would"] = _move_text(self.undo)
        if self.redo is not None:
            d["redo_would"] = _move_text(self.redo)
        if self.closed_reason:
            d["closed_reason"] = self.closed_reason
            d["closed_note"] = CLOSED_NOTE
        if self.closed_on_version is not None:
            d["closed_on_version"] = self.closed_on_version
        return d


NOT_ACCEPTED = "(not accepted)"
"""How a preview marks a value an undo or redo would put back that was refused when written."""


def _move_text(target: MoveTarget) -> str:
    if target.empties:
        return f"{target.field} → empty"
    text = f"{target.field} → {_json_literal(target.value)}"
    return text if target.accepted else f"{text} {NOT_ACCEPTED}"


def _field_row(compiled: CompiledForm, ev: Evaluation, instance: Instance, k: int, open_k: int | None) -> FieldRow:
    field = compiled.fields[k]
    status = ev.status[k]
    applicable = ev.applicable[k]
    failed = (
        next((ev.check_message(c) for c in ev.failed_checks if field.id in c.fields), None)
        if ev.failed_checks
        else None
    )
    # An answer a failing check reads is asked again, as an unanswered one is: one of them must change.
    answered = status == FILLED and not ev.revisiting and failed is None
    ask = (
        instance.status != ABANDONED
        and applicable
        and not answered
        and field.derive is None
        and open_k is not None
        and field.step_index == open_k
    )
    row = FieldRow(field.id, field.label, field.type, field.required, status, ask, field.description)
    row.applies = bool(applicable)
    row.derived = field.derive is not None
    row.failed_check = failed
    if status == FILLED:
        row.value = to_jsonable(ev.values[field.id])
        row.has_value = True
    elif status == HELD:
        row.value = ev.held[field.id]
        row.has_value = True
    elif status == INVALID:
        row.error = ev.errors.get(field.id)
    return row


def field_row(compiled: CompiledForm, ev: Evaluation, instance: Instance, field_id: str) -> FieldRow:
    """One field's row as every view shows it (what it holds now, whether to ask it)."""
    return _field_row(compiled, ev, instance, compiled.field_position[field_id], ev.open_step)


def _header(compiled: CompiledForm, ev: Evaluation, instance: Instance, scope: str) -> FormView:
    labels = compiled.labels
    wait = None
    if instance.blocked_on:
        cp = compiled.checkpoint_by_id.get(instance.blocked_on)
        wait = cp.wait_message if cp is not None else None
    failures = open_failures(instance, compiled, ev)
    seqs_known = ev.compiled is compiled and ev.passes  # the evaluation found the cursors (not a bare one)
    skip = compiled.derived_ids
    return FormView(
        instance_id=instance.id,
        def_id=compiled.id,
        def_version=instance.def_version,
        name=compiled.name,
        status=read_status(compiled, instance),
        scope=scope,
        complete=complete_flag(compiled, ev, instance),
        conduct=compiled.conduct,
        blocked_on=instance.blocked_on,
        wait_message=wait,
        failures=failures,
        checks_failed=failed_checks(compiled, ev) if ev.failed_checks else [],
        failure_lines=[failure_text(compiled, f.hook_id, f.message, host=True) for f in failures],
        revisiting=ev.revisiting,
        closed_reason=instance.closed_reason or None,
        # A closed record on an older version takes no undo or redo (they would need a move to
        # the registered version first), so it offers none.
        undo=None if ev.as_written else move_target(instance, labels, -1, ev.cursor_seq if seqs_known else None, skip),
        redo=None if ev.as_written else move_target(instance, labels, +1, ev.redo_seq if seqs_known else None, skip),
        closed_on_version=instance.def_version if ev.as_written else None,
    )


def answers(compiled: CompiledForm, ev: Evaluation) -> dict[str, dict[str, Any]]:
    """The answers of an evaluation as JSON, in declaration order: ``{"values": live (parsed), "held": raw}``.

    One place for what "the values" of an instance are, shared by export, the history tool
    and the transcripts' end state.
    """
    return {
        "values": {f.id: to_jsonable(ev.values[f.id]) for f in compiled.fields if f.id in ev.values},
        "held": {f.id: ev.held[f.id] for f in compiled.fields if f.id in ev.held},
    }


def step_view(compiled: CompiledForm, ev: Evaluation, instance: Instance, step_id: str | None = None) -> FormView:
    """Tier 1: a step in full, by id or title; by default the open step, else the last step."""
    view = _header(compiled, ev, instance, "step")
    if step_id is not None:
        resolved = compiled.resolve_step(step_id)
        if resolved is None:
            return view
        k = compiled.step_by_id[resolved].index
    elif ev.open_step is not None:
        k = ev.open_step
    else:
        k = len(compiled.steps) - 1
    return _fill_step(compiled, ev, instance, view, k)


def _fill_step(compiled: CompiledForm, ev: Evaluation, instance: Instance, view: FormView, k: int) -> FormView:
    step = compiled.steps[k]
    view.step = StepBlock(step.id, step.title, step.number, len(compiled.steps), step.ask)
    view.fields = [_field_row(compiled, ev, instance, f.order, ev.open_step) for f in step.fields]
    return view


def field_view(compiled: CompiledForm, ev: Evaluation, instance: Instance, field_id: str) -> FormView:
    """Tier 2: one field (by id or label, forgivingly) with its step block; an unknown id gives the header only."""
    view = _header(compiled, ev, instance, "field")
    resolved = compiled.resolve_field(field_id)
    if resolved is None:
        return view
    field = compiled.field_by_id[resolved]
    step = compiled.steps[field.step_index]
    view.step = StepBlock(step.id, step.title, step.number, len(compiled.steps), step.ask)
    view.fields = [_field_row(compiled, ev, instance, field.order, ev.open_step)]
    return view


def outline_view(compiled: CompiledForm, ev: Evaluation, instance: Instance) -> FormView:
    """Tier 2: every step summarised and every field, in declaration order."""
    view = _header(compiled, ev, instance, "outline")
    summaries = []
    for step in compiled.steps:
        k = step.index
        required = filled = 0
        for f in step.fields:
            if f.required and ev.applicable[f.order]:
                required += 1
                if ev.status[f.order] == FILLED:
                    filled += 1
        summaries.append(
            StepSummary(
                step.id,
                step.title,
                step.number,
                len(compiled.steps),
                step.preview,
                required,
                filled,
                ev.step_complete[k],
                ev.step_open[k],
            )
        )
    view.steps = summaries
    view.fields = [_field_row(compiled, ev, instance, f.order, ev.open_step) for f in compiled.fields]
    return view


# --------------------------------------------------------------------------- fill results


@dataclass(frozen=True, slots=True)
class Rejected:
    """A value refused for one field: ``message`` is the plain sentence a person reads
    (:mod:`formctl.forms.messages`), ``hint`` says how to resend it when the sentence does not,
    ``code`` names the kind (``pattern``, ``too_long``, ``email``, …)."""

    field: str
    message: str
    hint: str | None = None
    code: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = {"field": self.field, "message": self.message}
        if self.hint:
            d["hint"] = self.hint
        if self.code:
            d["code"] = self.code
        return d


@dataclass(frozen=True, slots=True)
class Unknown:
    field: str
    did_you_mean: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"field": self.field}
        if self.did_you_mean:
            d["did_you_mean"] = list(self.did_you_mean)
        return d


@dataclass(slots=True)
class WriteReport:
    """What checking a write's values found before anything is committed: the ids it renamed,
    the unknown ones, the values refused or ignored, and a model's values held back for the
    person (:mod:`formctl.forms.provenance`). The result of the write reports all of it."""

    renamed: list[tuple[str, str]] = dc_field(default_factory=list)
    unknown: list[Unknown] = dc_field(default_factory=list)
    rejected: list[Rejected] = dc_field(default_factory=list)
    ignored: list[str] = dc_field(default_factory=list)
    unconfirmed: list[Any] = dc_field(default_factory=list)


@dataclass(slots=True)
class FillResult:
    """What a write did: the step view after it, and what was captured, held, renamed, unknown, rejected, ignored."""

    view: FormView
    captured: list[str] = dc_field(default_factory=list)
    held: list[str] = dc_field(default_factory=list)
    renamed: list[tuple[str, str]] = dc_field(default_factory=list)
    unknown: list[Unknown] = dc_field(default_factory=list)
    rejected: list[Rejected] = dc_field(default_factory=list)
    ignored: list[str] = dc_field(default_factory=list)
    failures: list[Failure] = dc_field(default_factory=list)
    # a model's values for source="person" fields the person's words do not hold: not stored
    # (formctl.forms.provenance.Unconfirmed); a front end asks the person about them
    unconfirmed: list[Any] = dc_field(default_factory=list)
    # undo, redo and retract: the field whose cursor moved and what it holds now (not in to_dict:
    # the model reads the view; a person's front end says "undid Staff ID → AB1234" from it).
    moved: FieldRow | None = None

    @property
    def instance_id(self) -> str:
        return self.view.instance_id

    def to_dict(self) -> dict[str, Any]:
        d = self.view.to_dict()
        if self.captured:
            d["captured"] = list(self.captured)
        if self.held:
            d["held"] = list(self.held)
            d["held_note"] = HELD_NOTE
        if self.renamed:
            d["renamed"] = [f"{sent} → {resolved}" for sent, resolved in self.renamed]
        if self.unknown:
            d["unknown_fields"] = [u.to_dict() for u in self.unknown]
            d["unknown_note"] = UNKNOWN_NOTE
        if self.rejected:
            d["rejected"] = [r.to_dict() for r in self.rejected]
        if self.ignored:
            d["ignored"] = list(self.ignored)
            d["ignored_note"] = IGNORED_NOTE
        if self.unconfirmed:
            d["not_stored"] = [u.to_dict() for u in self.unconfirmed]
            d["not_stored_note"] = NOT_STORED_NOTE
        return d


@dataclass(slots=True)
class MigrateResult(FillResult):
    """What ``runner.migrate`` did: the versions it moved between, and the answers it could not keep.

    ``rejected`` holds the carried values the new version refuses (withdrawn, so it asks again),
    ``dropped`` the answers to fields the new version does not have (or its ``migrate`` left out),
    by field id, with the value they held: their logs stay stored and ``history`` still shows them.
    """

    from_version: int = 0
    to_version: int = 0
    dropped: dict[str, Any] = dc_field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = FillResult.to_dict(self)
        d["migrated"] = {"from": self.from_version, "to": self.to_version}
        if self.dropped:
            d["dropped"] = dict(self.dropped)
        return d


@dataclass(slots=True)
class RecoverResult(FillResult):
    """What ``runner.recover`` did: the idempotency keys of the executors it ran again."""

    rerun: list[str] = dc_field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d = FillResult.to_dict(self)
        if self.rerun:
            d["rerun"] = list(self.rerun)
        return d


# --------------------------------------------------------------------------- tier 0


def stale_line(def_id: str) -> str:
    return f"[form: {def_id}] stale — the definition changed since this was started; it can't be continued."


def step_line(tag: str, compiled: CompiledForm, ev: Evaluation, k: int, left_out: frozenset[str] = frozenset()) -> str:
    """The line of the open step ``k``: where the form is (back at it, on a revisit) and the
    labels still pending there (but the fields in ``left_out``). The person's status bar and tier 0
    say it alike."""
    steps = compiled.steps
    step = steps[k]
    pending = [
        f.label
        for f in step.fields
        if ev.applicable[f.order] and ev.status[f.order] != FILLED and f.derive is None and f.id not in left_out
    ]
    if ev.revisiting:
        head = f'{tag} back at step {step.number}/{len(steps)} "{step.title}" — go through it again'
    else:
        head = f'{tag} step {step.number}/{len(steps)} "{step.title}"'
    return f"{head} · pending: {', '.join(pending)}" if pending else head


def ready_line(compiled: CompiledForm, ev: Evaluation) -> str:
    """Tier 0 of a form under review whose answers are all in: what to offer, then how it is sent."""
    line = f"[form: {compiled.id}] ready to send"
    optional = [
        f.label for f in compiled.fields if not f.required and ev.applicable[f.order] and ev.status[f.order] != FILLED
    ]
    if optional:
        line += f" · optional, unanswered: {', '.join(optional)}"
    return line + "\nread every answer back; form_submit once the person confirms"


def tier0(compiled: CompiledForm, ev: Evaluation, instance: Instance) -> str:
    """The standing one-line state (docs/engine.md, "Tier 0"), without the conduct line (sent once, in the system prompt)."""
    tag = f"[form: {compiled.id}]"
    if read_status(compiled, instance) == STALE:
        return stale_line(compiled.id)
    if instance.status == AWAITING and instance.blocked_on:
        # Plain words, not the hook id (the model acts on none; a host's views add the id).
        line = f"{tag} awaiting {check_words(instance.blocked_on)}"
        cp = compiled.checkpoint_by_id.get(instance.blocked_on)
        if cp is not None and cp.wait_message:
            line += f" — {cp.wait_message}"
        return line
    if instance.status == ABANDONED:
        return ""
    if instance.status == COMPLETE and not ev.revisiting:
        return ""
    if instance.status == READY and not ev.revisiting:
        return ready_line(compiled, ev)
    lines = []
    steps = compiled.steps
    k = ev.open_step
    if k is not None:
        lines.append(step_line(tag, compiled, ev, k))
        later_from = k + 1
    else:
        lines.append(f"{tag} nothing pending")
        later_from = 0
    later = [
        f"{s.title} ({s.preview})" if s.preview else s.title
        for s in steps[later_from:]
        if not ev.step_complete[s.index]
    ]
    if later:
        lines.append("later: " + " · ".join(later))
    for failure in open_failures(instance, compiled, ev):
        lines.append(f"blocked: {failure_text(compiled, failure.hook_id, failure.message)}")
    for check in failed_checks(compiled, ev) if ev.failed_checks else ():
        # The model says the message and asks again for the answers the check reads.
        ask = f" · ask again: {', '.join(check.labels)}" if check.labels else ""
        lines.append(held_line(check) + ask)
    return "\n".join(lines)
