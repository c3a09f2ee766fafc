"""Staging: what a write will do, decided before anything is committed. Pure functions.

A write's values are checked one by one (``stage``), turned into the entry changes and the
projected instance (``project_write``); comparing the evaluations before and after gives
the rising edges (``rising_edges``: the hooks to run and the counters to bump, docs/engine.md
"Staging and rising edges"), and the commits that settle a round's status (by the rules of
:mod:`formctl.forms.lifecycle`). Nothing here reads the clock: the time is passed in. The
runner commits what these decide.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, NamedTuple

from formctl.errors import FormBlockedError, MigrationError
from formctl.forms.binding import bound_fields, rebound
from formctl.forms.commit import apply_entry_commit
from formctl.forms.compile import CompiledForm
from formctl.forms.evaluate import INVALID, Evaluation, evaluate_change, remember_parse
from formctl.forms.executors import Hook, RoundEffects
from formctl.forms.failures import open_failures
from formctl.forms.instance import (
    ABANDONED,
    ACTIVE,
    AWAITING,
    COMPLETE,
    DISPATCH_FAILED,
    DISPATCH_OK,
    UNSET,
    Commit,
    DispatchState,
    Entry,
    EntryCommit,
    Instance,
    Provenance,
    failed_hook_ids,
)
from formctl.forms.lifecycle import await_host, check_open_for_writes, close, is_closed, move_to, settle
from formctl.forms.messages import rejection
from formctl.forms.project import Rejected, Unknown, WriteReport
from formctl.forms.resolutions import resolution_key
from formctl.forms.validate import json_data, size_issue


def is_blank(value: Any) -> bool:
    """Blank means "leave it alone": None, "", whitespace, or an object whose leaves are all blank.

    Models send "" for "I don't know", which must not wipe an answer; withdrawing one is
    ``retract`` (docs/engine.md, 'The answer log').
    """
    if value is None:
        return True
    if isinstance(value, str):
        return not value.strip()
    if isinstance(value, dict):
        return all(is_blank(v) for v in value.values())
    return False


@dataclass(slots=True)
class Staged:
    """One value a write will append to a field's log (validated once, here), or a retraction."""

    field_id: str
    value: Any
    outcome: Any = None
    validator: Any = None
    retract: bool = False
    how: dict[str, Any] | None = None  # how this value arrived, when not as the write's provenance says


def stage(compiled: CompiledForm, values: dict[str, Any]) -> tuple[list[Staged], WriteReport]:
    """Check each value on its own against its field: blanks ignored, unknown ids and invalid values reported.

    Invalid values are still staged (written with their error, so the person sees them); values with no
    JSON form are not. A later key for the same field wins.
    """
    result = WriteReport()
    staged: dict[str, Staged] = {}
    for key, value in values.items():
        # Measured before anything walks it: a value too big to store is refused, not kept
        # (docs/engine.md, "Validation").
        known = compiled.resolve_field(key)
        limit = compiled.field_by_id[known].text_limit(compiled.max_text) if known else compiled.max_text
        too_big = size_issue(value, limit)
        not_data = None
        if too_big is None:
            raw = value
            try:
                value = json_data(value)
            except ValueError as exc:
                not_data = str(exc)
            if not_data is None and value is not raw and type(raw) not in (dict, list):
                too_big = size_issue(value, limit)  # a host's Python value, now as JSON spells it
        if too_big is None and not_data is None and is_blank(value):
            result.ignored.append(str(key))
            continue
        field_id = resolve_or_report(compiled, key, result)
        if field_id is None:
            continue
        field = compiled.field_by_id[field_id]
        if field.derive is not None:
            result.rejected.append(Rejected(field_id, derived_refusal(field.label), None, "derived_field"))
            continue
        if too_big is not None:
            hint = f"Send at most {limit:,} characters." if too_big.kind == "too_long" else None
            result.rejected.append(Rejected(field_id, too_big.message, hint, too_big.kind))
            continue
        if not_data is not None:
            # A value with no JSON form cannot be stored (a JSON store could not hold it,
            # and it could never parse): reported like an invalid one, but not written.
            result.rejected.append(
                Rejected(field_id, f"Value is not JSON data ({not_data}).", f"Send {field.type}.", "not_json")
            )
            continue
        outcome = field.validator.validate(value)
        if not outcome.ok:
            for issue in outcome.issues:
                result.rejected.append(Rejected(field_id, *rejection(field, issue, value)))
        staged.pop(field_id, None)  # a later key for the same field wins, at its own position
        staged[field_id] = Staged(field_id, value, outcome, field.validator)
    return list(staged.values()), result


