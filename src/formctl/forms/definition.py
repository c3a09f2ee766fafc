"""Form definitions as data: the declared form, steps, fields and checkpoints, and the effects
an executor may return.

A definition holds schemas, gate closures and executors. It is never serialised; only
instances are stored. The builder chain that makes one (``define_form(...)``) is in
:mod:`formctl.forms.builder`, and :mod:`formctl.forms.compile` turns one into a compiled form;
this module imports neither.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any

Gate = Callable[[Mapping[str, Any], Any], Any]
Executor = Callable[[Any], Any]
Test = Callable[[Mapping[str, Any]], Any]
"""A check's test (a pure function of the live values: true when they obey the rule) and a
derived field's function (the value, from the live values it reads)."""
Derive = Callable[[Mapping[str, Any]], Any]
Migrate = Callable[[dict[str, Any], int], dict[str, Any]]


# --------------------------------------------------------------------------- effects


class Effect:
    """Base of what an executor may return (alone, or several in a list)."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Patch(Effect):
    """Derived values, committed as ordinary writes in a further commit round."""

    values: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Fail(Effect):
    """A rejection: recorded as an open failure the agent sees until the hook next succeeds."""

    reason: str


@dataclass(frozen=True, slots=True)
class Jump(Effect):
    """Open this step (by id or title, forgivingly): forward to skip ahead, back to revisit."""

    step: str


@dataclass(frozen=True, slots=True)
class Complete(Effect):
    """Force the instance complete. Sticky until the host reopens it or a required answer turns invalid."""


@dataclass(frozen=True, slots=True)
class Terminate(Effect):
    """Stop collection: the instance is abandoned with this reason, and nothing later in the round runs."""

    reason: str


# --------------------------------------------------------------------------- definition data


@dataclass(slots=True)
class FieldDef:
    id: str
    schema: Any
    label: str
    ask: str | None = None
    hint: str | None = None
    when: Gate | None = None
    on_fill: Executor | None = None
    sensitive: bool = False
    source: str | None = None  # None | "person" | "host": who may give the value (docs/engine.md, "Provenance")
    aliases: dict[str, tuple[str, ...]] | None = None  # a choice's other names: option -> its aliases
    derive: Derive | None = None  # the engine computes the value from the live values it reads
    rerun: str | None = None  # None (rising edges only) | "on_change": on_fill runs again when the value changes


FIELD_SOURCES = (None, "person", "host")
RERUN_MODES = (None, "on_change")


@dataclass(slots=True)
class CheckDef:
    """A rule the live values must obey while it applies (docs/engine.md, "Checks"): ``test(values)``
    is true when they do; ``message`` is what the person reads while it is not; ``fields`` are the
    answers it reads (the ones pointed at, and the required ones it waits for); ``when`` narrows it."""

    id: str
    test: Test
    message: str | Callable[[Mapping[str, Any]], str]
    fields: tuple[str, ...] = ()
    when: Gate | None = None


@dataclass(slots=True)
class StepDef:
    id: str
    title: str
    ask: str | None = None
    preview: str | None = None
    when: Gate | None = None
    on_complete: Executor | None = None
    fields: list[FieldDef] = dc_field(default_factory=list)
    checks: list[CheckDef] = dc_field(default_factory=list)
    rerun: str | None = None  # None | "on_change": on_complete runs again when an answer of the step changes


@dataclass(slots=True)
class CheckpointDef:
    id: str
    when: Gate
    run: Executor | None = None
    blocking: bool = False
    wait_message: str | None = None
    wait_for_host: bool = False
    watch: tuple[str, ...] = ()


@dataclass(slots=True)
class FormDef:
    id: str
    version: Any
    name: str
    description: str = ""
    conduct: str | None = None
    migrate: Migrate | None = None
    steps: list[StepDef] = dc_field(default_factory=list)
    checkpoints: list[CheckpointDef] = dc_field(default_factory=list)
    checks: list[CheckDef] = dc_field(default_factory=list)  # the form's own, declared after its last step
    on_complete: Executor | None = None
    max_text: int = 10_000  # characters in any one string of a value (docs/engine.md, "Validation")
    review: bool = False  # ready, then sent by a separate submit (docs/engine.md, "Review before sending")
