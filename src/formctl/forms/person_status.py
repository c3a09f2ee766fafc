"""The status line a person reads (the chat's status bar and its line after each turn).

Tier 0 (:func:`formctl.forms.project.tier0`) is the model's line: hook ids, and what the model
should do next ("read every answer back; form_submit once the person confirms"). The person
sees the same state in labels and plain words, without the model's instructions
(docs/engine.md, "The person's status line"). Pure, like tier 0; :func:`status_for` reads an
instance through a runner.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from formctl.forms.compile import CompiledForm
from formctl.forms.evaluate import FILLED, Evaluation
from formctl.forms.failures import failure_text, open_failures
from formctl.forms.instance import COMPLETE, READY, Instance
from formctl.forms.lifecycle import is_awaiting, is_closed
from formctl.forms.project import failed_checks, held_line, step_line

__all__ = ["Asking", "failure_text", "status_for", "status_lines"]


@dataclass(frozen=True)
class Asking:
    """What the chat's model last asked, when it can say (the guided model asks an optional
    question left behind after the engine has moved on): the person's open-step line is then
    the step of that question, without the optional fields the person chose to leave out."""

    field: str | None  # the field id the model's last reply asked about
    left_out: frozenset[str] = frozenset()


def status_lines(
    compiled: CompiledForm, ev: Evaluation, instance: Instance, *, stale: bool = False, asking: Asking | None = None
) -> list[str]:
    """The person's status, as lines; ``[]`` for a form with nothing to say (complete, closed)."""
    tag = f"[form: {compiled.id}]"
    if stale:
        return [f"{tag} can't be continued: the form changed since it was started"]
    if is_awaiting(instance) and instance.blocked_on:
        # The checkpoint's id, as a host names it to resolve it (formctl resolve).
        line = f'{tag} awaiting "{instance.blocked_on}"'
        checkpoint = compiled.checkpoint_by_id.get(instance.blocked_on)
        if checkpoint is not None and checkpoint.wait_message:
            line += f" — {checkpoint.wait_message}"
        return [line]
    if is_closed(instance) or (instance.status == COMPLETE and not ev.revisiting):
        return []
    held = [f"held: {failure_text(compiled, f.hook_id, f.message)}" for f in open_failures(instance, compiled, ev)]
    checks = failed_checks(compiled, ev) if ev.failed_checks else []
    if checks:
        # Said first: the answers are all in, and this is what keeps the form from being sent.
        return [f"{tag} {held_line(checks[0])}", *_where(compiled, ev, tag), *held, *map(held_line, checks[1:])]
    k = ev.open_step
    if instance.status == READY and not ev.revisiting and not held:
        line = f"{tag} ready to send"
        optional = [
            f.label
            for f in compiled.fields
            if not f.required and ev.applicable[f.order] and ev.status[f.order] != FILLED
        ]
        return [line + (f" · optional, unanswered: {', '.join(optional)}" if optional else "")]
    if k is None:
        return [f"{tag} on hold until an answer changes" if held else f"{tag} nothing to answer now", *held]
    return [*_where(compiled, ev, tag, asking), *held]


def _where(compiled: CompiledForm, ev: Evaluation, tag: str, asking: Asking | None = None) -> list[str]:
    """The open step's line (or the step of the question asked) and the steps still to come
    (none when no step is open)."""
    k = ev.open_step
    if k is None:
        return []
    lines = [_step_asked(tag, compiled, ev, k, asking)]
    later = [
        f"{s.title} ({s.preview})" if s.preview else s.title
        for s in compiled.steps[k + 1 :]
        if not ev.step_complete[s.index]
    ]
    if later:
        lines.append("later: " + " · ".join(later))
    return lines


def _step_asked(tag: str, compiled: CompiledForm, ev: Evaluation, k: int, asking: Asking | None) -> str:
    """The line of step ``k``, or of the step of the question asked (not on a revisit)."""
    if asking is None:
        return step_line(tag, compiled, ev, k)
    field = compiled.field_by_id.get(asking.field) if asking.field else None
    if field is not None and field.step_index != k and not ev.revisiting:
        k = field.step_index
    return step_line(tag, compiled, ev, k, asking.left_out)


def status_for(runner: Any, instance_id: str | None, asking: Asking | None = None) -> str:
    """The person's status of an instance (by id, else the runner's open one), as text; "" when
    there is none or it cannot be read."""
    try:
        view = runner.view(instance_id)
    except Exception:
        return ""
    return "\n".join(status_lines(view.compiled, view.evaluation, view.instance, stale=view.stale, asking=asking))