def derived_refusal(label: str) -> str:
    """What a write to a derived field is told (docs/engine.md, "Derived values")."""
    return f"{label} is worked out from other answers; it can't be set, it follows them."


@dataclass(slots=True)
class Projection:
    """What a write does to the entries (:func:`project_write`): the entry changes its commit
    carries, the instance as it would be after them, and the revisions it appends."""

    changes: dict[str, EntryCommit]
    instance: Instance
    appended: list[Entry]

    def extend(self, more: Projection) -> None:
        """Add a further projection over :attr:`instance` (the derived values it implies) to this one."""
        for field_id, change in more.changes.items():
            prior = self.changes.get(field_id)
            self.changes[field_id] = change if prior is None else EntryCommit(append=prior.append + change.append)
        self.appended.extend(more.appended)
        self.instance = more.instance


def follow_derived(
    compiled: CompiledForm, after: Evaluation, projection: Projection, prov: Provenance, fired: dict[str, int]
) -> Evaluation:
    """Write, into the write's own commit (``projection`` grows), what the derived fields'
    functions give the live values, until they agree (a derived value may feed another); the
    evaluation of the instance they give. Each is an engine revision: provenance ``derived``,
    naming the inputs' revisions in force."""
    for _ in range(len(compiled.derived) + 1):
        if not after.derived_due or after.defects:
            return after
        staged = [
            _derived_value(compiled, projection.instance, field_id, due) for field_id, due in after.derived_due.items()
        ]
        more = project_write(projection.instance, staged, {}, prov)
        projection.extend(more)
        after = evaluate_change(compiled, after, projection.instance, more.changes, fired=fired)
    after.defects.append(f"the derived fields did not settle after {len(compiled.derived) + 1} rounds")
    return after


def _derived_value(
    compiled: CompiledForm, projected: Instance, field_id: str, due: tuple[Any, tuple[str, ...]]
) -> Staged:
    """A derived field's new value (None: withdrawn) as an engine revision naming its inputs."""
    value, inputs = due
    validator = compiled.field_by_id[field_id].validator
    named = ", ".join(f"{i}@{seq}" for i in inputs if (seq := _seq_in_force(projected, i)) is not None)
    how = {"kind": "derived", "inputs": named or None}
    if value is None:
        return Staged(field_id, None, retract=True, how=how)
    return Staged(field_id, value, validator.validate(value), validator, how=how)


def _seq_in_force(instance: Instance, field_id: str) -> int | None:
    log = instance.entries.get(field_id)
    entry = log.at_cursor if log is not None else None
    return entry.seq if entry is not None else None


def resolve_or_report(compiled: CompiledForm, sent: Any, result: WriteReport) -> str | None:
    """The field id ``sent`` names (forgivingly); an unknown one is reported in ``result`` and gives None."""
    field_id = compiled.resolve_field(sent)
    if field_id is None:
        result.unknown.append(Unknown(str(sent), tuple(compiled.did_you_mean(sent))))
        return None
    if field_id != sent:
        result.renamed.append((str(sent), field_id))
    return field_id


