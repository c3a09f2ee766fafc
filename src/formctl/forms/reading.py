"""The read side of an instance: staleness, the status a reader sees, summaries and the read-only view.

Reads never write (docs/engine.md, "Reads and writes"). So "stale" is not a stored fact
but a comparison made on every read: the instance pins the version of the form it was
started on, and the registry says which version is registered now. The one function
:func:`formctl.forms.lifecycle.is_stale` decides it, and every view, tier 0, the instance
listing and the chat ask it; nothing stores the answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import TYPE_CHECKING, Any

from formctl.forms.instance import Instance

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


Stamp = tuple[str, int, str]
"""What changes whenever anyone commits to an instance: (id, version, updated_at). A dispatch
record, written outside compare-and-set, moves only ``updated_at``."""


def stamp_of(instance: Instance) -> Stamp:
    return (instance.id, instance.version, instance.updated_at)


@dataclass(frozen=True, slots=True)
class Continuation:
    """Which instance a conversation about a form carries on with (``runner.continuation``).

    ``instance_id`` is the instance to continue, or None to start a new one. ``stale``: the one
    to continue was started on another version of the form, which has no ``migrate``; it can be
    read, migrated or abandoned, not continued as is. ``complete_id``: a new one starts because
    the subject's most recent instance of the form is complete. ``note`` says either to the person.
    """

    form_id: str
    instance_id: str | None
    stale: bool = False
    complete_id: str | None = None

    @property
    def starts_new(self) -> bool:
        return self.instance_id is None

    @property
    def note(self) -> str | None:
        if self.stale:
            return (
                f"{self.instance_id} was started on an older version of {self.form_id} and can't be continued. "
                f"Move it with formctl migrate {self.instance_id}, or close it with /abandon REASON (its answers "
                f"are kept; the next formctl run {self.form_id} starts afresh)."
            )
        if self.complete_id is not None:
            return (
                f"Your last {self.form_id} ({self.complete_id}) is complete, so this is a new one; "
                f"to change that one: formctl resume {self.complete_id}"
            )
        return None


@dataclass(frozen=True, slots=True)
class Listing:
    """Which instances a listing takes (``find_instances``, ``runner.instances``): those matching
    every filter given (None: any), most recently updated first, at most ``limit`` of them."""

    subject: str | None = None
    def_id: str | None = None
    status: str | None = None
    limit: int | None = None

    def admits(self, instance: Instance) -> bool:
        """The instance matches every filter given (the limit aside)."""
        return (
            (self.subject is None or instance.subject == self.subject)
            and (self.def_id is None or instance.def_id == self.def_id)
            and (self.status is None or instance.status == self.status)
        )


@dataclass
class Scope:
    """Which instances a read across the store takes (``formctl stats``, ``export``): one form's,
    optionally of one status, created at or after ``since`` (an ISO date or time: compared as
    text with ``created_at``, which is ISO too). ``damaged`` collects the errors of instances left
    out because they cannot be read."""

    def_id: str
    status: str | None = None
    since: str | None = None
    damaged: list[Any] = dc_field(default_factory=list)

    def admits_row(self, def_id: str, status: str, created_at: str) -> bool:
        return (
            def_id == self.def_id
            and (self.status is None or status == self.status)
            and (self.since is None or created_at >= self.since)
        )

    def admits(self, instance: Instance) -> bool:
        return self.admits_row(instance.def_id, instance.status, instance.created_at)
