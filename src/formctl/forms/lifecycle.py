"""An instance's lifecycle: its statuses, the moves between them, and the questions asked of them.

One home for every rule of the form "is this instance still open?" (docs/engine.md,
"Completion and closing"). Callers ask the named predicates here instead of comparing status
words, so a new status (or a changed rule) is one edit:

- the **stored** statuses are :class:`Status` (``active``, ``ready``, ``awaiting``,
  ``complete``, ``abandoned``; ``stale`` only in stores older formctl versions wrote);
- the **status as read** (:func:`read_status`) adds ``stale``, computed on every read from the
  registered form and never stored (:func:`is_stale`);
- the **transitions** are the only code that writes a status onto a commit: :func:`settle`
  decides the status a settled round lands in and :func:`move_to` writes it; :func:`complete`,
  :func:`close`, :func:`await_host`, :func:`reopen`, :func:`open_again` and :func:`clear_stale`
  are the named moves. Every writer (the commit cycle, staging, the runner, recovery) calls
  them; ``tests/architecture/test_status_transitions.py`` fails on a status set anywhere else.

Two senses of "open" are kept apart. :func:`is_open` asks a *status*: under way (active,
ready or awaiting). "The open form of a subject" is an *instance*: the subject's most recently
updated one that is not closed (:func:`is_closed`), complete and stale ones included, so a sent
form stays reachable for corrections; the store answers it (``find_latest_unclosed``).

Everything here is pure: no clock (the time of a transition is passed in), no store.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from formctl.errors import CheckFailedError, InstanceClosedError, NotReadyError
from formctl.forms.evaluate import FILLED
from formctl.forms.failures import blocking_failure_open, check_failure_open
from formctl.forms.instance import ABANDONED, ACTIVE, AWAITING, COMPLETE, READY, STALE, Commit, Instance, Status

if TYPE_CHECKING:  # pragma: no cover
    from formctl.forms.compile import CompiledForm
    from formctl.forms.evaluate import Evaluation

__all__ = [
    "Status",
    "await_host",
    "check_closable",
    "check_open_for_writes",
    "check_ready_to_send",
    "close",
    "clear_stale",
    "closed_message",
    "complete",
    "complete_flag",
    "drifted",
    "is_awaiting",
    "is_closed",
    "is_closed_record",
    "is_closed_status",
    "is_complete",
    "is_continuable",
    "is_ended",
    "is_in_progress",
    "is_open",
    "is_open_status",
    "is_ready",
    "is_stale",
    "move_to",
    "open_again",
    "read_status",
    "reopen",
    "settle",
]


class _HasStatus(Protocol):
    @property
    def status(self) -> str: ...


# Sets, not tuples: asked on every listing row and every tool call.
_OPEN = frozenset({ACTIVE, READY, AWAITING})
_CONTINUABLE = _OPEN | {STALE}
_IN_PROGRESS = frozenset({ACTIVE, AWAITING})
_ENDED = frozenset({COMPLETE, ABANDONED})


# --------------------------------------------------------------------------- predicates


def is_closed(instance: _HasStatus) -> bool:
    """Closed for good: abandoned by someone, or terminated by a hook. Nothing more may be written;
    every answer is kept and can be read and exported."""
    return instance.status == ABANDONED


def is_open(instance: _HasStatus) -> bool:
    """Under way (by its stored status): taking answers, waiting for the person to send it
    (``ready``) or for the host (``awaiting``). Neither complete nor closed. A model may not start
    the same form again beside an open one."""
    return instance.status in _OPEN


def is_open_status(status: str) -> bool:
    """:func:`is_open` for a status word already read (an index row, a listing's ``status``)."""
    return status in _OPEN


def is_closed_status(status: str) -> bool:
    """:func:`is_closed` for a status word already read (an index row)."""
    return status == ABANDONED


def is_awaiting(instance: _HasStatus) -> bool:
    """Held at a checkpoint until a host decides (``blocked_on`` names it): the person's answers
    wait, and what a chat or an eval does next is the host's resolve."""
    return instance.status == AWAITING


def is_in_progress(instance: _HasStatus) -> bool:
    """Open and still gathering answers: ``active``, or ``awaiting`` a host part-way through.
    Not ``ready``: there every answer is in and only the person's send is left."""
    return instance.status in _IN_PROGRESS


def is_ended(instance: _HasStatus) -> bool:
    """Nothing more happens to it in a conversation: sent (``complete``) or closed (``abandoned``).
    A run that drives a form (an eval, a scripted person) stops here; it goes on while the form
    is open, ``ready`` included, since sending is still the person's to do."""
    return instance.status in _ENDED


def is_complete(instance: _HasStatus) -> bool:
    """Sent and done (stored ``complete``): a closed record, kept under the version it closed on."""
    return instance.status == COMPLETE


def is_ready(instance: _HasStatus) -> bool:
    """Open, every answer in, and waiting for the person to send it (a form under review)."""
    return instance.status == READY


def is_continuable(instance: _HasStatus) -> bool:
    """A conversation about the form carries on with it rather than starting a new one: open, or
    stored as ``stale`` by an older formctl (the chat then says why it cannot be continued as is).
    A complete or closed instance is not continued; a resume names it explicitly."""
    return instance.status in _CONTINUABLE


def drifted(compiled: CompiledForm, instance: Instance) -> bool:
    """The instance was started on another version of its form than the registered one (a downgrade counts)."""
    return instance.def_version != compiled.version


def is_closed_record(compiled: CompiledForm, instance: Instance) -> bool:
    """Complete or abandoned on another version of its form than the registered one: read as it
    was when it closed, never judged by the newer definition (docs/engine.md, "Closed records";
    :func:`formctl.forms.evaluate.evaluate` ``as_written``)."""
    return is_ended(instance) and drifted(compiled, instance)


def is_stale(compiled: CompiledForm, instance: Instance) -> bool:
    """Stale: started on another version of the form, which has no ``migrate`` to carry it forward.

    ``compiled`` must be the *registered* form. A stale instance can be read (``runner.view``),
    abandoned or moved explicitly (``runner.migrate``), but not continued. A complete or
    abandoned one is never stale: it is a closed record, kept under the version it closed on,
    whatever the registry says (docs/engine.md, "Drift"). A drift the form can migrate is not
    stale either: the next write (or ``runner.migrate``) carries the answers forward.
    """
    if instance.status in (ABANDONED, COMPLETE):
        return False
    return instance.def_version != compiled.version and compiled.migrate is None


def read_status(compiled: CompiledForm, instance: Instance) -> str:
    """The status a reader sees: the stored one, or ``stale`` when :func:`is_stale` says so.

    Older stores may hold a committed ``stale``; once the instance no longer is, it reads ``active``.
    (The rule of :func:`is_stale`, spelled out: every view and tier 0 ask this, so it stays cheap.)
    """
    status = instance.status
    if status in (ABANDONED, COMPLETE):
        return status
    if instance.def_version != compiled.version and compiled.migrate is None:
        return STALE
    return ACTIVE if status == STALE else status


def complete_flag(compiled: CompiledForm, ev: Evaluation, instance: Instance) -> bool:
    """The ``complete`` every view (and export) shows."""
    # A terminated (abandoned) instance never reads complete: it was closed, not finished.
    if instance.status == ABANDONED:
        return False
    # A form under review is complete only once it is sent (docs/engine.md, "Review before sending").
    if compiled.review:
        return instance.status == COMPLETE
    # A rejected blocking checkpoint whose condition still holds keeps the form from
    # reading complete, as it keeps the status from becoming complete (:func:`settle`).
    if instance.status == COMPLETE:
        return True
    return ev.complete and not blocking_failure_open(compiled, ev, instance)


# --------------------------------------------------------------------------- transitions


def settle(
    compiled: CompiledForm, ev: Evaluation, instance: Instance, forced: bool, *, sent: bool | None = None
) -> Status:
    """The status a settled (not awaiting) instance should have: complete, ready or active.

    A form declared with ``review=True`` whose answers are all in is ``ready`` until it is
    sent (docs/engine.md, "Review before sending"); once sent it stays ``complete`` until a
    change to its answers, which the caller says with ``sent=False``. By default it counts
    as sent while its stored status is ``complete``.
    """
    # A failing check holds even a forced completion: what is sent obeys the form's rules.
    if not (ev.complete or forced) or ev.failed_checks or blocking_failure_open(compiled, ev, instance):
        return ACTIVE
    if not compiled.review:
        return COMPLETE
    if instance.status == COMPLETE if sent is None else sent:
        return COMPLETE
    if check_failure_open(compiled, ev, instance):
        return ACTIVE
    return READY


def move_to(
    commit: Commit, status: Status | str, now: str | Callable[[], str], *, completed_at: str | None = None
) -> None:
    """Write on ``commit`` the status :func:`settle` decided: into complete by :func:`complete`
    (stamped ``now`` unless ``completed_at`` keeps an earlier stamp), else the status itself.
    ``now`` may be a clock, read only when the move completes the form."""
    if status == COMPLETE:
        complete(commit, now if isinstance(now, str) else now(), completed_at=completed_at)
    else:
        commit.status = Status(status)


def await_host(commit: Commit, checkpoint_id: str, instance: Instance | None = None) -> None:
    """Hold on ``commit`` at a blocking checkpoint until a host resolves it: ``awaiting``, with
    ``blocked_on`` naming it. Given ``instance`` (as stored), only what changes is written."""
    if instance is None or instance.blocked_on != checkpoint_id:
        commit.blocked_on = checkpoint_id
    if instance is None or instance.status != AWAITING:
        commit.status = AWAITING


def open_again(commit: Commit) -> None:
    """Open a closed instance on ``commit`` at ``active``, its closing reason cleared, in a commit
    whose round then settles it from its answers (a write that takes back an ending)."""
    commit.status = ACTIVE
    commit.closed_reason = None


def clear_stale(commit: Commit) -> None:
    """A ``stale`` status an older formctl committed becomes ``active`` on ``commit`` (a migration
    carries the instance forward); the round then settles it."""
    commit.status = ACTIVE


def reopen(commit: Commit, compiled: CompiledForm, ev: Evaluation, instance: Instance, now: str) -> Status:
    """A host's reopen on ``commit`` (docs/engine.md, "Host acts"); the status it lands in.

    An abandoned instance opens at the status its answers give (active, ready or complete, a
    completion stamped ``now`` unless it had a stamp), its closing reason cleared; a complete one
    whose answers no longer complete it goes back to active. A forced completion is undone.
    """
    commit.forced_complete = False
    status = Status(instance.status)
    if status == ABANDONED:
        status = settle(compiled, ev, instance, False)
        commit.closed_reason = None
        if status == COMPLETE:
            complete(commit, now, completed_at=instance.completed_at)
            return status
    elif status == COMPLETE and not ev.complete:
        status = ACTIVE
    commit.status = status
    return status


def complete(commit: Commit, now: str, *, completed_at: str | None = None) -> None:
    """Move into ``complete`` on ``commit``, stamped ``now``. ``completed_at``: the instance's
    stamp from an earlier completion, which a settling round keeps (a write that completes the
    form again, or a submit, passes none and restamps)."""
    commit.status = COMPLETE
    if not completed_at:
        commit.completed_at = now


def close(commit: Commit, reason: str) -> None:
    """Close on ``commit`` (abandoned, with the reason): no wait holds a closed instance."""
    commit.status = ABANDONED
    commit.closed_reason = reason
    commit.blocked_on = None


def closed_message(instance: Instance) -> str:
    return f'Form instance "{instance.id}" was abandoned and no longer accepts answers.'


def check_open_for_writes(instance: Instance) -> None:
    """Refuse any write to a closed instance (:class:`InstanceClosedError`)."""
    if instance.status == ABANDONED:
        raise InstanceClosedError(closed_message(instance))


def check_closable(compiled: CompiledForm, instance: Instance) -> None:
    """Closing is final (docs/engine.md, "Completion and closing"): a closed or complete
    instance cannot be abandoned, and the reason it was closed with stays. A stale one reads
    stale, not complete, and abandoning is how it is closed."""
    if instance.status == ABANDONED:
        why = f" ({instance.closed_reason})" if instance.closed_reason else ""
        raise InstanceClosedError(f'Form instance "{instance.id}" is already abandoned{why}.')
    if instance.status == COMPLETE and not is_stale(compiled, instance):
        raise InstanceClosedError(f'Form instance "{instance.id}" is complete; a complete form cannot be abandoned.')


def check_ready_to_send(compiled: CompiledForm, instance: Instance, ev: Evaluation) -> None:
    """Refuse a submit that cannot send: no review, already sent, or not ready (and why)."""
    if not compiled.review:
        raise NotReadyError(
            f'Form "{compiled.id}" has no review: it completes on its last required answer, with nothing to send.'
        )
    if instance.status == COMPLETE:
        raise NotReadyError(f'Form instance "{instance.id}" was already sent; a change to it would need sending again.')
    if ev.failed_checks:
        # The check's own sentence, so the person reads what to correct (docs/engine.md, "Checks").
        raise CheckFailedError("Not ready to send: " + " ".join(ev.check_message(c) for c in ev.failed_checks))
    if instance.status == READY and settle(compiled, ev, instance, instance.forced_complete) == READY:
        return
    missing = [
        f.label for f in compiled.fields if f.required and ev.applicable[f.order] and ev.status[f.order] != FILLED
    ]
    if missing:
        raise NotReadyError(f"Not ready to send: still needed: {', '.join(missing)}.")
    raise NotReadyError("Not ready to send: a check has not passed; see failures.")
