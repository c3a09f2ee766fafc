"""Failures: what a hook's failed run leaves standing, read from the dispatch log.

A failure is not stored as such: every run of a hook leaves a dispatch record, and whether a
failure still stands is decided from those records (docs/engine.md, "Commit then run") and,
for a checkpoint, from whether its condition still holds. The lifecycle asks these to decide
whether a form can complete or be sent; the views show them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from formctl.forms.compile import CompiledForm
from formctl.forms.evaluate import Evaluation
from formctl.forms.instance import DispatchState, Instance, failed_hook_ids
from formctl.forms.resolutions import decided_occurrence, is_resolution

__all__ = [
    "COULD_NOT_CHECK",
    "Failure",
    "blocking_failure_open",
    "check_failure_open",
    "check_words",
    "failure_text",
    "open_failures",
]


COULD_NOT_CHECK = "That couldn't be checked just now."
"""What the person and the model read when an executor raised (or broke its contract): never
the exception. What went wrong is kept for the host in the run's record (``detail``), shown by
``formctl history``, and logged to the ``formctl.executors`` logger (``--debug`` prints it
with the traceback)."""


@dataclass(frozen=True, slots=True)
class Failure:
    hook_id: str
    message: str
    at: str

    def to_dict(self) -> dict[str, Any]:
        return {"hook": self.hook_id, "message": self.message}


def open_failures(
    instance: Instance, compiled: CompiledForm | None = None, ev: Evaluation | None = None
) -> list[Failure]:
    """Failures still standing (docs/engine.md, 'Commit then run').

    A hook's failure stays open until a later run of the same hook succeeds, or the host
    resolves it (``resolve_checkpoint`` records an ``ok`` for the checkpoint). So for each
    hook the latest finished record decides; ``running`` records decide nothing.

    Given the evaluation, a checkpoint's failure also closes once its condition no longer
    holds: a claim over the cap that Finance rejected stops being "blocked" as soon as the
    total is brought under the cap, without anyone having to clear it by hand.
    """
    dispatches = instance.dispatches
    # Called on every write and read: most instances have no failure at all, and the instance
    # keeps that answer (Instance.runs), so no walk over its records is made then.
    failed = failed_hook_ids(instance)
    if not failed:
        return []
    latest: dict[str, tuple[DispatchState, str]] = {}
    for key, record in dispatches.items():  # in the order written: on a tie of ``at``, the later wins
        if record.hook_id not in failed or not record.ended:
            continue
        previous = latest.get(record.hook_id)
        if previous is None or record.at >= previous[0].at:
            latest[record.hook_id] = (record, key)
    out = [
        Failure(hook_id, rec.error, rec.at)
        for hook_id, (rec, key) in latest.items()
        if rec.failed and rec.error and not _outgrown(instance, hook_id, key)
    ]
    if compiled is not None and ev is not None:
        out = [f for f in out if _checkpoint_still_active(compiled, ev, f.hook_id)]
    out.sort(key=lambda f: f.at)
    return out


def check_words(checkpoint_id: str) -> str:
    """A checkpoint in a person's words: ``the "policy cap" check``. Checkpoints have no label,
    so their id is read as words; where a host must act on it, the caller adds the id."""
    return f'the "{checkpoint_id.replace("-", " ").replace("_", " ")}" check'


def failure_text(compiled: CompiledForm, hook_id: str, message: str, *, host: bool = False) -> str:
    """A standing failure in plain words: what it is about (a field's label, a step's title, a
    check's name), then its message. ``host``: a check's id follows in brackets, as a host
    names it to act (``formctl resolve ID --checkpoint policy-cap``)."""
    kind, _, name = hook_id.partition(":")
    if kind == "field" and name in compiled.field_by_id:
        about = compiled.field_by_id[name].label
    elif kind == "step" and name in compiled.step_by_id:
        about = compiled.step_by_id[name].title
    elif kind == "checkpoint":
        about = check_words(name) + (f" [{name}]" if host else "")
    else:
        about = "a check"
    if message == COULD_NOT_CHECK:
        return f"{about[:1].upper()}{about[1:]} couldn't be checked just now"
    return f"{about[:1].upper()}{about[1:]}: {message}"


def _outgrown(instance: Instance, hook_id: str, key: str) -> bool:
    """A host's rejection of an occurrence the checkpoint has since outgrown (it fired again
    after a bound value changed): it no longer stands; the new occurrence waits for its own."""
    if not is_resolution(key):
        return False
    decided = decided_occurrence(key, hook_id.partition(":")[2])
    return decided is not None and decided < instance.occurrences.get(hook_id, 0)


def _checkpoint_still_active(compiled: CompiledForm, ev: Evaluation, hook_id: str) -> bool:
    if not hook_id.startswith("checkpoint:"):
        return True
    checkpoint = compiled.checkpoint_by_id.get(hook_id[len("checkpoint:") :])
    return checkpoint is None or ev.checkpoint_active[checkpoint.index]


def blocking_failure_open(compiled: CompiledForm, ev: Evaluation, instance: Instance) -> bool:
    """A blocking checkpoint that was rejected, and whose condition still holds, keeps the form from completing."""
    for failure in open_failures(instance, compiled, ev):
        if failure.hook_id.startswith("checkpoint:"):
            checkpoint = compiled.checkpoint_by_id.get(failure.hook_id[len("checkpoint:") :])
            if checkpoint is not None and checkpoint.blocking:
                return True
    return False


def check_failure_open(compiled: CompiledForm, ev: Evaluation, instance: Instance) -> bool:
    """A field, step or checkpoint hook has an open failure: a form under review is not ready to send."""
    return any(f.hook_id != "form" for f in open_failures(instance, compiled, ev))
