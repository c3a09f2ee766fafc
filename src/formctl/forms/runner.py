"""The runner: the only place that commits. Commit, then run.

Every write (start, fill, revise, retract, undo, redo, resolve_checkpoint, migrate, recover)
follows one cycle (docs/engine.md, "Commit then run"):

1. stage the revisions (validated once, and never again: :mod:`formctl.forms.staging`);
2. evaluate the stored instance (``before``) and the projected one (``after``), find the
   rising edges, and commit entries, occurrence counters and status in one
   compare-and-set write, under the adapter's lock when it offers one, else re-reading
   and re-applying on a conflict for up to two seconds (:mod:`formctl.forms.contention`);
3. only then run the executors the edges imply (:mod:`formctl.forms.executors`), in the
   fixed order (field ``on_fill``, step ``on_complete``, checkpoint ``run``, form
   ``on_complete``), each under its idempotency key ``instance:hook:occurrence``;
4. apply their effects in a closing commit, and write any patches in further rounds.

The reads are :class:`~formctl.forms.runner_reads.RunnerReads`; recovery and migration are
:mod:`formctl.forms.recovery`. Evaluations are cached per (instance id, version), so a
write evaluates the instance it stores once and the next operation starts from it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from formctl.errors import (
    ConflictError,
    FormDefinitionError,
    FormOpenError,
    FormStaleError,
    InvalidArgumentError,
    NotFoundError,
    NotWaitingError,
)
from formctl.forms.adapter import FormAdapter
from formctl.forms.compile import CompiledForm
from formctl.forms.contention import Attempts, serialised
from formctl.forms.evaluate import FILLED, HELD, Evaluation, evaluate, evaluate_change
from formctl.forms.executors import Dispatcher, Hook, RoundEffects
from formctl.forms.failures import Failure, open_failures
from formctl.forms.history import cursor_move
from formctl.forms.instance import ACTIVE, COMPLETE, UNSET, Commit, Instance, Provenance, now_iso
from formctl.forms.lifecycle import (
    check_closable,
    check_open_for_writes,
    check_ready_to_send,
    close,
    complete,
    drifted,
    is_closed,
    is_open,
)
from formctl.forms.project import (
    FillResult,
    FormView,
    MigrateResult,
    RecoverResult,
    field_row,
    step_view,
)
from formctl.forms.provenance import ModelWrite, judge
from formctl.forms.reading import DefaultInstance
from formctl.forms.recovery import migrate as migrate_instance
from formctl.forms.recovery import recover as recover_instance
from formctl.forms.registry import FormRegistry
from formctl.forms.runner_reads import RunnerReads
from formctl.forms.staging import (
    Staged,
    check_writable,
    closing_commit,
    project_write,
    required_invalid,
    resolution_commit,
    resolve_or_report,
    rising_edges,
    settle_status,
    stage,
    stage_patch,
)
from formctl.forms.validate import text_issue

MAX_ROUNDS = 8


def check_note(text: Any, what: str) -> None:
    """Refuse a reason, a rejection or a name that is not text the store can keep (not a
    string, a lone surrogate, a NUL), naming ``what`` and what is wrong, before anything is read."""
    if text is None:
        return
    if not isinstance(text, str):
        raise InvalidArgumentError(f"The {what} must be text, not {type(text).__name__}.")
    issue = text_issue(text)
    if issue is not None:
        raise InvalidArgumentError(f"The {what} is not text that can be kept: {issue.message}")


class FormRunner(RunnerReads):
    """Drives form instances for one subject over one adapter.

    ``default``: a conversation's instance. Given, calls without an ``instance_id`` act on it
    (while it is not abandoned) instead of on the subject's open form, and ``start`` moves it
    to the new instance; a chat shares one between its runners.
    """

    def __init__(
        self,
        adapter: FormAdapter,
        *,
        registry: FormRegistry,
        subject: str | Callable[[], str] = "default",
        actor: str = "agent",
        source: str | None = None,
        replaying: bool = False,
        default: DefaultInstance | None = None,
        kind: str = "host",
        clock: Callable[[], str] | None = None,
    ) -> None:
        self.adapter = adapter
        # Every time a write records (provenance, dispatch records, completed_at) comes from here:
        # an ISO-8601 UTC string. Staging never reads the clock itself.
        self.clock: Callable[[], str] = clock if clock is not None else _wall_clock
        self.registry = registry
        self._subject = subject
        self.actor = actor or "agent"
        self.source = source or "forms"
        self.kind = kind  # how this runner's plain writes arrived: "host" (docs/engine.md, "Provenance")
        self.default = default
        self.conflict_retries = 0
        self._cache: dict[str, tuple[int, CompiledForm, Evaluation]] = {}
        self._lock = threading.RLock()
        self._dispatcher = Dispatcher(adapter, self._provenance, self.clock)
        self.replaying = replaying

    @property
    def replaying(self) -> bool:
        """Executors see ``ctx.replaying`` (a transcript replay runs them for real)."""
        return self._dispatcher.replaying

    @replaying.setter
    def replaying(self, value: bool) -> None:
        self._dispatcher.replaying = value

    def _provenance(self, note: str | None = None, kind: str | None = None) -> Provenance:
        return Provenance(self.source, self.actor, self.clock(), note, kind or self.kind)

    # ------------------------------------------------------------------ writes

    def start(self, form_id: str, seed: dict[str, Any] | None = None) -> FillResult:
        """Start a new instance of ``form_id`` for the subject, seeding any values already known."""
        if seed is not None and not isinstance(seed, dict):
            raise InvalidArgumentError("seed must be an object of field ids to values.")
        compiled = self.registry.load(form_id)
        staged, result = stage(
            compiled, seed or {}
        )  # before the instance exists: a start that fails here writes nothing
        for item in staged:
            item.how = {"kind": "seed"}
        prov = self._provenance("start")
        with serialised(self.adapter, f"start:{compiled.id}:{self.subject}"):
            self._refuse_second_open(compiled.id)
            instance = self.adapter.create_instance(compiled.id, compiled.version, self.subject, prov)
        if self.default is not None:  # the conversation is about the new instance from now on
            self.default.instance_id = instance.id
        return self._write(compiled, instance, lambda inst: (staged, {}), result, note=None, is_start=True)

    def _refuse_second_open(self, form_id: str) -> None:
        """One open instance of a form per subject: a start while one is active, ready or awaiting
        is refused with ``form_open``. Asked under :func:`serialised`, so of two starts racing
        (two ``formctl run`` at once, a model's ``form_start`` beside a host's) one creates and
        the other is told which instance to continue (docs/store.md, "Two starts at once")."""
        for other in self.adapter.find_instances(subject=self.subject, def_id=form_id):
            if is_open(other):
                raise FormOpenError(
                    f'Form "{form_id}" is already open (instance {other.id}): continue it, '
                    "or abandon it before starting again."
                )

    def fill(
        self,
        values: dict[str, Any],
        instance_id: str | None = None,
        *,
        write: ModelWrite | None = None,
        how: dict[str, dict[str, Any]] | None = None,
    ) -> FillResult:
        """Write any fields, from any step. Each value is checked on its own; nothing is gated.

        ``write``: the values are a model's, with its quotes and the person's messages; each is
        judged (:mod:`formctl.forms.provenance`): a ``source="person"`` field's value the person's
        words don't hold is not stored but listed in the result's ``unconfirmed``, and a
        ``source="host"`` field's is refused. ``how``: the provenance of given fields, for a front
        end writing what the person confirmed (``{"email": {"kind": "confirmed", "quote": ...}}``).
        """
        if not isinstance(values, dict):
            raise InvalidArgumentError("values must be an object of field ids to values.")
        compiled, instance = self._writable(instance_id)
        staged, result = self._judged(compiled, instance, values, write, how)
        return self._write(compiled, instance, lambda inst: (staged, {}), result, note=None)

    def revise(
        self,
        field: str,
        value: Any,
        reason: str | None = None,
        instance_id: str | None = None,
        *,
        write: ModelWrite | None = None,
    ) -> FillResult:
        """Correct one field: a one-key fill whose provenance note records the reason."""
        check_note(reason, "reason")
        compiled, instance = self._writable(instance_id)
        staged, result = self._judged(compiled, instance, {field: value}, write, None)
        note = f"revision: {reason}" if reason else "revision"
        return self._write(compiled, instance, lambda inst: (staged, {}), result, note=note)

    @staticmethod
    def _judged(
        compiled: CompiledForm,
        instance: Instance,
        values: dict[str, Any],
        write: ModelWrite | None,
        how: dict[str, dict[str, Any]] | None,
    ) -> tuple[list[Staged], FillResult]:
        staged, result = stage(compiled, values)
        if write is not None:
            staged, result.unconfirmed, refused = judge(compiled, staged, write, instance)
            result.rejected.extend(refused)
        for key, given in (how or {}).items():
            field_id = compiled.resolve_field(key)
            for item in staged:
                if item.field_id == field_id:
                    item.how = {k: v for k, v in given.items() if v is not None}
        return staged, result

    def retract(self, field: str, reason: str | None = None, instance_id: str | None = None) -> FillResult:
        """Withdraw an answer: a retraction revision, so it can be undone."""
        check_note(reason, "reason")
        compiled, instance = self._writable(instance_id)
        result = FillResult(view=None)  # type: ignore[arg-type]
        field_id = resolve_or_report(compiled, field, result)
        if field_id is None:
            return self._result_only(compiled, instance, result)
        staged = [Staged(field_id, None, retract=True)]
        note = f"retracted: {reason}" if reason else "retracted"
        return self._write(compiled, instance, lambda inst: (staged, {}), result, note=note, moved=[field_id])

    def undo(self, field: str | None = None, instance_id: str | None = None) -> FillResult:
        """Move a field's cursor back one revision: the named field, or the last one touched."""
        return self._move(field, -1, instance_id)

    def redo(self, field: str | None = None, instance_id: str | None = None) -> FillResult:
        """Move a field's cursor forward one revision: the named field, or the oldest pending redo."""
        return self._move(field, +1, instance_id)

    def submit(self, instance_id: str | None = None) -> FillResult:
        """Send a form declared with ``review=True`` that is ``ready``: it becomes ``complete`` and
        its ``on_complete`` fires (docs/engine.md, "Review before sending").

        Takes no values: what is sent is what was read back. Raises NotReadyError
        (``form_not_ready``) when the form has no review, is not ready (an answer is missing, a
        check failed) or was already sent; the message says which.
        """
        compiled, instance = self._writable(instance_id)
        prov = self._provenance("submitted")

        def build(inst: Instance) -> Commit:
            check_ready_to_send(compiled, inst, self._evaluation(compiled, inst))
            commit = Commit()
            complete(commit, prov.timestamp)
            return commit

        check_ready_to_send(compiled, instance, self._evaluation(compiled, instance))
        with self._lock:
            failures: list[Failure] = []
            instance = self._commit_retrying(instance, build, prov)
            instance = self._fire_completion(compiled, instance, prov, failures)
            result = self._result_only(compiled, instance, FillResult(view=None))  # type: ignore[arg-type]
            result.failures = failures or result.failures
            result.view.step, result.view.fields = None, []  # what was sent is what was read back: no step to show
            return result

    def abandon(self, reason: str, instance_id: str | None = None) -> Instance:
        """Close the instance without finishing; every answer is kept."""
        if not isinstance(reason, str) or not reason.strip():
            raise InvalidArgumentError("abandon needs a reason.")
        check_note(reason, "reason")
        compiled, instance = self._resolve(instance_id, allow_stale=True)
        check_closable(compiled, instance)
        prov = self._provenance("abandoned")

        def build(inst: Instance) -> Commit:
            check_closable(compiled, inst)  # closed by another process since it was read
            commit = Commit()
            close(commit, reason)
            return commit

        return self._commit_retrying(instance, build, prov)

    def reopen(self, instance_id: str | None = None) -> FormView:
        """Host only: undo a forced completion, so the form reads complete only when its fields are."""
        compiled, instance = self._resolve(instance_id)
        prov = self._provenance("reopened")

        def build(inst: Instance) -> Commit:
            ev = self._evaluation(compiled, inst)
            status = inst.status
            if status == COMPLETE and not ev.complete:
                status = ACTIVE
            return Commit(forced_complete=False, status=status)

        instance = self._commit_retrying(instance, build, prov)
        return step_view(compiled, self._evaluation(compiled, instance), instance)

    def recover(self, instance_id: str | None = None) -> RecoverResult:
        """Re-run, under the same idempotency key, every executor a process that died left ``running``.

        An explicit write: the chat calls it when a conversation opens, a host when it likes;
        reads never do it, writes do it first. A form that can migrate is migrated first.
        """
        compiled, instance = self._resolve(instance_id, recover=False)
        result = RecoverResult(view=None)  # type: ignore[arg-type]
        if not is_closed(instance):
            instance, result.rerun, failures = recover_instance(self, compiled, instance)
        else:
            failures = []
        ev = self._evaluation(compiled, instance)
        result.view = step_view(compiled, ev, instance)
        result.failures = failures or open_failures(instance, compiled, ev)
        return result

    def migrate(self, instance_id: str | None = None) -> MigrateResult:
        """Move an instance to the registered version of its form, through the ordinary commit cycle.

        The form's ``migrate`` carries the answers if it has one; without one every answer to a
        field the new version still has is carried. Answers the new version accepts are kept,
        hooks fire on their rising edges; the rest are withdrawn (undoable) and reported in the
        result's ``rejected`` and ``dropped``. An instance already on that version is left alone.
        """
        compiled, instance = self._read(instance_id)
        check_open_for_writes(instance)
        if not drifted(compiled, instance):
            ev = self._evaluation(compiled, instance)
            result = MigrateResult(
                view=step_view(compiled, ev, instance), from_version=instance.def_version, to_version=compiled.version
            )
            result.failures = open_failures(instance, compiled, ev)
            return result
        return migrate_instance(self, compiled, instance)[1]

    def resolve_checkpoint(
        self,
        instance_id: str | None = None,
        fail: str | None = None,
        values: dict[str, Any] | None = None,
        checkpoint: str | None = None,
        *,
        actor: str | None = None,
        reason: str | None = None,
    ) -> FillResult:
        """The host's answer to a checkpoint: unblock it (or record ``fail``), then write any ``values``.

        Without ``checkpoint`` it resolves the one the instance is waiting on. A failed
        outcome becomes an open failure the agent sees; an ok outcome clears an earlier one.
        The resolution is recorded (docs/engine.md, "Checkpoints and waits"): who (``actor``,
        by default the runner's), when, approved or rejected, and why (``fail`` when rejected,
        ``reason`` when approved); ``formctl.forms.resolutions`` reads them back.
        """
        if values is not None and not isinstance(values, dict):
            raise InvalidArgumentError("values must be an object of field ids to values.")
        for text, what in ((fail, "rejection reason"), (reason, "reason"), (actor, "name of who resolves")):
            check_note(text, what)
        compiled, instance = self._resolve(instance_id)
        check_open_for_writes(instance)
        cp_id = checkpoint if checkpoint is not None else instance.blocked_on
        if cp_id is None:
            raise NotWaitingError(f'Form instance "{instance.id}" is not waiting on a checkpoint.')
        if cp_id not in compiled.checkpoint_by_id:
            raise NotFoundError(f'No checkpoint "{cp_id}" on form "{compiled.id}".')
        if actor is not None and (not isinstance(actor, str) or not actor.strip()):
            raise InvalidArgumentError("actor must name who resolves the checkpoint.")
        who = actor.strip() if actor is not None else self.actor
        prov = Provenance(
            self.source, who, self.clock(), "checkpoint rejected" if fail else "checkpoint resolved", "host"
        )
        why = (reason or None) if not fail else fail

        def build(inst: Instance) -> Commit:
            ev = self._evaluation(compiled, inst)
            return resolution_commit(compiled, inst, ev, cp_id, fail, who=who, why=why, now=prov.timestamp)

        was = instance.status
        instance = self._commit_retrying(instance, build, prov)
        if instance.status == COMPLETE and was != COMPLETE:
            instance = self._fire_completion(compiled, instance, prov, [])
        staged, result = stage(compiled, values or {})
        if not staged:
            return self._result_only(compiled, instance, result)
        return self._write(compiled, instance, lambda inst: (staged, {}), result, note="checkpoint values")

    def _resolve(
        self, instance_id: str | None = None, *, allow_stale: bool = False, recover: bool = True
    ) -> tuple[CompiledForm, Instance]:
        """For a write: the instance brought up to date first (migrated when its form can, its
        left-over dispatches recovered). A stale one raises FormStaleError unless ``allow_stale``."""
        compiled, instance = self._read(instance_id)
        if is_closed(instance):
            return compiled, instance
        if drifted(compiled, instance):
            if compiled.migrate is None:
                if not allow_stale:
                    raise FormStaleError(instance.def_version, compiled.version)
                return compiled, instance
            instance = migrate_instance(self, compiled, instance)[0]
        if recover:
            instance = recover_instance(self, compiled, instance)[0]
        return compiled, instance

    def _writable(self, instance_id: str | None) -> tuple[CompiledForm, Instance]:
        compiled, instance = self._resolve(instance_id)
        check_writable(compiled, instance)
        return compiled, instance

    def _reload(self, instance_id: str) -> Instance:
        instance = self.adapter.get_instance(instance_id)
        if instance is None:
            raise NotFoundError(f'No form instance "{instance_id}".')
        return instance

    @staticmethod
    def _changed_under_the_write(fresh: Instance) -> Instance:
        check_open_for_writes(fresh)  # closed under us: nothing more may be written
        return fresh

    def _commit_retrying(
        self, instance: Instance, build: Callable[[Instance], Commit | None], prov: Provenance
    ) -> Instance:
        """Commit ``build(instance)``; on a conflict re-read and rebuild (see :mod:`formctl.forms.contention`)."""
        attempts = Attempts(self.adapter, instance.id)
        for _ in attempts:
            if attempts.serialised:
                instance = self._reload(instance.id)
            commit = build(instance)
            if commit is None or commit.is_empty():
                return instance
            try:
                return self.adapter.commit_instance(instance.id, commit, if_version=instance.version, provenance=prov)
            except ConflictError:
                if attempts.expired():
                    raise
                self.conflict_retries += 1
                instance = self._reload(instance.id)
        raise AssertionError("unreachable")

    # ------------------------------------------------------------------ undo / redo

    def _move(self, field: str | None, step: int, instance_id: str | None) -> FillResult:
        compiled, instance = self._writable(instance_id)
        word = "undo" if step < 0 else "redo"
        result = FillResult(view=None)  # type: ignore[arg-type]
        field_id: str | None = None
        if field is not None:
            field_id = resolve_or_report(compiled, field, result)
            if field_id is None:
                return self._result_only(compiled, instance, result)

        moved: list[str] = []

        def plan(inst: Instance) -> tuple[list[Staged], dict[str, int]]:
            target, cursor = cursor_move(inst, field_id, step)
            moved[:] = [target]
            return [], {target: cursor}

        plan(instance)  # raise "nothing to undo" before any work
        return self._write(compiled, instance, plan, result, note=word, moved=moved)

    # ------------------------------------------------------------------ the commit cycle

    def _write(
        self,
        compiled: CompiledForm,
        instance: Instance,
        plan: Callable[[Instance], tuple[list[Staged], dict[str, int]]],
        result: FillResult,
        *,
        note: str | None,
        is_start: bool = False,
        extra: Callable[[Instance], dict[str, Any]] | None = None,
        moved: list[str] | None = None,
    ) -> FillResult:
        """Run the commit cycle and build the result. ``moved`` (filled by the time ``plan`` has run)
        names the field an undo, redo or retract moves; the result says what it holds now."""
        with self._lock:
            prov = self._provenance(note)
            staged_ids: list[str] = []
            failures: list[Failure] = []
            instance, first_staged = self._cycle(
                compiled, instance, plan, prov, failures, is_start=is_start, extra=extra
            )
            staged_ids.extend(first_staged)
            final = instance
            ev = self._evaluation(compiled, final)
            result.view = self._result_view(compiled, ev, final, staged_ids)
            for field_id in dict.fromkeys(staged_ids):
                status = ev.field_status(field_id)
                if status == FILLED:
                    result.captured.append(field_id)
                elif status == HELD:
                    result.held.append(field_id)
            result.failures = failures or open_failures(final, compiled, ev)
            if moved and moved[0] in compiled.field_by_id:
                result.moved = field_row(compiled, ev, final, moved[0])
            return result

    def _result_view(
        self, compiled: CompiledForm, ev: Evaluation, instance: Instance, staged_ids: list[str]
    ) -> FormView:
        if ev.open_step is None and staged_ids:
            return step_view(compiled, ev, instance, compiled.steps[compiled.field_by_id[staged_ids[0]].step_index].id)
        return step_view(compiled, ev, instance)

    def _result_only(self, compiled: CompiledForm, instance: Instance, result: FillResult) -> FillResult:
        ev = self._evaluation(compiled, instance)
        result.view = step_view(compiled, ev, instance)
        result.failures = open_failures(instance, compiled, ev)
        return result

    def _cycle(
        self,
        compiled: CompiledForm,
        instance: Instance,
        plan: Callable[[Instance], tuple[list[Staged], dict[str, int]]],
        prov: Provenance,
        failures: list[Failure],
        *,
        is_start: bool = False,
        extra: Callable[[Instance], dict[str, Any]] | None = None,
        round_no: int = 0,
    ) -> tuple[Instance, list[str]]:
        """One commit round and the rounds its patches cause. Returns the final instance and staged ids."""
        attempts = Attempts(self.adapter, instance.id)
        for _ in attempts:
            if attempts.serialised:
                fresh = self._reload(instance.id)
                if fresh.version != instance.version:
                    instance = self._changed_under_the_write(fresh)
            staged, moves = plan(instance)
            before = Evaluation(compiled) if is_start else self._evaluation(compiled, instance)
            entries_commit, projected, appended = project_write(instance, staged, moves, prov)
            fired_before = instance.occurrences
            if is_start:
                after = evaluate(compiled, projected, fired=fired_before)
            else:
                after = evaluate_change(compiled, before, projected, entries_commit, fired=fired_before)
            if after.defects:
                raise FormDefinitionError(
                    f'Form "{compiled.id}" cannot be evaluated: {"; ".join(after.defects)}.', after.defects
                )
            queue, occurrences = rising_edges(compiled, instance, before, after, entries_commit)
            commit = Commit(entries=entries_commit or None, occurrences=occurrences or None)
            if appended:
                commit.revision_seq = instance.revision_seq + len(appended)
            forced_after = instance.forced_complete and not required_invalid(compiled, after)
            if instance.forced_complete and not forced_after:
                commit.forced_complete = False
            stored_status = instance.status
            extra_fields = extra(instance) if extra is not None else {}
            if extra_fields.get("status") is not None:
                stored_status = extra_fields["status"]
            for name, value in extra_fields.items():
                setattr(commit, name, value)
            settle_status(
                commit,
                compiled,
                instance,
                queue,
                after,
                projected,
                stored_status,
                forced_after,
                prov.timestamp,
                changes_answers=round_no == 0 and bool(entries_commit),
            )
            # The form's on_complete fires on the rising edge of the *status*: so a form waiting on a
            # person, or held by a rejected blocking checkpoint, completes (and announces it) only
            # once it really is complete, and a forced completion is announced exactly once.
            completes = commit.status == COMPLETE and instance.status != COMPLETE
            if completes:
                n = instance.occurrences.get("form", 0) + 1
                commit.occurrences = {**(commit.occurrences or {}), "form": n}
                if compiled.on_complete is not None:
                    queue.append(Hook("form", compiled.on_complete, n))
            try:
                committed = self.adapter.commit_instance(
                    instance.id, commit, if_version=instance.version, provenance=prov
                )
            except ConflictError:
                if attempts.expired():
                    raise
                self.conflict_retries += 1
                instance = self._changed_under_the_write(self._reload(instance.id))
                continue
            break
        if not after.read_fired:
            self._remember(committed, compiled, after)
        staged_ids = [s.field_id for s in staged]
        set_completed_now = commit.completed_at is not UNSET

        effects = self._dispatcher.dispatch(compiled, committed, queue, after, fired_before, failures)
        if queue:
            # Re-read, so the closing commit and the result see the dispatch
            # records (written outside compare-and-set, without a version bump).
            committed = self._reload(committed.id)
        committed = self._finish_round(
            compiled,
            committed,
            effects,
            prov,
            failures,
            appended_fields=[s.field_id for s in staged],
            set_completed_now=set_completed_now,
            round_no=round_no,
        )
        return committed, staged_ids

    def _close(
        self,
        compiled: CompiledForm,
        committed: Instance,
        effects: RoundEffects,
        prov: Provenance,
        *,
        appended_fields: list[str],
        set_completed_now: bool,
    ) -> Instance:
        """The closing commit of a round: unblock, jump or release the override, settle the status."""

        def build(inst: Instance) -> Commit:
            return closing_commit(
                compiled,
                inst,
                effects,
                lambda i: self._evaluation(compiled, i),
                appended_fields=appended_fields,
                set_completed_now=set_completed_now,
                now=self.clock(),
            )

        return self._commit_retrying(committed, build, prov)

    def _close_and_announce(
        self,
        compiled: CompiledForm,
        committed: Instance,
        effects: RoundEffects,
        prov: Provenance,
        failures: list[Failure],
        *,
        appended_fields: list[str],
        set_completed_now: bool,
    ) -> Instance:
        """Close the round; if that moved the status into complete, announce it (form on_complete)."""
        was = committed.status
        closed = self._close(
            compiled, committed, effects, prov, appended_fields=appended_fields, set_completed_now=set_completed_now
        )
        if closed.status == COMPLETE and was != COMPLETE:
            closed = self._fire_completion(compiled, closed, prov, failures)
        return closed

    def _fire_completion(
        self, compiled: CompiledForm, instance: Instance, prov: Provenance, failures: list[Failure]
    ) -> Instance:
        """Bump the form's occurrence counter, then run its on_complete (commit, then run)."""

        def build(inst: Instance) -> Commit:
            return Commit(occurrences={"form": inst.occurrences.get("form", 0) + 1})

        instance = self._commit_retrying(instance, build, prov)
        if compiled.on_complete is None:
            return instance
        occurrence = instance.occurrences["form"]
        ev = self._evaluation(compiled, instance)
        effects = RoundEffects()
        self._dispatcher.run_hook(
            compiled,
            instance,
            Hook("form", compiled.on_complete, occurrence),
            ev.gate_values(),
            ev.frozen_state(instance.occurrences),
            effects,
            failures,
        )
        instance = self._reload(instance.id)
        # set_completed_now: the status has just risen into complete, so a Terminate from the
        # on_complete leaves the form never completed , as in the main round.
        return self._finish_round(
            compiled, instance, effects, prov, failures, appended_fields=[], set_completed_now=True, round_no=0
        )

    def _finish_round(
        self,
        compiled: CompiledForm,
        committed: Instance,
        effects: RoundEffects,
        prov: Provenance,
        failures: list[Failure],
        *,
        appended_fields: list[str],
        set_completed_now: bool,
        round_no: int,
    ) -> Instance:
        """Close the round (announcing a completion it causes), then write its hooks' patches as the next round."""
        instance = self._close_and_announce(
            compiled,
            committed,
            effects,
            prov,
            failures,
            appended_fields=appended_fields,
            set_completed_now=set_completed_now,
        )
        if effects.terminate is None and effects.patch and round_no < MAX_ROUNDS:
            staged = stage_patch(compiled, effects.patch, effects.patched_by)
            if staged:
                instance, _ = self._cycle(
                    compiled, instance, lambda inst: (staged, {}), prov, failures, round_no=round_no + 1
                )
        return instance


def _wall_clock() -> str:
    return now_iso()  # looked up when called, so a test's clock fixture reaches it
