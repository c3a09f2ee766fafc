"""Evaluation: what an instance means under a compiled definition. A pure function.

``evaluate(compiled, instance)`` decides, from the stored answer logs alone, which
answers are live, which are held, which are invalid, which steps and the form are
complete, which checkpoints are active, and which step is open. It reads no clock,
touches no storage and calls no model; the runner and every view call it.

Cost: each revision is parsed once in its life (the outcome is cached on the immutable
revision, keyed by the validator that produced it), so an evaluation costs one pass over
the fields plus one call per gate, however long the logs are.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from enum import StrEnum
from types import MappingProxyType
from typing import Any, Protocol

from formctl.forms.compile import CompiledCheck, CompiledField, CompiledForm
from formctl.forms.history import moved_cursor
from formctl.forms.instance import Entry, Instance


class FieldStatus(StrEnum):
    """What one field's answer in force amounts to under an evaluation."""

    EMPTY = "empty"
    FILLED = "filled"  # valid and live
    INVALID = "invalid"  # live, but its validator refused it
    HELD = "held"  # kept, but not applicable given the other answers


EMPTY, FILLED, INVALID, HELD = FieldStatus.EMPTY, FieldStatus.FILLED, FieldStatus.INVALID, FieldStatus.HELD


class GateValues(dict[str, Any]):
    """The read-only values a gate or executor sees.

    ``v["x"]`` and ``v.get("x")`` both give None for a declared field with no live
    answer, so ``v["mode"] == "car"`` reads naturally; an id the form does not declare
    raises KeyError, which surfaces as a gate defect (a typo in a gate is a bug worth
    hearing about, not a silent False).
    """

    __slots__ = ("_declared",)

    def __init__(self, values: dict[str, Any], declared: dict[str, Any]) -> None:
        super().__init__(values)
        self._declared = declared

    def __missing__(self, key: str) -> Any:
        if key in self._declared:
            return None
        raise KeyError(f"no field {key!r} on this form")

    def _read_only(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("form values are read-only here; return Patch({...}) to change them")

    __setitem__ = __delitem__ = _read_only
    clear = pop = popitem = setdefault = update = _read_only  # type: ignore[assignment]  # raising, they return nothing


class _NotLive(Exception):
    """A derived field's function read an answer that is not live: the field is held."""


class _Reading(GateValues):
    """The values a derived field's function sees (docs/engine.md, "Derived values"): ``v["x"]``
    of an answer that is not live stops the computation (the field is held until it is);
    ``v.get("x")`` gives None instead, for an input the function can do without. Every id read
    is recorded: the revision the engine writes names them."""

    __slots__ = ("reads",)

    def __init__(self, values: dict[str, Any], declared: dict[str, Any]) -> None:
        super().__init__(values, declared)
        self.reads: list[str] = []

    def __getitem__(self, key: str) -> Any:
        self.reads.append(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self.reads.append(key)
        return super().get(key, default)

    def __missing__(self, key: str) -> Any:
        if key in self._declared:
            raise _NotLive(key)
        raise KeyError(f"no field {key!r} on this form")


def derive_value(
    compiled: CompiledForm, field: CompiledField, values: dict[str, Any]
) -> tuple[bool, Any, tuple[str, ...]]:
    """``(live, value, inputs)`` of a derived field over the live ``values``: ``live`` is False when
    the function read an answer that is not live (then there is no value). Raises what it raises."""
    reading = _Reading(values, compiled.field_by_id)
    try:
        value = field.derive(reading) if field.derive is not None else None
    except _NotLive:
        return False, None, ()
    return True, value, tuple(dict.fromkeys(k for k in reading.reads if k != field.id))


def parse_entry(field: Any, entry: Entry) -> Any:
    """The validation outcome of one revision under one field's validator, parsed once in the revision's life.

    The outcome is kept in ``Entry.parse_cache`` (see :class:`~formctl.forms.instance.Entry`),
    keyed by the validator that produced it, so a changed definition parses again.
    """
    validator = field.validator
    cached = entry.parse_cache
    if cached is not None and cached[0] is validator:
        return cached[1]
    outcome = validator.validate(entry.value)
    entry.parse_cache = (validator, outcome)
    return outcome


def remember_parse(entry: Entry, validator: Any, outcome: Any) -> None:
    """Record the outcome a write already validated, so the first evaluation does not parse it again."""
    entry.parse_cache = (validator, outcome)


Values = Mapping[str, Any]
"""The type of a gate's ``v`` and of ``ctx.values``: the live answers, read-only (a
:class:`GateValues` at run time: ``v["x"]`` is None for a declared field with no live answer)."""


class GateState(Protocol):
    """The type of a gate's ``s`` and of an executor's ``ctx.state``: what they may ask beyond
    the values. ``when=lambda v, s: s.step_complete("trip")``."""

    def step_complete(self, step_id: str) -> bool:
        """The step's required, applicable fields are all filled."""
        ...

    def checkpoint_fired(self, checkpoint_id: str) -> bool:
        """The checkpoint's rising edge was counted before the write being evaluated."""
        ...

    @property
    def complete(self) -> bool:
        """The whole form is complete."""
        ...


class _PassState:
    """The :class:`GateState` a gate sees during an evaluation (it reads the pass under way)."""

    __slots__ = ("_pass", "_fired")

    def __init__(self, evaluation_pass: _Pass, fired: dict[str, int]) -> None:
        self._pass = evaluation_pass
        self._fired = fired

    def step_complete(self, step_id: str) -> bool:
        return self._pass.step_complete(step_id)

    def checkpoint_fired(self, checkpoint_id: str) -> bool:
        """True iff the checkpoint's rising edge was counted before the write being evaluated."""
        self._pass.ev.read_fired = True
        return self._fired.get(f"checkpoint:{checkpoint_id}", 0) > 0

    @property
    def complete(self) -> bool:
        return self._pass.form_complete()


class FrozenState:
    """The :class:`GateState` frozen from a finished evaluation: what executors get as ``ctx.state``."""

    __slots__ = ("_steps", "_fired", "complete")

    def __init__(self, step_complete: dict[str, bool], fired: dict[str, int], complete: bool) -> None:
        self._steps = step_complete
        self._fired = fired
        self.complete = complete

    def step_complete(self, step_id: str) -> bool:
        return self._steps.get(step_id, False)

    def checkpoint_fired(self, checkpoint_id: str) -> bool:
        return self._fired.get(f"checkpoint:{checkpoint_id}", 0) > 0


class _Pass:
    """One pass of the liveness fixpoint: applicability with a given exclusion set, computed lazily."""

    __slots__ = (
        "ev",
        "excluded",
        "values",
        "state",
        "applicable",
        "_steps",
        "_complete",
        "_busy",
        "_fallbacks",
        "_checks",
    )

    def __init__(self, ev: Evaluation, excluded: set[int], fired: dict[str, int], values: dict[str, Any]) -> None:
        self.ev = ev
        self.excluded = excluded
        self.values = GateValues(values, ev.compiled.field_by_id)
        self.state = _PassState(self, fired)
        self.applicable: dict[int, bool] = {}
        self._steps: dict[int, bool] = {}
        self._complete: bool | None = None
        self._checks: dict[int, bool] = {}  # check index -> holds (passes, or does not apply)
        self._busy: set[Any] = set()
        # Tokens that answered with a re-entrancy fallback. An answer computed while some
        # *other* question fell back is provisional and is not memoised, like the fallback
        # itself (docs/engine.md, 'Liveness and applicability'); otherwise a step asked
        # about inside its own field's gate would keep the answer it had with that field
        # optimistically applicable.
        self._fallbacks: list[Any] = []

    def field_applicable(self, i: int) -> bool:
        known = self.applicable.get(i)
        if known is not None:
            return known
        if i in self.excluded:
            self.applicable[i] = False
            return False
        field = self.ev.compiled.fields[i]
        gate = field.when
        if gate is None and field.derive is None:
            self.applicable[i] = True
            return True
        token = ("field", i)
        if token in self._busy:
            self._fallbacks.append(token)
            return True  # re-entrant: optimistic fallback, not memoised
        mark = len(self._fallbacks)
        self._busy.add(token)
        try:
            result = True
            if gate is not None:  # inline, not self._gate: every gated field asks this on every evaluation
                try:
                    result = bool(gate(self.values, self.state))
                except Exception as exc:  # a gate that raises counts as true, and is a defect
                    self.ev._defect(f'gate "{field.id}" threw: {_message(exc)}')
            if result and field.derive is not None:
                result = self._inputs_live(field)
        finally:
            self._busy.discard(token)
        if self._settled(mark, token):
            self.applicable[i] = result
        return result

    def _gate(self, name: str, gate: Any) -> bool:
        try:
            return bool(gate(self.values, self.state))
        except Exception as exc:  # a gate that raises counts as true, and is a defect
            self.ev._defect(f'gate "{name}" threw: {_message(exc)}')
            return True

    def _inputs_live(self, field: CompiledField) -> bool:
        """A derived field is live only while every answer its function reads is (else it is held)."""
        try:
            return derive_value(self.ev.compiled, field, self.values)[0]
        except Exception as exc:
            self.ev._defect(f'derive "{field.id}" threw: {_message(exc)}')
            return False

    def check_holds(self, check: CompiledCheck) -> bool:
        """The check passes, or does not apply: its ``when`` is false, or a required answer it reads
        is not live (docs/engine.md, "Checks"). A test that raises is a defect, and fails."""
        known = self._checks.get(check.index)
        if known is not None:
            return known
        token = ("check", check.index)
        if token in self._busy:
            self._fallbacks.append(token)
            return True  # re-entrant: optimistic fallback, not memoised
        mark = len(self._fallbacks)
        self._busy.add(token)
        try:
            result = not self._check_applies(check)
            if not result:
                try:
                    result = bool(check.test(self.values))
                except Exception as exc:
                    self.ev._defect(f'check "{check.id}" threw: {_message(exc)}')
                    result = False
        finally:
            self._busy.discard(token)
        if self._settled(mark, token):
            self._checks[check.index] = result
        return result

    def _check_applies(self, check: CompiledCheck) -> bool:
        valid = self.ev._valid
        gated = self.ev.compiled.gated_positions
        for i in check.required:
            if i in self.excluded or i not in valid or (i in gated and not self.field_applicable(i)):
                return False
        return check.when is None or self._gate(f"check:{check.id}", check.when)

    def step_done(self, step_index: int) -> bool:
        """Every required, applicable field of the step is filled (valid and live), and its checks hold."""
        known = self._steps.get(step_index)
        if known is not None:
            return known
        token = ("step", step_index)
        if token in self._busy:
            self._fallbacks.append(token)
            return False  # re-entrant: pessimistic fallback, not memoised
        mark = len(self._fallbacks)
        self._busy.add(token)
        try:
            result = True
            excluded = self.excluded
            valid = self.ev._valid
            for i, gated in self.ev.compiled.required_in_step[step_index]:
                if i in excluded:
                    continue
                if gated and not self.field_applicable(i):
                    continue
                if i not in valid:
                    result = False
                    break
            if result and self.ev.compiled.checks:  # most forms declare none: one test, not a walk
                for check in self.ev.compiled.steps[step_index].checks:
                    if not self.check_holds(check):
                        result = False
                        break
        finally:
            self._busy.discard(token)
        if self._settled(mark, token):
            self._steps[step_index] = result
        return result

    def step_complete(self, step_id: str) -> bool:
        step = self.ev.compiled.step_by_id.get(step_id)
        if step is None:
            return False
        return self.step_done(step.index)

    def form_complete(self) -> bool:
        """Every required, applicable field of the form is filled: every step is done (step gates ignored)."""
        if self._complete is not None:
            return self._complete
        token = ("form",)
        if token in self._busy:
            self._fallbacks.append(token)
            return False  # re-entrant: pessimistic fallback, not memoised
        mark = len(self._fallbacks)
        self._busy.add(token)
        try:
            compiled = self.ev.compiled
            result = all(self.step_done(k) for k in range(len(compiled.steps)))
            if result and compiled.form_checks:
                result = all(self.check_holds(c) for c in compiled.form_checks)
        finally:
            self._busy.discard(token)
        if self._settled(mark, token):
            self._complete = result
        return result

    def _settled(self, mark: int, token: Any) -> bool:
        """No question other than ``token`` itself fell back while ``token`` was being answered.

        (The guard before it, "is ``token`` being answered already?", is written out in each of
        the four questions rather than called: they are asked some 80,000 times in
        benchmarks/engine.py's medium pass, and the call cost 1% of its instructions.)"""
        fallbacks = self._fallbacks
        if len(fallbacks) == mark:  # the common case: nothing fell back at all
            return True
        return all(t == token for t in fallbacks[mark:])


def _message(exc: BaseException) -> str:
    return str(exc) or exc.__class__.__name__


_NONE_DUE: Mapping[str, tuple[Any, tuple[str, ...]]] = MappingProxyType({})


class Evaluation:
    """The meaning of one instance under one compiled form. Build it with :func:`evaluate`."""

    def __init__(self, compiled: CompiledForm) -> None:
        self.compiled = compiled
        n = len(compiled.fields)
        self.status: list[str] = [EMPTY] * n
        self.applicable: list[bool] = [False] * n
        self.values: dict[str, Any] = {}
        self.held: dict[str, Any] = {}
        self.errors: dict[str, str] = {}
        self.live: set[str] = set()
        self.step_complete: list[bool] = [False] * len(compiled.steps)
        self.step_open: list[bool] = [False] * len(compiled.steps)
        self.checkpoint_active: list[bool] = [False] * len(compiled.checkpoints)
        self.complete = False
        # The checks that apply and fail, in declaration order (docs/engine.md, "Checks").
        self.failed_checks: Sequence[CompiledCheck] = ()  # shared, not a new list: most forms have none
        # Derived fields whose stored answer is not what their function gives the live values:
        # field id -> (value, the ids it read). The runner writes them in the same commit.
        self.derived_due: Mapping[str, tuple[Any, tuple[str, ...]]] = _NONE_DUE
        self.defects: list[str] = []
        self.passes = 0
        self.open_step: int | None = None  # 0-based step index
        self.revisiting = False
        self.read_fired = False  # did any gate ask checkpoint_fired? (then the result depends on counters)
        self._valid: dict[int, Any] = {}
        self._in_force: dict[int, Entry] = {}
        self._base_values: dict[str, Any] = {}  # every valid answer in force, live or not, by field id
        self.cursor_seq: dict[str, int] = {}  # field id -> seq of the revision at its cursor (undo's target)
        self.redo_seq: dict[str, int] = {}  # field id -> seq of the revision a redo would restore
        self._final: _Pass | None = None
        # A closed record read as it was written (:func:`evaluate` ``as_written``): its answers'
        # verdicts are the ones stored with them, not the registered version's.
        self.as_written = False
        self._written_errors: dict[int, str] = {}

    def _defect(self, text: str) -> None:
        if text not in self.defects:
            self.defects.append(text)

    # -- conveniences for views and the runner ---------------------------------------

    def step_complete_map(self) -> dict[str, bool]:
        return {s.id: self.step_complete[s.index] for s in self.compiled.steps}

    def field_status(self, field_id: str) -> str:
        return self.status[self.compiled.field_position[field_id]]

    def frozen_state(self, fired: dict[str, int]) -> FrozenState:
        return FrozenState(self.step_complete_map(), fired, self.complete)

    def gate_values(self) -> GateValues:
        return GateValues(self.values, self.compiled.field_by_id)

    def check_message(self, check: CompiledCheck) -> str:
        """What a failing check says: its message, or what its message function makes of the live values."""
        message = check.message
        if isinstance(message, str):
            return message
        try:
            return str(message(self.gate_values()))
        except Exception:  # a message that cannot be worded still holds the form: say which check
            return f'The answers do not pass the "{check.id.replace("-", " ")}" check.'


def evaluate(
    compiled: CompiledForm, instance: Instance, *, fired: dict[str, int] | None = None, as_written: bool = False
) -> Evaluation:
    """Evaluate an instance: parse what is in force, run the liveness fixpoint, derive the rest.

    ``fired`` is the occurrence map ``checkpoint_fired`` reads; by default the instance's own.

    ``as_written``: a closed record on another version of its form (docs/engine.md, "Closed
    records"). Each answer in force keeps the verdict stored with it when it was written (valid,
    or the error it was refused with), never the registered validator's; a valid one the
    registered validator still parses is shown parsed, otherwise as stored. Nothing is asked of
    a closed record, so no step is open.
    """
    ev = Evaluation(compiled)
    ev.as_written = as_written
    for field_id, log in instance.entries.items():
        _read_log(ev, field_id, log)
    _settle(ev, instance, instance.occurrences if fired is None else fired, None)
    if as_written:
        ev.open_step, ev.revisiting = None, False
    return ev


def evaluate_change(
    compiled: CompiledForm,
    before: Evaluation,
    instance: Instance,
    changed: Iterable[str],
    *,
    fired: dict[str, int] | None = None,
) -> Evaluation:
    """The evaluation of ``instance``, given ``before`` = the evaluation of the same instance
    as it was before the logs of the ``changed`` fields moved.

    Gives exactly what :func:`evaluate` gives, but visits only the changed fields and the
    gated ones: an ungated field whose log did not move cannot change status. This is what
    keeps a write's cost proportional to what it touches rather than to the form's size.
    """
    if before.compiled is not compiled or before.as_written:
        return evaluate(compiled, instance, fired=fired)
    ev = Evaluation(compiled)
    ev._valid = dict(before._valid)
    ev._in_force = dict(before._in_force)
    ev._base_values = dict(before._base_values)
    ev.cursor_seq = dict(before.cursor_seq)
    ev.redo_seq = dict(before.redo_seq)
    ev.status = before.status[:]
    ev.applicable = before.applicable[:]
    ev.values = dict(before.values)
    ev.held = dict(before.held)
    ev.errors = dict(before.errors)
    ev.live = set(before.live)
    position = compiled.field_position
    visit = set(compiled.gated_positions)
    for field_id in changed:
        i = position.get(field_id)
        if i is not None:
            ev._valid.pop(i, None)
            ev._in_force.pop(i, None)
            ev._base_values.pop(field_id, None)
            visit.add(i)
        ev.cursor_seq.pop(field_id, None)
        ev.redo_seq.pop(field_id, None)
        log = instance.entries.get(field_id)
        if log is not None:
            _read_log(ev, field_id, log)
    for i in visit:
        field_id = compiled.fields[i].id
        ev.status[i] = EMPTY
        ev.values.pop(field_id, None)
        ev.held.pop(field_id, None)
        ev.errors.pop(field_id, None)
        ev.live.discard(field_id)
    # Declaration order, as a full evaluation visits them: with re-entrant gates the
    # answers depend on the order the questions are asked in, so both must ask alike.
    _settle(ev, instance, instance.occurrences if fired is None else fired, sorted(visit))
    return ev


def _read_log(ev: Evaluation, field_id: str, log: Any) -> None:
    """Take one field's log into the evaluation: its cursor, redo target, and (parsed) answer in force."""
    cursor = log.cursor
    revisions = log.revisions
    # A derived field is never a bare undo's or redo's target: it follows its inputs.
    movable = not ev.compiled.derived or field_id not in ev.compiled.derived_ids
    if cursor >= 0 and movable:
        ev.cursor_seq[field_id] = revisions[cursor].seq
    if cursor < len(revisions) - 1 and movable:  # a log whose newest answer is in force skips the call
        redo = moved_cursor(log, +1)
        if redo is not None:
            ev.redo_seq[field_id] = revisions[redo].seq
    i = ev.compiled.field_position.get(field_id)
    if i is None or cursor < 0:
        return  # a field this definition does not have, or nothing in force
    entry = revisions[cursor]
    if entry.retracted:
        return
    ev._in_force[i] = entry
    outcome = parse_entry(ev.compiled.fields[i], entry)
    if ev.as_written:
        if entry.error is not None:
            ev._written_errors[i] = entry.error
            return
        value = outcome.value if outcome.ok else entry.value
        ev._valid[i] = value
        ev._base_values[field_id] = value
    elif outcome.ok:
        ev._valid[i] = outcome.value
        ev._base_values[field_id] = outcome.value


def _settle(ev: Evaluation, instance: Instance, occurrences: dict[str, int], visit: list[int] | None) -> None:
    """The liveness fixpoint and everything derived from it. ``visit=None`` means every field.

    Gates are always asked in declaration order, never in the order answers happen to be
    stored or changed: a re-entrant gate's optimistic fallback makes the answers
    depend on which question is asked first, and the same instance must always mean the
    same thing (and the incremental path must match the full one).
    """
    current, excluded = _liveness(ev, occurrences)
    ev._final = current
    _field_statuses(ev, current, excluded, visit)
    compiled = ev.compiled
    for k in range(len(compiled.steps)):
        ev.step_complete[k] = current.step_done(k)
    ev.complete = current.form_complete()
    if compiled.checks:
        ev.failed_checks = [c for c in compiled.checks if not current.check_holds(c)]
    if compiled.derived and not ev.as_written:
        _derived_due(ev, current)
    _step_and_checkpoint_gates(ev, current)
    _choose_open_step(ev, instance.open_step_override)


def _liveness(ev: Evaluation, occurrences: dict[str, int]) -> tuple[_Pass, set[int]]:
    """The liveness fixpoint (docs/engine.md, 'Liveness and applicability'): start with everything
    live, drop what its gate rejects, repeat until the set stops shrinking. Shrink-only, so it
    always ends. The final pass, and the fields it excluded."""
    fields = ev.compiled.fields
    values = ev._base_values
    excluded: set[int] = set()
    current = _Pass(ev, excluded, occurrences, values)
    ev.passes = 1
    cap = len(fields) + 1
    gated = ev.compiled.gated_positions
    gated_answered = sorted(i for i in ev._in_force if i in gated)
    while gated_answered:
        newly = [i for i in gated_answered if i not in excluded and not current.field_applicable(i)]
        if not newly:
            break
        excluded = excluded | set(newly)
        ev.passes += 1
        if ev.passes > cap:
            ev._defect(f"repartition did not settle after {cap} passes ({len(fields)} fields)")
            break
        dropped = {fields[i].id for i in newly}
        values = {k: v for k, v in values.items() if k not in dropped}
        current = _Pass(ev, excluded, occurrences, values)
    return current, excluded


def _field_statuses(ev: Evaluation, current: _Pass, excluded: set[int], visit: list[int] | None) -> None:
    """Each visited field's applicability and status: held (an answer its gate excludes), filled
    (a valid live answer) or invalid, with its error in words."""
    fields = ev.compiled.fields
    gated = ev.compiled.gated_positions
    in_force, valid, status, applicable_list = ev._in_force, ev._valid, ev.status, ev.applicable
    for i in range(len(fields)) if visit is None else visit:
        field = fields[i]
        applicable = current.field_applicable(i) if i in gated else i not in excluded
        applicable_list[i] = applicable
        entry = in_force.get(i)
        if entry is None:
            continue
        if not applicable:
            status[i] = HELD
            ev.held[field.id] = entry.value
        elif i in valid:
            status[i] = FILLED
            ev.values[field.id] = valid[i]
            ev.live.add(field.id)
        else:
            status[i] = INVALID
            from formctl.forms.messages import field_error  # only for an invalid answer: views say it in words

            written = ev._written_errors.get(i)
            ev.errors[field.id] = written or field_error(field, parse_entry(field, entry)) or "invalid"


def _step_and_checkpoint_gates(ev: Evaluation, current: _Pass) -> None:
    """Which steps are open and which checkpoints active, over the final pass's values; a gate
    that raises counts as true, and is a defect."""
    for step in ev.compiled.steps:
        k = step.index
        if step.when is None:
            ev.step_open[k] = True
            continue
        try:
            ev.step_open[k] = bool(step.when(current.values, current.state))
        except Exception as exc:
            ev._defect(f'gate "step-gate:{step.id}" threw: {_message(exc)}')
            ev.step_open[k] = True
    for checkpoint in ev.compiled.checkpoints:
        try:
            ev.checkpoint_active[checkpoint.index] = bool(checkpoint.when(current.values, current.state))
        except Exception as exc:
            ev._defect(f'gate "{checkpoint.id}" threw: {_message(exc)}')
            ev.checkpoint_active[checkpoint.index] = True


def _derived_due(ev: Evaluation, final: _Pass) -> None:
    """Which derived fields' stored answers differ from what their functions give the live values
    (a held one is left as it is: it is not live, and comes back when its inputs do)."""
    from formctl.forms.validate import json_data  # only for a form with derived fields

    due: dict[str, tuple[Any, tuple[str, ...]]] = {}
    for field in ev.compiled.derived:
        i = field.order
        if not ev.applicable[i]:
            continue
        try:
            live, value, inputs = derive_value(ev.compiled, field, final.values)
            value = json_data(value)
        except Exception as exc:
            ev._defect(f'derive "{field.id}" threw: {_message(exc)}')
            continue
        entry = ev._in_force.get(i)
        if value is None and entry is None:
            continue  # nothing to write: it gives no value, and none is in force
        if live and (entry is None or entry.value != value or type(entry.value) is not type(value)):
            due[field.id] = (value, inputs)
    ev.derived_due = due


def _choose_open_step(ev: Evaluation, override: str | None) -> None:
    """The override if it names a step; else the first open, incomplete step; else the first incomplete."""
    compiled = ev.compiled
    if override is not None and override in compiled.step_by_id:
        k = compiled.step_by_id[override].index
        ev.open_step = k
        ev.revisiting = ev.step_complete[k]
        return
    for k in range(len(compiled.steps)):
        if ev.step_open[k] and not ev.step_complete[k]:
            ev.open_step = k
            return
    for k in range(len(compiled.steps)):
        if not ev.step_complete[k]:
            ev.open_step = k
            return
    # Every step done, but a check of the form's own fails: open the step of the first answer it reads.
    failing = next((c for c in ev.failed_checks if c.fields), None)
    ev.open_step = compiled.field_by_id[failing.fields[0]].step_index if failing is not None else None