def project_write(instance: Instance, staged: list[Staged], moves: dict[str, int], prov: Provenance) -> Projection:
    """The entry changes of a write, the instance as it would be after them, and the revisions appended."""
    projected = instance.copy()
    changes: dict[str, EntryCommit] = {}
    appended: list[Entry] = []
    seq = instance.revision_seq
    for item in staged:
        seq += 1
        p = dataclasses.replace(prov, **item.how) if item.how else prov
        if item.retract:
            entry = Entry(seq, None, p, retracted=True)
        else:
            entry = Entry(seq, item.value, p, error=item.outcome.error)
            remember_parse(entry, item.validator, item.outcome)  # validated once, when written
        appended.append(entry)
        change = EntryCommit(append=(entry,))
        changes[item.field_id] = change
        projected.entries[item.field_id] = apply_entry_commit(projected.entries.get(item.field_id), change)
    for field_id, cursor in moves.items():
        change = EntryCommit(cursor=cursor)
        changes[field_id] = change
        projected.entries[field_id] = apply_entry_commit(projected.entries.get(field_id), change)
    projected.revision_seq = seq
    return Projection(changes, projected, appended)


def stage_patch(
    compiled: CompiledForm, patch: dict[str, Any], patched_by: dict[str, str] | None = None
) -> list[Staged]:
    """A hook's Patch as staged values (its effects were checked: unknown ids and non-JSON values refused),
    each carrying provenance ``executor`` and the hook that set it."""
    staged: dict[str, Staged] = {}
    for key, value in patch.items():
        field_id = compiled.resolve_field(key)
        if field_id is None:
            continue
        value = json_data(value)  # check_effects has refused values with no JSON form
        if is_blank(value):
            continue
        field = compiled.field_by_id[field_id]
        if field.derive is not None:
            continue  # check_effects failed the hook that tried
        staged.pop(field_id, None)
        hook = (patched_by or {}).get(key)
        staged[field_id] = Staged(
            field_id,
            value,
            field.validator.validate(value),
            field.validator,
            how={"kind": "executor", "hook": hook} if hook else {"kind": "executor"},
        )
    return list(staged.values())


def check_writable(compiled: CompiledForm, instance: Instance) -> None:
    """Refuse a write to a closed instance, or to one waiting on a blocking checkpoint."""
    check_open_for_writes(instance)
    if instance.status == AWAITING and instance.blocked_on:
        cp = compiled.checkpoint_by_id.get(instance.blocked_on)
        raise FormBlockedError(instance.blocked_on, cp.wait_message if cp is not None else None)


def required_invalid(compiled: CompiledForm, ev: Evaluation) -> bool:
    """Some required field holds an invalid answer (a forced completion does not survive that)."""
    return any(f.required and ev.status[f.order] == INVALID for f in compiled.fields)


def rising_edges(
    compiled: CompiledForm,
    instance: Instance,
    before: Evaluation,
    after: Evaluation,
    changed: Collection[str] = (),
) -> tuple[list[Hook], dict[str, int]]:
    """Field, step and checkpoint hooks to run, in the fixed order, and the counters their edges bump.

    ``changed`` names the fields the write appended to or moved. The form's own edge is the
    status moving into complete; the cycle adds it.
    """
    edges = _Edges(compiled, instance, before, after, changed)
    edges.of_fields()
    edges.of_steps()
    edges.of_checkpoints()
    return edges.queue, edges.bumped


