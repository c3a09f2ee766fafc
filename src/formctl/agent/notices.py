"""Telling the model that the form changed under the conversation, in words it repeats.

A bare answer is only ever taken for the question shown last. When something other than the
person's own answer changes the form (their ``/undo`` or ``/redo``, a host writing from another
terminal, another chat on the same instance, a resume after any of these), the question on the
screen may no longer be the open one. The chat then sends a *notice* instead of waiting for the
person: a user turn that is not the person's words, which says what changed, so the model says
it back and asks the question that is open now before it takes another bare answer.

What the person was last shown is kept as a :func:`snapshot` (the instance's version, status
and a digest of each answer in force: no value is kept twice); :func:`describe_changes` compares
the stored instance with it. Both are pure.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from formctl.forms.evaluate import FILLED
from formctl.forms.lifecycle import Status
from formctl.json_types import FieldValue, JsonObject

if TYPE_CHECKING:
    from formctl.forms.compile import CompiledForm
    from formctl.forms.evaluate import Evaluation
    from formctl.forms.instance import Instance

__all__ = ["NOTICE_PREFIX", "Notice", "describe_changes", "notice_message", "read_notice", "shown_value", "snapshot"]

NOTICE_PREFIX = "[form changed; not the person's words: say this in a few words, then ask the question open now] "
WORDS_PREFIX = "[then the person wrote, before seeing the change; take it only for the question it answered] "


@dataclass(frozen=True, slots=True)
class Notice:
    what: str  # what changed, in the form's words
    words: str | None = None  # the person's line that crossed the change, if any


def notice_message(what: str, words: str | None = None) -> str:
    """The user turn that tells the model ``what`` changed (and the person's line that crossed it)."""
    return NOTICE_PREFIX + what + (f"\n{WORDS_PREFIX}{words}" if words else "")


def read_notice(text: str | None) -> Notice | None:
    """The notice in ``text``, or None for the person's own words."""
    if text is None or not text.startswith(NOTICE_PREFIX):
        return None
    what, _, words = text[len(NOTICE_PREFIX) :].partition("\n" + WORDS_PREFIX)
    return Notice(what.strip(), words.strip() or None)


def _digest(value: FieldValue) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=True, default=str)
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:16]


def snapshot(compiled: CompiledForm, evaluation: Evaluation, instance: Instance) -> JsonObject:
    """What the person sees of the instance now: its version, status and each live answer's digest."""
    from formctl.forms.validate import to_jsonable

    answers = {
        f.id: _digest(to_jsonable(evaluation.values[f.id]))
        for f in compiled.fields
        if evaluation.applicable[f.order] and evaluation.status[f.order] == FILLED and f.id in evaluation.values
    }
    return {
        "instance": instance.id,
        "version": instance.version,
        "status": instance.status,
        "blocked_on": instance.blocked_on,
        "answers": answers,
    }


def describe_changes(
    compiled: CompiledForm, evaluation: Evaluation, instance: Instance, before: JsonObject
) -> list[str]:
    """What changed since ``before`` (a :func:`snapshot`), as short sentences in the form's words.

    Empty when nothing the person would see changed (only the version moved: an executor's
    record, a value rewritten with itself).
    """
    from formctl.forms.validate import to_jsonable

    now = snapshot(compiled, evaluation, instance)
    old, new = before.get("answers") or {}, now["answers"]
    out: list[str] = []
    for field in compiled.fields:
        was, is_ = old.get(field.id), new.get(field.id)
        if was == is_:
            continue
        if is_ is None:
            out.append(f"{field.label} is empty again")
        elif field.sensitive:
            out.append(f"{field.label} has a new answer (hidden)")
        else:
            out.append(f"{field.label} is now {shown_value(to_jsonable(evaluation.values[field.id]))}")
    if before.get("status") != now["status"]:
        if before.get("status") == Status.AWAITING and before.get("blocked_on"):
            out.append(f'the "{before["blocked_on"]}" check was resolved')
        out.append(_status_sentence(now["status"], instance))
    return out


def shown_value(value: FieldValue) -> str:
    """A JSON value as a person reads it: yes/no, 900 not 900.0, text as it is."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def _status_sentence(status: str, instance: Instance) -> str:
    if status == Status.AWAITING:
        return (
            f'the form is now waiting on the "{instance.blocked_on}" check'
            if instance.blocked_on
            else ("the form is now waiting on a check")
        )
    if status == Status.ABANDONED:
        reason = f" ({instance.closed_reason})" if instance.closed_reason else ""
        return f"the form was closed{reason}"
    if status == Status.COMPLETE:
        return "the form is complete"
    if status == Status.READY:
        return "the form is ready to send"
    return "the form is open again"
