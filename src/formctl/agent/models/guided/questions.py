"""Choosing the question: which field the person is answering now, and which one to ask next.

Functions of the model's state and the instance as stored; planning reads them to place a bare
answer, phrasing to ask. The rules (optional leftovers of earlier steps first, a field to ask
again first, a revisit in its own order) are in docs/guided.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from formctl.agent.models.guided.revisit import Revisit, revisit_of
from formctl.agent.models.guided.state import GuidedState, Snapshot
from formctl.forms.evaluate import EMPTY, INVALID
from formctl.forms.lifecycle import Status, is_closed

if TYPE_CHECKING:
    from formctl.forms.failures import Failure
    from formctl.forms.instance import Instance
    from formctl.forms.project import FormView


def revisit_now(state: GuidedState, snap: Snapshot) -> Revisit | None:
    """The revisit under way (a step the engine went back to), kept in the state; or None."""
    state.revisit = revisit_of(state.revisit, snap.compiled, snap.maybe_ev, snap.maybe_instance)
    return state.revisit


def asked_moved_on(state: GuidedState, snap: Snapshot) -> bool:
    """Did someone other than this model (the person's ``/undo`` at the keyboard, a host in
    another terminal) change the form since the last question, so that it is no longer next?"""
    if not state.asked_known or state.asked is None:
        return False
    changed = state.asked_at != (snap.instance.id, snap.instance.version)
    return changed and state.asked != next_question(state, snap)


def current_question(state: GuidedState, snap: Snapshot) -> str | None:
    """The field the person is answering: the one last asked if it is still open, else the next one."""
    if state.asked_known:
        if state.asked is not None and asked_moved_on(state, snap):
            return next_question(state, snap)
        if state.asked is not None and askable(snap, state.asked):
            return state.asked
        if state.asked is None:
            return None
    return next_question(state, snap)


def asks_nothing(instance: Instance) -> bool:
    """Nothing is asked of the person: the instance is closed, or waits for the host's decision."""
    return is_closed(instance) or instance.status == Status.AWAITING


def askable(snap: Snapshot, field_id: str) -> bool:
    field = snap.compiled.field_by_id.get(field_id)
    if field is None or field.source == "host" or asks_nothing(snap.instance):
        return False  # a host-only field is never asked in the conversation
    row = next((r for r in snap.view.fields if r.id == field_id), None)
    if row is not None and row.ask:
        return True
    status = snap.ev.status[field.order]
    return bool(snap.ev.applicable[field.order]) and status in (EMPTY, INVALID)


def next_question(state: GuidedState, snap: Snapshot) -> str | None:
    if asks_nothing(snap.instance) or snap.stale:
        return None
    revisit = revisit_now(state, snap)
    if revisit is not None:
        return revisit.next()  # every field of the step gone over, in order (revisit.py)
    if state.focus is not None:
        if askable(snap, state.focus) and state.focus not in state.skipped:
            return state.focus
        state.focus = None
    ev, compiled = snap.ev, snap.compiled
    if snap.instance.status == Status.READY and not ev.revisiting:
        # Every required answer is in: offer the optional questions not answered or
        # passed over, one at a time, before the read-back (docs/guided.md). A model
        # resumed at the read-back (it has not spoken yet, and the conversation's last
        # reply asked to send) cannot know which were offered: it reads back again, and
        # the read-back lists what was left out.
        if not state.asked_known and state.resumed_at_read_back:
            return None
        for field in compiled.fields:
            if (
                not field.required
                and field.id not in state.skipped
                and ev.applicable[field.order]
                and ev.status[field.order] in (EMPTY, INVALID)
            ):
                return str(field.id)
        return None
    open_k = ev.open_step
    if open_k is not None and not ev.complete and not ev.revisiting:
        for field in compiled.fields:
            if field.step_index >= open_k:
                break
            if (
                not field.required
                and field.id not in state.skipped
                and field.source != "host"
                and ev.applicable[field.order]
                and ev.status[field.order] in (EMPTY, INVALID)
                and ev.step_complete[field.step_index]
            ):
                return str(field.id)
    rows = [r for r in snap.view.fields if r.ask and r.id not in state.skipped]
    rows = [r for r in rows if compiled.field_by_id[r.id].source != "host"]
    # A question put off ("can we come back to that?") is asked once the others are answered.
    for row in sorted(rows, key=lambda r: r.id in state.deferred):
        return str(row.id)
    return None


def failed_step_check(view: FormView | None) -> Failure | None:
    """The open failure of a step's own check (the answers disagree), if any: the conversation
    is held on it, asking which answer should change, before it moves on."""
    if view is None:
        return None
    return next((f for f in view.failures if f.hook_id.startswith("step:")), None)
