"""Compile a definition into the index every read and write uses.

Compilation checks the definition (docs/engine.md, 'Compile checks'), flattens the fields
in declaration order, and builds the alias indexes that make ids forgiving (docs/engine.md,
'Resolving names'). Schemas are turned
into validators and type strings lazily, on first use, so compiling a 300-field form
costs microseconds per field rather than a pydantic build per field.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

from formctl.errors import FormDefinitionError
from formctl.forms.definition import CheckDef, CheckpointDef, FieldDef, FormDef, StepDef

if TYPE_CHECKING:
    from formctl.forms.validate import FieldValidator  # imported when first needed (pydantic is slow to import)


def normalise(text: Any) -> str:
    """Lower-case, then keep only ``[a-z0-9]``: ``Full-Name``, ``full_name`` and ``fullName`` all become ``fullname``."""
    if not isinstance(text, str):
        text = str(text)
    return "".join(ch for ch in text.lower() if ("a" <= ch <= "z") or ("0" <= ch <= "9"))


def dice(a: str, b: str) -> float:
    """Sørensen–Dice coefficient over character bigrams, counting repeats as a multiset."""
    if a == b:
        return 1.0
    if len(a) < 2 or len(b) < 2:
        return 0.0
    bigrams: dict[str, int] = {}
    for i in range(len(a) - 1):
        pair = a[i : i + 2]
        bigrams[pair] = bigrams.get(pair, 0) + 1
    hits = 0
    for i in range(len(b) - 1):
        pair = b[i : i + 2]
        if bigrams.get(pair, 0) > 0:
            bigrams[pair] -= 1
            hits += 1
    return 2 * hits / ((len(a) - 1) + (len(b) - 1))


class CompiledField:
    """A field with its place in the form and its lazily built validator and type string."""

    __slots__ = (
        "id",
        "label",
        "schema",
        "ask",
        "hint",
        "when",
        "on_fill",
        "sensitive",
        "source",
        "derive",
        "rerun",
        "step_id",
        "step_index",
        "order",
        "description",
        "aliases",
        "__dict__",
    )

    def __init__(self, definition: FieldDef, step_id: str, step_index: int, order: int) -> None:
        from formctl.forms.validate import describe_field

        self.id = definition.id
        self.label = definition.label
        self.schema = definition.schema
        self.ask = definition.ask
        self.hint = definition.hint
        self.when = definition.when
        self.on_fill = definition.on_fill
        self.sensitive = definition.sensitive
        self.source = definition.source
        self.derive = definition.derive  # the engine computes the value (docs/engine.md, "Derived values")
        self.rerun = definition.rerun
        self.step_id = step_id
        self.step_index = step_index
        self.order = order
        self.description = describe_field(definition.ask, definition.hint)
        self.aliases = definition.aliases or {}  # a choice's other names ("train" for "rail")

    @cached_property
    def validator(self) -> FieldValidator:
        from formctl.forms.validate import FieldValidator

        return FieldValidator(self.schema)

    @cached_property
    def declared_max_length(self) -> int | None:
        """The largest string ``max_length`` the schema declares, or None (see ``text_limit``)."""
        from formctl.forms.validate import declared_max_length

        return declared_max_length(self.schema)

    def text_limit(self, form_cap: int) -> int:
        """The longest string a value of this field may hold: the form's cap, or the field's own larger max_length."""
        declared = self.declared_max_length
        return form_cap if declared is None or declared < form_cap else declared

    @cached_property
    def type(self) -> str:
        from formctl.forms.describe import field_type_string

        return field_type_string(self.schema, " ".join(t for t in (self.ask, self.hint) if t))

    @cached_property
    def required(self) -> bool:
        """Required unless the schema accepts None: there is no ``required=`` flag."""
        from formctl.forms.describe import accepts_none

        try:
            return not accepts_none(self.schema)
        except Exception:  # a schema that cannot even be probed counts as required
            return True

    def __repr__(self) -> str:
        return f"CompiledField({self.id!r})"


class CompiledStep:
    __slots__ = ("id", "title", "ask", "preview", "when", "on_complete", "rerun", "index", "fields", "checks")

    def __init__(self, definition: StepDef, index: int) -> None:
        self.id = definition.id
        self.title = definition.title
        self.ask = definition.ask
        self.preview = definition.preview
        self.when = definition.when
        self.on_complete = definition.on_complete
        self.rerun = definition.rerun
        self.index = index  # position in the form, 0-based like every index here
        self.fields: list[CompiledField] = []
        self.checks: list[CompiledCheck] = []  # the checks that hold this step (docs/engine.md, "Checks")

    @property
    def number(self) -> int:
        """The step's position as people count it (1 for the first), for "step 2/4"."""
        return self.index + 1

    def __repr__(self) -> str:
        return f"CompiledStep({self.id!r})"


