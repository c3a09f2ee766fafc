"""Many records out at once (``formctl export --form F``): one row per instance, streamed.

Each instance is read against the registered form as ``formctl export ID`` reads it (live
values, held ones apart: :func:`formctl.forms.project.answers`), one at a time, so an export of
a large store never holds it in memory (:func:`formctl.forms.across.stream`). A sensitive field's value is replaced
by :data:`MASK` unless the caller asks for it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from formctl.errors import FormError
from formctl.forms.lifecycle import read_status

if TYPE_CHECKING:
    from formctl.forms.compile import CompiledForm
    from formctl.forms.instance import Instance

__all__ = ["MASK", "META", "ExportRow", "columns", "export_rows"]

MASK = "[hidden]"
META = ("instance_id", "subject", "status", "created_at", "updated_at", "completed_at")
"""The columns before the fields', in this order."""


@dataclass(frozen=True)
class ExportRow:
    """One instance as exported: its meta columns, and its live and held values by field."""

    meta: dict[str, Any]
    values: dict[str, Any]
    held: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {**self.meta, "values": self.values, "held": self.held}


def columns(compiled: CompiledForm) -> list[str]:
    """A CSV's header: the meta columns, a column per field, then ``held:FIELD`` per field."""
    return [*META, *(f.id for f in compiled.fields), *(f"held:{f.id}" for f in compiled.fields)]


def export_rows(
    compiled: CompiledForm, instances: Iterator[Instance], *, include_sensitive: bool = False
) -> Iterator[ExportRow]:
    """Each instance read against ``compiled`` (sensitive values masked unless asked for)."""
    from formctl.forms.evaluate import evaluate
    from formctl.forms.project import answers

    hidden = set() if include_sensitive else {f.id for f in compiled.fields if f.sensitive}
    for instance in instances:
        try:
            read = answers(compiled, evaluate(compiled, instance))
            values, held = read["values"], read["held"]
        except FormError:  # a gate that fails on these answers: what is in force, as stored
            values, held = instance.in_force_values(), {}
        meta = {
            "instance_id": instance.id,
            "subject": instance.subject,
            "status": read_status(compiled, instance),
            "created_at": instance.created_at,
            "updated_at": instance.updated_at,
            "completed_at": instance.completed_at,
        }
        yield ExportRow(meta, _masked(values, hidden), _masked(held, hidden))


def _masked(values: dict[str, Any], hidden: set[str]) -> dict[str, Any]:
    return {k: (MASK if k in hidden else v) for k, v in values.items()}
