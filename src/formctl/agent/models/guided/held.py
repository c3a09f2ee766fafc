"""What the guided interviewer says while one of the form's checks holds it (docs/engine.md,
"Checks"): the check's own sentence, then the answers it reads, asking which should change.

Kept apart from the reading and the questions (:mod:`.phrasing`, :mod:`.questions`): a check
is the engine's verdict on the answers as they are now, so the conversation is held on it
before anything else is asked, and the read-back (which offers to send) never comes while it
fails. Each check's sentence is said once per wording; the question is asked every turn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from formctl.agent.models.guided.answers import format_value, jsonable
from formctl.agent.models.guided.state import GuidedState, Snapshot
from formctl.forms.evaluate import FILLED

if TYPE_CHECKING:
    from formctl.forms.project import FormView


def held_by_check(view: FormView | None) -> bool:
    """A check of the form's fails on the answers as they are: the conversation is held on it."""
    return bool(view is not None and view.checks_failed)


def held_paragraphs(state: GuidedState, snap: Snapshot, *, repeat: bool = False) -> list[str]:
    """The first failing check's message (when not said already, or ``repeat``), and which of its
    answers should change; [] when no check fails."""
    if not held_by_check(snap.view):
        return []
    check = snap.view.checks_failed[0]
    out = []
    said = (f"check:{check.check}", check.message)
    if repeat or said not in state.shown_failures:
        out.append(check.message)
        state.shown_failures.add(said)
    compiled, ev = snap.compiled, snap.ev
    shown = []
    for field_id in check.fields:
        field = compiled.field_by_id[field_id]
        if ev.status[field.order] == FILLED and field_id in ev.values:
            value = "(hidden)" if field.sensitive else format_value(jsonable(ev.values[field_id]))
            shown.append(f"{field.label}: {value}")
    ask = 'Which answer should change? Tell me as "Label: value"'
    out.append(ask + (" — now " + "; ".join(shown) + "." if shown else "."))
    return out