class CompiledCheck:
    """A check with its place: ``step_index`` is the step it holds, None for the form's own.
    ``fields`` are field ids once compiled; ``required`` the positions of the required ones,
    which must be live for the check to apply."""

    __slots__ = ("id", "test", "message", "fields", "when", "step_index", "index", "required")

    def __init__(self, definition: CheckDef, step_index: int | None, index: int) -> None:
        self.id = definition.id
        self.test = definition.test
        self.message = definition.message
        self.fields: tuple[str, ...] = tuple(definition.fields)
        self.when = definition.when
        self.step_index = step_index
        self.index = index  # position among the form's checks, 0-based
        self.required: tuple[int, ...] = ()

    def __repr__(self) -> str:
        return f"CompiledCheck({self.id!r})"


class CompiledCheckpoint:
    __slots__ = ("id", "when", "run", "blocking", "wait_message", "wait_for_host", "index", "watch")

    def __init__(self, definition: CheckpointDef, index: int) -> None:
        self.id = definition.id
        self.when = definition.when
        self.run = definition.run
        self.blocking = bool(definition.blocking)
        self.wait_message = definition.wait_message
        self.wait_for_host = bool(definition.wait_for_host)
        self.watch: tuple[str, ...] = tuple(definition.watch)  # field ids once compiled (see compile_form)
        self.index = index  # position in the form, 0-based

    @property
    def waits_for_host(self) -> bool:
        """A blocking checkpoint with no run, or declared to wait, waits for ``resolve_checkpoint``."""
        return self.blocking and (self.run is None or self.wait_for_host)


class CompiledForm:
    """The compiled index of one definition. Immutable after ``compile_form``."""

    def __init__(self, definition: FormDef) -> None:
        self.definition = definition
        self.id: str = definition.id
        self.version: int = definition.version
        self.name = definition.name
        self.description = definition.description
        self.conduct = definition.conduct
        self.migrate = definition.migrate
        self.on_complete = definition.on_complete
        self.max_text: int = definition.max_text
        self.review: bool = definition.review
        self.steps: list[CompiledStep] = []
        self.fields: list[CompiledField] = []
        self.checkpoints: list[CompiledCheckpoint] = []
        self.checks: list[CompiledCheck] = []  # every check, the steps' in order, then the form's own
        self.form_checks: list[CompiledCheck] = []
        self.derived: list[CompiledField] = []  # the fields with ``derive``, in declaration order
        self.field_by_id: dict[str, CompiledField] = {}
        self.step_by_id: dict[str, CompiledStep] = {}
        self.checkpoint_by_id: dict[str, CompiledCheckpoint] = {}
        self.field_position: dict[str, int] = {}
        self.aliases: dict[str, str] = {}
        self.step_aliases: dict[str, str] = {}

    # -- id resolution: forgiving everywhere (docs/engine.md, 'Resolving names') -------

    def resolve_field(self, sent: Any) -> str | None:
        """The field a sent id means: exact id first, else the normalised id or label; None if unknown."""
        if isinstance(sent, str) and sent in self.field_by_id:
            return sent
        return self.aliases.get(normalise(sent))

    def resolve_step(self, sent: Any) -> str | None:
        """The step a sent id or title means, by the same normalisation; None if unknown."""
        if isinstance(sent, str) and sent in self.step_by_id:
            return sent
        return self.step_aliases.get(normalise(sent))

    def did_you_mean(self, sent: Any) -> list[str]:
        """At most two field ids whose id or label is close to ``sent`` (Dice >= 0.4), best first."""
        target = normalise(sent)
        if not target or len(target) > 200:  # no id is that long; comparing would only cost time
            return []
        scored = []
        for f in self.fields:
            score = max(dice(target, normalise(f.id)), dice(target, normalise(f.label)))
            if score >= 0.4:
                scored.append((score, f.id))
        scored.sort(key=lambda pair: -pair[0])  # stable: ties keep declaration order
        return [field_id for _, field_id in scored[:2]]

    @cached_property
    def gated_positions(self) -> frozenset[int]:
        """Positions of the fields that have an applicability gate."""
        return frozenset(f.order for f in self.fields if f.when is not None or f.derive is not None)

    @cached_property
    def required_in_step(self) -> list[list[tuple[int, bool]]]:
        """Per step, ``(position, gated)`` of its required fields: what step completion checks."""
        gated = self.gated_positions
        return [[(f.order, f.order in gated) for f in step.fields if f.required] for step in self.steps]

    @cached_property
    def reruns(self) -> bool:
        """Some executor is declared ``rerun="on_change"`` (most forms: none, and the edges skip the test)."""
        return any(f.rerun for f in self.fields) or any(s.rerun for s in self.steps)

    @cached_property
    def derived_ids(self) -> frozenset[str]:
        """The ids of the derived fields: nobody writes or moves them (docs/engine.md, "Derived values")."""
        return frozenset(f.id for f in self.derived)

    @cached_property
    def labels(self) -> dict[str, str]:
        return {f.id: f.label for f in self.fields}

    def __repr__(self) -> str:
        return f"CompiledForm({self.id!r}, version={self.version})"


