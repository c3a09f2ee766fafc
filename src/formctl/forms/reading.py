"""The read side of an instance: staleness, the status a reader sees, summaries and the read-only view.

Reads never write (docs/engine.md, "Reads and writes"). So "stale" is not a stored fact
but a comparison made on every read: the instance pins the version of the form it was
started on, and the registry says which version is registered now. The one function
:func:`is_stale` decides it, and every view, tier 0, the instance listing and the chat
ask it; nothing stores the answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from formctl.forms.instance import ABANDONED, ACTIVE, STALE, Instance

if TYPE_CHECKING:  # pragma: no cover
    from formctl.forms.compile import CompiledForm
    from formctl.forms.evaluate import Evaluation


class DefaultInstance:
    """The instance a runner's calls without an ``instance_id`` act on: one conversation's.

    Mutable on purpose: the chat's runners share one, and the model's ``form_start`` moves it
    to the new instance. ``None`` means nothing has been started in this conversation yet.
    """

    __slots__ = ("instance_id",)

    def __init__(self, instance_id: str | None = None) -> None:
        self.instance_id = instance_id

    def __repr__(self) -> str:
        return f"DefaultInstance({self.instance_id!r})"


def drifted(compiled: CompiledForm, instance: Instance) -> bool:
    """The instance was started on another version of its form than the registered one (a downgrade counts)."""
    return instance.def_version != compiled.version


def is_stale(compiled: CompiledForm, instance: Instance) -> bool:
    """Stale: started on another version of the form, which has no ``migrate`` to carry it forward.

    ``compiled`` must be the *registered* form. A stale instance can be read (``runner.view``),
    abandoned or moved explicitly (``runner.migrate``), but not continued. An abandoned one is
    never stale: it is closed whatever the registry says. A drift the form can migrate is not
    stale either: the next write (or ``runner.migrate``) carries the answers forward.
    """
    if instance.status == ABANDONED:
        return False
    return drifted(compiled, instance) and compiled.migrate is None


def read_status(compiled: CompiledForm, instance: Instance) -> str:
    """The status a reader sees: the stored one, or ``stale`` when :func:`is_stale` says so.

    Older stores may hold a committed ``stale``; once the instance no longer is, it reads ``active``.
    (The rule of :func:`is_stale`, spelled out: every view and tier 0 ask this, so it stays cheap.)
    """
    status = instance.status
    if status == ABANDONED:
        return status
    if instance.def_version != compiled.version and compiled.migrate is None:
        return STALE
    return ACTIVE if status == STALE else status


@dataclass(frozen=True, slots=True)
class InstanceSummary:
    """One row of an instance listing, with the status computed on read."""

    instance_id: str
    form: str
    subject: str
    status: str
    answered: int
    updated_at: str
    closed_reason: str | None = None

    def to_dict(self, *, subject: bool = True) -> dict[str, Any]:
        """The row as JSON; ``subject=False`` leaves the subject out (a listing of one subject's forms)."""
        d: dict[str, Any] = {"instance_id": self.instance_id, "form": self.form}
        if subject:
            d["subject"] = self.subject
        d.update(status=self.status, answered=self.answered, updated_at=self.updated_at)
        if self.closed_reason:
            d["closed_reason"] = self.closed_reason
        return d


def summarise(instance: Instance, status: str) -> InstanceSummary:
    """The listing row of one stored instance, given the status a reader sees."""
    return InstanceSummary(
        instance.id,
        instance.def_id,
        instance.subject,
        status,
        len(instance.entries),
        instance.updated_at,
        instance.closed_reason or None,
    )


@dataclass(frozen=True, slots=True)
class InstanceView:
    """A read-only view of one instance: the registered form, the stored instance and its evaluation.

    ``status`` is what a reader sees (``stale`` included), ``stale`` whether it can be continued,
    ``complete`` what every view says of it. Nothing here can write: hand it to code that must
    only read (a model, a renderer).
    """

    compiled: CompiledForm
    instance: Instance
    evaluation: Evaluation
    status: str
    stale: bool
    complete: bool

    @property
    def instance_id(self) -> str:
        return self.instance.id
