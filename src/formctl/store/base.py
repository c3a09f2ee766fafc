"""What every store shares: provenance checks, new instances, ordering.

The contract a store keeps is :class:`formctl.forms.adapter.FormAdapter`, and the meaning
of a commit is :mod:`formctl.forms.commit`; both are re-exported here for the stores.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from formctl.errors import ConflictError, InvalidArgumentError, NotFoundError, ProvenanceError, StoreError
from formctl.forms.adapter import FormAdapter
from formctl.forms.commit import apply_commit, apply_dispatch, apply_entry_commit
from formctl.forms.instance import ACTIVE, FieldLog, Instance, Provenance, highest_seq, now_iso
from formctl.forms.reading import Listing

__all__ = [
    "ConflictError",
    "FormAdapter",
    "InstanceStore",
    "apply_commit",
    "apply_dispatch",
    "apply_entry_commit",
    "check_provenance",
    "check_text",
    "new_instance",
    "sort_recent_first",
]


def check_provenance(provenance: Any) -> Provenance:
    """Refuse a write that does not say who made it, from where, and when, or says it in text
    no store can hold (a NUL, a lone surrogate): every store refuses the same, before writing."""
    if not isinstance(provenance, Provenance):
        raise ProvenanceError()
    for value in (provenance.source, provenance.actor, provenance.timestamp):
        if not isinstance(value, str):
            raise ProvenanceError()
    note = provenance.note
    if not (_plain(provenance.source) and _plain(provenance.actor) and (note is None or _plain(note))):
        check_text(provenance.source, "The provenance's source")
        check_text(provenance.actor, "The provenance's actor")
        check_text(note, "The provenance's note")
    return provenance


def _plain(text: str) -> bool:
    """ASCII text without a NUL: what every store holds (every write's provenance is asked)."""
    return text.isascii() and "\x00" not in text


def check_text(value: Any, what: str) -> None:
    """Raise :class:`InvalidArgumentError` when ``value`` is a string no store can hold."""
    if not isinstance(value, str) or _plain(value):
        return  # settled without importing the validator
    from formctl.forms.validate import text_issue

    issue = text_issue(value)
    if issue is not None:
        raise InvalidArgumentError(f"{what} cannot be stored: {issue.message}")


def new_instance(
    def_id: str,
    def_version: int,
    subject: str,
    *,
    entries: dict[str, FieldLog] | None = None,
    status: str = ACTIVE,
    now: str,
) -> Instance:
    """A new instance as every adapter creates it: a generated id, version 1, created = updated = now,
    ``revision_seq`` the highest seq among the given entries."""
    from formctl.store.ids import new_instance_id

    check_text(subject, "The subject")
    check_text(def_id, "The form id")
    return Instance(
        id=new_instance_id(),
        def_id=def_id,
        def_version=def_version,
        subject=subject,
        status=status,
        entries=dict(entries or {}),
        revision_seq=highest_seq((entries or {}).values()),
        created_at=now,
        updated_at=now,
    )


def sort_recent_first(instances: list[Instance]) -> list[Instance]:
    """Most recently updated first; ties broken by id, descending (ids grow with creation time)."""
    return sorted(instances, key=lambda i: (i.updated_at, i.id), reverse=True)


def missing(instance_id: str) -> NotFoundError:
    return NotFoundError(f'No form instance "{instance_id}".')


class InstanceStore(ABC):
    """What every store does alike on two calls of :class:`~formctl.forms.adapter.FormAdapter`,
    written once: ``create_instance`` refuses a write that does not say who made it and builds
    the new instance (:func:`new_instance`), and ``find_instances`` takes its filters as one
    :class:`~formctl.forms.reading.Listing`. A store says how it keeps a new instance
    (:meth:`_insert`) and how it finds a listing (:meth:`_find`)."""

    def create_instance(
        self,
        def_id: str,
        def_version: int,
        subject: str,
        provenance: Provenance,
        *,
        entries: dict[str, FieldLog] | None = None,
        status: str = ACTIVE,
    ) -> Instance:
        """Assign an id; version 1; created_at = updated_at = now; revision_seq = highest seq given."""
        check_provenance(provenance)
        return self._insert(new_instance(def_id, def_version, subject, entries=entries, status=status, now=now_iso()))

    def find_instances(
        self,
        *,
        subject: str | None = None,
        def_id: str | None = None,
        status: str | None = None,
        limit: int | None = None,
        strict: bool = False,
        damaged: list[StoreError] | None = None,
    ) -> list[Instance]:
        """Instances matching every given filter, most recently updated first, ``limit`` applied
        last; ``strict`` and ``damaged`` as :meth:`FormAdapter.find_instances` says."""
        return self._find(Listing(subject, def_id, status, limit), strict=strict, damaged=damaged)

    @abstractmethod
    def _insert(self, instance: Instance) -> Instance:
        """Keep the new ``instance`` (a new id if its own is taken); a snapshot of what was kept."""

    @abstractmethod
    def _find(self, listing: Listing, *, strict: bool, damaged: list[StoreError] | None) -> list[Instance]:
        """The instances ``listing`` takes, most recently updated first."""