def _unique_in_order(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _index_aliases(form_id: str, candidates: list[tuple[str, list[str]]]) -> tuple[dict[str, str], list[str]]:
    index: dict[str, str] = {}
    clashes: list[str] = []
    for owner, names in candidates:
        for name in names:
            key = normalise(name)
            if not key:
                continue
            existing = index.get(key)
            if existing is not None and existing != owner:
                clashes.append(f'{existing}/{owner} both normalise to "{key}"')
            elif existing is None:
                index[key] = owner
    return index, _unique_in_order(clashes)


def compile_form(definition: FormDef) -> CompiledForm:
    """Check a definition and build its index, raising ``FormDefinitionError`` with the offending ids."""
    if not definition.id:
        raise FormDefinitionError("A form definition needs an id.")
    version = definition.version
    if not isinstance(version, int) or isinstance(version, bool):
        raise FormDefinitionError(f'Form "{definition.id}" needs an integer version — instances pin it at start.')
    compiled = CompiledForm(definition)
    _compile_steps_and_fields(compiled, definition)
    _compile_aliases(compiled)
    _compile_checkpoints(compiled, definition)
    if not compiled.fields:
        raise FormDefinitionError(f'Form "{compiled.id}" declares no fields.', [compiled.id])
    _compile_checks(compiled, definition)
    _compile_derived(compiled)
    return compiled


def _refuse_duplicates(compiled: CompiledForm, what: str, duplicates: list[str], why: str = "") -> None:
    """Refuse the ids of ``what`` (fields, steps, checkpoints) declared more than once, each named once."""
    if duplicates:
        ids = _unique_in_order(duplicates)
        raise FormDefinitionError(f'Form "{compiled.id}" declares duplicate {what} ids: {", ".join(ids)}.{why}', ids)


def _compile_steps_and_fields(compiled: CompiledForm, definition: FormDef) -> None:
    """Index the steps and their fields in declaration order; ids are unique across the form."""
    duplicate_steps: list[str] = []
    duplicate_fields: list[str] = []
    for step_def in definition.steps:
        if step_def.id in compiled.step_by_id:
            duplicate_steps.append(step_def.id)
            continue
        step = CompiledStep(step_def, len(compiled.steps))
        compiled.steps.append(step)
        compiled.step_by_id[step.id] = step
        for field_def in step_def.fields:
            if field_def.id in compiled.field_by_id:
                duplicate_fields.append(field_def.id)
                continue
            field = CompiledField(field_def, step.id, step.index, len(compiled.fields))
            step.fields.append(field)
            compiled.fields.append(field)
            compiled.field_by_id[field.id] = field
            compiled.field_position[field.id] = field.order
    _refuse_duplicates(
        compiled, "field", duplicate_fields, " Field ids are unique across the whole form, not per step."
    )
    _refuse_duplicates(compiled, "step", duplicate_steps)


def _compile_aliases(compiled: CompiledForm) -> None:
    """The forgiving names of fields and steps (inspect and Jump resolve steps too), which must
    be told apart once case and punctuation are ignored."""
    fields = [(f.id, [f.id, f.label]) for f in compiled.fields]
    steps = [(s.id, [s.id, s.title]) for s in compiled.steps]
    compiled.aliases = _aliases_told_apart(compiled, "fields", fields)
    compiled.step_aliases = _aliases_told_apart(compiled, "steps", steps)


def _aliases_told_apart(compiled: CompiledForm, what: str, candidates: list[tuple[str, list[str]]]) -> dict[str, str]:
    index, clashes = _index_aliases(compiled.id, candidates)
    if clashes:
        raise FormDefinitionError(
            f'Form "{compiled.id}" has {what} that can\'t be told apart once case and punctuation are ignored: '
            + "; ".join(clashes)
            + ".",
            clashes,
        )
    return index


def _compile_checkpoints(compiled: CompiledForm, definition: FormDef) -> None:
    """Index the checkpoints, their watched fields resolved."""
    duplicates: list[str] = []
    for cp_def in definition.checkpoints:
        if cp_def.id in compiled.checkpoint_by_id:
            duplicates.append(cp_def.id)
            continue
        checkpoint = CompiledCheckpoint(cp_def, len(compiled.checkpoints))
        compiled.checkpoints.append(checkpoint)
        compiled.checkpoint_by_id[checkpoint.id] = checkpoint
    for checkpoint in compiled.checkpoints:
        checkpoint.watch = _resolve_fields(
            compiled, f'checkpoint "{checkpoint.id}" watches', checkpoint.id, checkpoint.watch
        )
    _refuse_duplicates(compiled, "checkpoint", duplicates)


def _resolve_fields(compiled: CompiledForm, who: str, owner: str, sent: tuple[str, ...]) -> tuple[str, ...]:
    """The field ids ``sent`` names (forgivingly, each once), refusing a name the form does not declare."""
    resolved = [(name, compiled.resolve_field(name)) for name in sent]
    unknown = [name for name, field_id in resolved if field_id is None]
    if unknown:
        raise FormDefinitionError(
            f'Form "{compiled.id}": {who} {", ".join(unknown)}, which the form does not declare.', [owner, *unknown]
        )
    return tuple(dict.fromkeys(field_id for _, field_id in resolved if field_id is not None))


def _compile_checks(compiled: CompiledForm, definition: FormDef) -> None:
    """Index the steps' checks and the form's own, their fields resolved (docs/engine.md, "Checks")."""
    form_id = compiled.id
    # Duplicate step ids were refused already, so the compiled steps are the declared ones.
    declared: list[tuple[CheckDef, int | None]] = [
        (check, step.index)
        for step, step_def in zip(compiled.steps, definition.steps, strict=True)
        for check in step_def.checks
    ]
    declared += [(check, None) for check in definition.checks]
    seen: set[str] = set()
    for check_def, step_index in declared:
        if check_def.id in seen:
            raise FormDefinitionError(f'Form "{form_id}" declares duplicate check ids: {check_def.id}.', [check_def.id])
        seen.add(check_def.id)
        check = CompiledCheck(check_def, step_index, len(compiled.checks))
        check.fields = _resolve_fields(compiled, f'check "{check.id}" reads', check.id, check.fields)
        check.required = tuple(compiled.field_by_id[f].order for f in check.fields if compiled.field_by_id[f].required)
        compiled.checks.append(check)
        if step_index is None:
            compiled.form_checks.append(check)
        else:
            compiled.steps[step_index].checks.append(check)


def _compile_derived(compiled: CompiledForm) -> None:
    """Index the derived fields; nobody writes one, so it cannot also say who must give it."""
    for field in compiled.fields:
        if field.derive is None:
            continue
        if field.source is not None:
            raise FormDefinitionError(
                f'Form "{compiled.id}": field "{field.id}" is derived, so it cannot also have source="{field.source}".',
                [field.id],
            )
        compiled.derived.append(field)
