"""Form definitions as code: the builder chain, and the effects an executor may return.

A definition holds schemas, gate closures and executors. It is never serialised; only
instances are stored. ``define_form(...).step(...).field(...).build()`` returns a
compiled form (see ``compile.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import TYPE_CHECKING, Any

from formctl.errors import FormDefinitionError

if TYPE_CHECKING:
    from formctl.forms.compile import CompiledForm

Gate = Callable[[Mapping[str, Any], Any], Any]
Executor = Callable[[Any], Any]
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


FIELD_SOURCES = (None, "person", "host")


@dataclass(slots=True)
class StepDef:
    id: str
    title: str
    ask: str | None = None
    preview: str | None = None
    when: Gate | None = None
    on_complete: Executor | None = None
    fields: list[FieldDef] = dc_field(default_factory=list)


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
    on_complete: Executor | None = None
    max_text: int = 10_000  # characters in any one string of a value (docs/engine.md, "Validation")
    review: bool = False  # ready, then sent by a separate submit (docs/engine.md, "Review before sending")


# --------------------------------------------------------------------------- builder


class FormBuilder:
    """Accumulates a definition in declaration order; ``build()`` compiles it."""

    def __init__(self, definition: FormDef) -> None:
        self._def = definition

    def step(
        self,
        id: str,
        *,
        title: str,
        ask: str | None = None,
        preview: str | None = None,
        when: Gate | None = None,
        on_complete: Executor | None = None,
    ) -> FormBuilder:
        """Open a step; the fields that follow belong to it."""
        self._def.steps.append(
            StepDef(id=id, title=title, ask=ask, preview=preview, when=when, on_complete=on_complete)
        )
        return self

    def field(
        self,
        id: str,
        schema: Any,
        *,
        label: str,
        ask: str | None = None,
        hint: str | None = None,
        when: Gate | None = None,
        on_fill: Executor | None = None,
        sensitive: bool = False,
        source: str | None = None,
    ) -> FormBuilder:
        """Add a field to the most recent step. Optional iff ``schema`` accepts ``None``.

        ``source="person"``: a model's value is stored only when the person's own words hold it
        (a quote the checker finds, the value in it); otherwise the person is asked.
        ``source="host"``: only a host may fill it; a model's value is refused.
        """
        if not self._def.steps:
            raise FormDefinitionError(
                f'Form "{self._def.id}" declares field "{id}" before any step — call .step() first.', [id]
            )
        if not isinstance(label, str) or not label.strip():
            raise FormDefinitionError(f'Form "{self._def.id}": field "{id}" needs a label.', [id])
        if source not in FIELD_SOURCES:
            raise FormDefinitionError(
                f'Form "{self._def.id}": field "{id}" source must be "person", "host" or None, not {source!r}.', [id]
            )
        self._def.steps[-1].fields.append(
            FieldDef(
                id=id,
                schema=schema,
                label=label,
                ask=ask,
                hint=hint,
                when=when,
                on_fill=on_fill,
                sensitive=sensitive,
                source=source,
            )
        )
        return self

    def checkpoint(
        self,
        id: str,
        *,
        when: Gate,
        run: Executor | None = None,
        blocking: bool = False,
        wait_message: str | None = None,
        wait_for_host: bool = False,
        watch: tuple[str, ...] | list[str] = (),
    ) -> FormBuilder:
        """A trigger: fires ``run`` on the rising edge of ``when``.

        A blocking checkpoint with no ``run``, or declared ``wait_for_host=True`` and
        whose run returns None, leaves the instance awaiting until
        ``FormRunner.resolve_checkpoint``.

        A firing (and a host's resolution of it) is bound to the values of the fields
        ``when`` read, plus the fields named in ``watch``: when any of them changes while
        ``when`` still holds, the checkpoint fires again (docs/engine.md, "Checkpoints and waits").
        """
        if when is None or not callable(when):
            raise FormDefinitionError(f'Form "{self._def.id}": checkpoint "{id}" needs a when gate.', [id])
        if isinstance(watch, str) or not all(isinstance(w, str) for w in watch):
            raise FormDefinitionError(
                f'Form "{self._def.id}": checkpoint "{id}" watch must be a tuple of field ids.', [id]
            )
        self._def.checkpoints.append(
            CheckpointDef(
                id=id,
                when=when,
                run=run,
                blocking=blocking,
                wait_message=wait_message,
                wait_for_host=wait_for_host,
                watch=tuple(watch),
            )
        )
        return self

    def on_complete(self, fn: Executor) -> FormBuilder:
        """The form-level executor, fired on the rising edge of completion."""
        self._def.on_complete = fn
        return self

    @property
    def definition(self) -> FormDef:
        return self._def

    def build(self) -> CompiledForm:
        from formctl.forms.compile import compile_form

        return compile_form(self._def)


def define_form(
    id: str,
    *,
    version: int = 1,
    name: str,
    description: str = "",
    conduct: str | None = None,
    migrate: Migrate | None = None,
    max_text: int = 10_000,
    review: bool = False,
) -> FormBuilder:
    """Start a form definition: ``define_form(...).step(...).field(...).build()``.

    ``max_text`` caps the characters of any one string in a value (a field's own larger
    ``max_length`` lifts it for that field); a longer value is refused, not stored.

    ``review=True``: when every required answer is in, the form is ``ready``, not complete;
    it becomes ``complete`` (and its ``on_complete`` fires) only when it is sent with
    ``runner.submit()`` (the ``form_submit`` tool), after the person has seen every answer
    read back. Any change after that needs sending again.
    """
    if not isinstance(max_text, int) or isinstance(max_text, bool) or max_text < 1:
        raise FormDefinitionError(f'Form "{id}": max_text must be a positive number of characters.', [id])
    if not isinstance(review, bool):
        raise FormDefinitionError(f'Form "{id}": review must be True or False.', [id])
    return FormBuilder(
        FormDef(
            id=id,
            version=version,
            name=name,
            description=description,
            conduct=conduct,
            migrate=migrate,
            max_text=max_text,
            review=review,
        )
    )