class _Edges:
    """The rising edges of one write, found in the fixed order: the hooks queued and the counters bumped."""

    __slots__ = ("after", "before", "bumped", "changed", "compiled", "instance", "queue", "_failed")

    def __init__(
        self,
        compiled: CompiledForm,
        instance: Instance,
        before: Evaluation,
        after: Evaluation,
        changed: Collection[str],
    ) -> None:
        self.compiled, self.instance, self.before, self.after, self.changed = compiled, instance, before, after, changed
        self.bumped: dict[str, int] = {}
        self.queue: list[Hook] = []
        # The failed hooks are read from the dispatch log only when some hook could run again.
        self._failed: frozenset[str] | None = None

    def bump(self, key: str) -> int:
        n = self.instance.occurrences.get(key, 0) + 1
        self.bumped[key] = n
        return n

    def failed_last(self, key: str) -> bool:
        """A check that failed runs again when what it checked is answered again (docs/engine.md,
        "Staging and rising edges"): otherwise a step's on_complete that said "the return date
        is before the departure" would stay failed after the person corrected the date."""
        if self._failed is None:
            self._failed = _failed_hooks(self.compiled, self.instance, self.before)
        return key in self._failed

    def of_fields(self) -> None:
        before, after, changed, reruns = self.before, self.after, self.changed, self.compiled.reruns
        before_live = before.live
        for field in self.compiled.fields:
            fid = field.id
            if fid in after.live and (
                fid not in before_live
                or (field.on_fill is not None and fid in changed and self.failed_last(f"field:{fid}"))
                or (reruns and field.rerun is not None and fid in changed and _changed_value(before, after, fid))
            ):
                n = self.bump(f"field:{fid}")
                if field.on_fill is not None:
                    self.queue.append(Hook(f"field:{fid}", field.on_fill, n))

    def of_steps(self) -> None:
        before, after, changed, reruns = self.before, self.after, self.changed, self.compiled.reruns
        for step in self.compiled.steps:
            k = step.index
            if not after.step_complete[k]:
                continue
            if (
                not before.step_complete[k]
                or (
                    step.on_complete is not None
                    and any(f.id in changed for f in step.fields)
                    and self.failed_last(f"step:{step.id}")
                )
                or (
                    reruns
                    and step.rerun is not None
                    and any(
                        f.id in changed and f.id in after.live and _changed_value(before, after, f.id)
                        for f in step.fields
                    )
                )
            ):
                n = self.bump(f"step:{step.id}")
                if step.on_complete is not None:
                    self.queue.append(Hook(f"step:{step.id}", step.on_complete, n))

    def of_checkpoints(self) -> None:
        before, after, stored = self.before, self.after, self.instance.occurrences
        for cp in self.compiled.checkpoints:
            if not after.checkpoint_active[cp.index]:
                continue
            # A firing is bound to what it decided on: a change to a value its condition read (or
            # that it watches) while the condition holds is a new occurrence (docs/engine.md,
            # "Checkpoints and waits").
            if not before.checkpoint_active[cp.index] or (
                stored.get(f"checkpoint:{cp.id}", 0) > 0 and rebound(self.compiled, cp, before, after, stored)
            ):
                n = self.bump(f"checkpoint:{cp.id}")
                self.queue.append(Hook(f"checkpoint:{cp.id}", cp.run, n, cp))


def _changed_value(before: Evaluation, after: Evaluation, field_id: str) -> bool:
    """The field's live value is not what it was: what ``rerun="on_change"`` runs an executor again
    for (docs/engine.md, "Executors that follow corrections"). The same value given again is no change."""
    was, now = before.values.get(field_id, _NONE), after.values.get(field_id, _NONE)
    return was is _NONE or was != now or type(was) is not type(now)


_NONE: Any = object()


def _failed_hooks(compiled: CompiledForm, instance: Instance, ev: Evaluation) -> frozenset[str]:
    """The field and step hooks whose latest run failed (cheap when nothing ever failed)."""
    if not failed_hook_ids(instance):
        return frozenset()
    return frozenset(
        f.hook_id for f in open_failures(instance, compiled, ev) if f.hook_id.startswith(("field:", "step:"))
    )


# RoundEnd and Settling are NamedTuples, built on every round: see formctl.forms.write's WriteContext.
class RoundEnd(NamedTuple):
    """What a round leaves to its closing commit (:func:`closing_commit`): what its hooks asked
    for (``effects``), the fields it appended to (a step jumped to is released once one of them
    is answered), and whether its own commit stamped a completion (a Terminate then unstamps it)."""

    effects: RoundEffects
    appended_fields: list[str]
    set_completed_now: bool


