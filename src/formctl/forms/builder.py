"""The builder chain a form author writes: ``define_form(...).step(...).field(...).build()``.

It accumulates a :class:`~formctl.forms.definition.FormDef` in declaration order and
``build()`` compiles it (:mod:`formctl.forms.compile`). Kept apart from the plain data of
:mod:`formctl.forms.definition`, so that the compiler can import the data without the builder
importing the compiler back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from formctl.errors import FormDefinitionError
from formctl.forms.compile import CompiledForm, compile_form
from formctl.forms.definition import (
    FIELD_SOURCES,
    RERUN_MODES,
    CheckDef,
    CheckpointDef,
    Derive,
    Executor,
    FieldDef,
    FormDef,
    Gate,
    Migrate,
    StepDef,
    Test,
)

__all__ = ["FormBuilder", "define_form"]


def _choice_aliases(
    form_id: str, field_id: str, schema: Any, aliases: dict[str, list[str] | tuple[str, ...]] | None
) -> dict[str, tuple[str, ...]] | None:
    """``aliases`` checked against the field's options: a choice's field only, each key one of its
    options, each alias non-blank text naming one option."""
    if aliases is None:
        return None
    from formctl.forms.quotes import value_kind

    kind = value_kind(schema)
    options = [stored for stored, _ in kind.labels] if kind is not None and kind.kind == "choice" else []
    if not options:
        raise FormDefinitionError(f'Form "{form_id}": field "{field_id}" has aliases but is not a choice.', [field_id])
    if not isinstance(aliases, dict):
        raise FormDefinitionError(
            f'Form "{form_id}": field "{field_id}" aliases must map options to words.', [field_id]
        )
    out: dict[str, tuple[str, ...]] = {}
    named: dict[str, str] = {}
    for option, words in aliases.items():
        if str(option) not in options:
            raise FormDefinitionError(
                f'Form "{form_id}": field "{field_id}" has aliases for "{option}", which is not one of its options '
                f"({', '.join(options)}).",
                [field_id],
            )
        if isinstance(words, str) or not all(isinstance(w, str) and w.strip() for w in words):
            raise FormDefinitionError(
                f'Form "{form_id}": field "{field_id}" aliases of "{option}" must be a list of non-blank words.',
                [field_id],
            )
        for word in words:
            key = " ".join(word.lower().split())
            if named.setdefault(key, str(option)) != str(option):
                raise FormDefinitionError(
                    f'Form "{form_id}": field "{field_id}" alias "{word}" names both "{named[key]}" and "{option}".',
                    [field_id],
                )
        out[option] = tuple(" ".join(w.split()) for w in words)
    return out


class FormBuilder:
    """Accumulates a definition in declaration order; ``build()`` compiles it."""

    def __init__(self, definition: FormDef) -> None:
        self._def = definition
        # Past the last step: a checkpoint or the form's on_complete was declared since the last
        # .step(), so a .check() that follows is the form's own, not the last step's.
        self._after_steps = False

    def _check_rerun(self, what: str, rerun: str | None, executor: Executor | None) -> None:
        if rerun not in RERUN_MODES:
            raise FormDefinitionError(
                f'Form "{self._def.id}": {what} rerun must be "on_change" or None, not {rerun!r}.', [what]
            )
        if rerun is not None and executor is None:
            raise FormDefinitionError(f'Form "{self._def.id}": {what} says rerun but has no executor to run.', [what])

    def step(
        self,
        id: str,
        *,
        title: str,
        ask: str | None = None,
        preview: str | None = None,
        when: Gate | None = None,
        on_complete: Executor | None = None,
        rerun: str | None = None,
    ) -> FormBuilder:
        """Open a step; the fields and checks that follow belong to it.

        ``rerun="on_change"``: ``on_complete`` runs again (a new occurrence) whenever an answer of
        the step changes value while the step is complete, not only when it first completes.
        """
        self._check_rerun(f'step "{id}"', rerun, on_complete)
        self._def.steps.append(
            StepDef(id=id, title=title, ask=ask, preview=preview, when=when, on_complete=on_complete, rerun=rerun)
        )
        self._after_steps = False
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
        aliases: dict[str, list[str] | tuple[str, ...]] | None = None,
        derive: Derive | None = None,
        rerun: str | None = None,
    ) -> FormBuilder:
        """Add a field to the most recent step. Optional iff ``schema`` accepts ``None``.

        ``derive=fn``: the engine computes the value, ``fn(values)``, from the live answers it reads,
        again whenever one of them changes; nobody writes it, and it is held while an answer it
        reads (``v["x"]``) is not live (``v.get("x")`` reads None instead). ``rerun="on_change"``:
        ``on_fill`` runs again whenever the value changes while live, not only when it first is.

        ``source="person"``: a model's value is stored only when the person's own words hold it
        (a quote the checker finds, the value in it); otherwise the person is asked.
        ``source="host"``: only a host may fill it; a model's value is refused.
        ``aliases`` (a choice only): other words a person uses for an option, so the offline
        interviewer reads them as it: ``aliases={"rail": ["train"], "car": ["drove", "drive"]}``.
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
        if derive is not None and not callable(derive):
            raise FormDefinitionError(f'Form "{self._def.id}": field "{id}" derive must be a function.', [id])
        self._check_rerun(f'field "{id}"', rerun, on_fill)
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
                aliases=_choice_aliases(self._def.id, id, schema, aliases),
                derive=derive,
                rerun=rerun,
            )
        )
        return self

    def check(
        self,
        check_id: str,
        test: Test,
        message: str | Callable[[Mapping[str, Any]], str],
        *,
        fields: tuple[str, ...] | list[str] = (),
        when: Gate | None = None,
    ) -> FormBuilder:
        """A rule the live answers must obey (docs/engine.md, "Checks"): ``test(values)`` is true when
        they do. While it fails, its step (or, declared after the last step, the form) is not
        complete, the person reads ``message`` (text, or a function of the values that says it with
        them: ``lambda v: f"... £{v['total']}"``), and the form cannot be sent. ``fields`` names the
        answers it reads: they are pointed at while it fails, and it waits for the required ones.
        """
        if not self._def.steps:
            raise FormDefinitionError(
                f'Form "{self._def.id}" declares check "{check_id}" before any step — call .step() first.', [check_id]
            )
        where = self._def.checks if self._after_steps else self._def.steps[-1].checks
        if not callable(test):
            raise FormDefinitionError(f'Form "{self._def.id}": check "{check_id}" needs a test function.', [check_id])
        if not callable(message) and (not isinstance(message, str) or not message.strip()):
            raise FormDefinitionError(f'Form "{self._def.id}": check "{check_id}" needs a message.', [check_id])
        if isinstance(fields, str) or not all(isinstance(f, str) for f in fields):
            raise FormDefinitionError(
                f'Form "{self._def.id}": check "{check_id}" fields must be a tuple of field ids.', [check_id]
            )
        where.append(CheckDef(id=check_id, test=test, message=message, fields=tuple(fields), when=when))
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
        self._after_steps = True
        return self

    def on_complete(self, fn: Executor) -> FormBuilder:
        """The form-level executor, fired on the rising edge of completion."""
        self._def.on_complete = fn
        self._after_steps = True
        return self

    @property
    def definition(self) -> FormDef:
        return self._def

    def build(self) -> CompiledForm:
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