def closing_commit(
    compiled: CompiledForm,
    inst: Instance,
    end: RoundEnd,
    evaluation: Callable[[Instance], Evaluation],
    clock: Callable[[], str],
) -> Commit:
    """The closing commit of a round over ``inst``: unblock, jump or release the override, settle
    the status (a completion stamped with ``clock()``, read only then: most rounds complete
    nothing, and reading the clock on every round showed in benchmarks/engine.py's per-operation
    median)."""
    effects = end.effects
    commit = Commit()
    if effects.waiting_on is not None:
        await_host(commit, effects.waiting_on, inst)
    elif inst.blocked_on is not None and inst.blocked_on in effects.checkpoints_run:
        commit.blocked_on = None
    # A host wait begun by an earlier round (seen here from its patch round) holds until resolved.
    still_waiting = effects.waiting_on is None and inst.blocked_on is not None and commit.blocked_on is UNSET
    _steer(compiled, inst, end, commit)
    if effects.terminate is not None:
        _terminate(inst, end, commit, effects.terminate)
        return commit
    if effects.complete and not inst.forced_complete:
        commit.forced_complete = True  # kept while waiting, so it lands when the host resolves
    if effects.waiting_on is not None or still_waiting:
        return commit
    forced = effects.complete or inst.forced_complete
    status = settle(compiled, evaluation(inst), inst, forced)
    if inst.status != status and not is_closed(inst):
        move_to(commit, status, clock, completed_at=inst.completed_at)
    return commit


def _steer(compiled: CompiledForm, inst: Instance, end: RoundEnd, commit: Commit) -> None:
    """The open step a hook's Jump asked for, or the override released once the round answered
    a field of the step it named."""
    jump = end.effects.jump
    if jump is not None:
        if inst.open_step_override != jump:
            commit.open_step_override = jump
    elif inst.open_step_override is not None:
        override_step = inst.open_step_override
        fields = compiled.field_by_id
        if any(fields[f].step_id == override_step for f in end.appended_fields if f in fields):
            commit.open_step_override = None


def _terminate(inst: Instance, end: RoundEnd, commit: Commit, reason: str) -> None:
    """A hook's Terminate: closed, the override and any wait released, a completion this round
    stamped taken back (a terminated form never completed), a forced completion undone."""
    close(commit, reason)
    if inst.open_step_override is not None or end.effects.jump is not None:
        commit.open_step_override = None
    if inst.blocked_on is None:
        commit.blocked_on = UNSET  # nothing to release: the commit stays as small as it was
    if end.set_completed_now and inst.completed_at is not None:
        commit.completed_at = None
    if inst.forced_complete:
        commit.forced_complete = False


class Settling(NamedTuple):
    """What settles the status of a round's main commit (:func:`settle_status`).

    ``instance``: as stored; ``stored_status``: its status as the commit starts from (an
    operation may reopen it in the same commit); ``projected`` and ``after``: the instance after
    the write and its evaluation; ``queue``: the hooks its edges queued; ``forced_after``: a
    forced completion that survives the write; ``changes_answers``: the write changes the
    answers of a form already sent (not a hook's patch), so it needs sending again.
    """

    instance: Instance
    stored_status: str
    projected: Instance
    after: Evaluation
    queue: list[Hook]
    forced_after: bool
    changes_answers: bool = False


def settle_status(commit: Commit, compiled: CompiledForm, round_: Settling, now: str) -> None:
    """Set on ``commit`` the status a write's main commit lands in: awaiting a blocking checkpoint
    its edges activated, complete (or ready, under review) when it completes the form, active
    again when it undoes that."""
    stored_status = round_.stored_status
    blocking = next((h.checkpoint for h in round_.queue if h.checkpoint is not None and h.checkpoint.blocking), None)
    sent = stored_status == COMPLETE and not round_.changes_answers
    target = settle(compiled, round_.after, round_.projected, round_.forced_after, sent=sent)
    if stored_status == AWAITING and round_.instance.blocked_on:
        # A patch round (or a recovery) written while a checkpoint waits for the host:
        # the wait holds, and the status with it, until resolve_checkpoint settles it.
        pass
    elif blocking is not None:
        await_host(commit, blocking.id)
    elif stored_status == ABANDONED:
        pass
    elif target != stored_status:
        # Into complete (with completed_at), into or out of ready, back to active after a
        # correction, a wait without a checkpoint released, or a stale status written by an
        # older formctl settled again.
        move_to(commit, target, now)


@dataclass(frozen=True, slots=True)
class Decision:
    """A host's answer to one checkpoint: approved (``fail`` None) or rejected with ``fail``; who
    decided, why, when, and the rule they set aside to decide (``override``), if any."""

    checkpoint: str
    fail: str | None
    who: str
    why: str | None
    at: str
    override: str | None = None


def resolution_commit(compiled: CompiledForm, inst: Instance, ev: Evaluation, decision: Decision) -> Commit:
    """The host's answer to a checkpoint as a commit: a record of its own (ok, or failed with the
    reason; who and why), the wait released, and the status settled if the answer settles it."""
    cp_id, fail = decision.checkpoint, decision.fail
    key = resolution_key(inst, cp_id)
    covers = bound_fields(compiled, compiled.checkpoint_by_id[cp_id], ev, inst.occurrences)
    record = DispatchState(
        f"checkpoint:{cp_id}",
        DISPATCH_FAILED if fail else DISPATCH_OK,
        1,
        decision.at,
        fail if fail else None,
        actor=decision.who,
        reason=decision.why,
        covers=covers,
        override=decision.override,
    )
    commit = Commit(dispatches={key: record})
    if inst.blocked_on == cp_id:
        commit.blocked_on = None
    if inst.status == AWAITING or (fail is None and inst.status == ACTIVE):
        projected = inst.copy()
        projected.put_dispatches({key: record})
        status = settle(compiled, ev, projected, inst.forced_complete)
        if status != inst.status:
            move_to(commit, status, decision.at, completed_at=inst.completed_at)
    return commit


def plan_migration(compiled: CompiledForm, instance: Instance) -> tuple[list[Staged], list[Rejected], dict[str, Any]]:
    """What moving ``instance`` to ``compiled`` writes: the staged values, the carried values the
    new version refuses, and the old answers nothing carried (by field id, with their values).

    The form's ``migrate`` carries the answers (without one, every answer to a field the new
    version still has); carried values the new version accepts are staged, the rest withdrawn
    and reported in ``rejected``; old answers nothing carried are withdrawn and listed in ``dropped``.
    """
    old_values = instance.in_force_values()
    rejected: list[Rejected] = []
    staged: dict[str, Staged] = {}
    kept: set[str] = set()
    refused: set[str] = set()
    for key, value in _carried(compiled, instance.def_version, old_values).items():
        field_id = compiled.resolve_field(key)
        if field_id is None:
            continue
        value = _carried_data(compiled, key, value)
        if is_blank(value):
            continue
        field = compiled.field_by_id[field_id]
        if field.derive is not None:
            kept.add(field_id)  # not carried: the commit computes it again from the carried answers
            continue
        outcome = field.validator.validate(value)
        if not outcome.ok:
            refused.add(field_id)
            rejected.extend(Rejected(field_id, *rejection(field, issue, value)) for issue in outcome.issues)
            continue
        kept.add(field_id)
        if field_id not in old_values or old_values[field_id] != value:
            staged[field_id] = Staged(field_id, value, outcome, field.validator)
    kept.update(compiled.derived_ids.intersection(old_values))  # recomputed by the commit, never withdrawn
    dropped: dict[str, Any] = {}
    for field_id, value in old_values.items():
        if field_id not in kept:
            staged[field_id] = Staged(field_id, None, retract=True)
            if field_id not in refused:
                dropped[field_id] = value
    return list(staged.values()), rejected, dropped


def _carried(compiled: CompiledForm, old_version: int, old_values: dict[str, Any]) -> dict[str, Any]:
    """The answers the new version is given: what the form's ``migrate`` returns, else every
    answer to a field the new version still has."""
    if compiled.migrate is None:
        return {key: value for key, value in old_values.items() if key in compiled.field_by_id}
    try:
        carried = compiled.migrate(dict(old_values), old_version)
    except Exception as exc:
        raise MigrationError(
            f'Migrating "{compiled.id}" from version {old_version} to {compiled.version} failed: {exc}',
        ) from exc
    if not isinstance(carried, dict):
        raise MigrationError(
            f'migrate() for "{compiled.id}" must return a dict of values, not {type(carried).__name__}.',
        )
    return carried


def _carried_data(compiled: CompiledForm, key: str, value: Any) -> Any:
    try:
        return json_data(value)
    except ValueError as exc:
        raise MigrationError(
            f'migrate() for "{compiled.id}" returned a value for "{key}" that is not JSON data ({exc}).',
        ) from None
