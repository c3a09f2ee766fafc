"""The runner: the only place that commits. Commit, then run.

Every write (start, fill, revise, retract, undo, redo, submit, resolve_checkpoint, migrate,
recover) is one :class:`~formctl.forms.write.Write`, which runs the commit cycle
(docs/engine.md, "Commit then run") and builds the result once, at the end. The runner decides
what each operation stages, checks it may be written, and hands the write its collaborators:
the adapter, the dispatcher, the evaluations it shares with the reads, the provenance and the
clock. The reads are a :class:`~formctl.forms.runner_reads.Reads` the runner holds (composed,
not inherited); recovery and migration are :mod:`formctl.forms.recovery`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from formctl.errors import (
    DerivedFieldError,
    FormError,
    FormOpenError,
    FormStaleError,
    InstanceClosedError,
    InvalidArgumentError,
    NotFoundError,
    NotWaitingError,
    StoreError,
)
from formctl.forms.acts import Act, act_dispatch, moved_detail
from formctl.forms.adapter import DamageReport, FormAdapter, KeepsPrograms, Watchable, Watcher
from formctl.forms.compile import CompiledForm
from formctl.forms.contention import serialised
from formctl.forms.evaluate import Evaluation
from formctl.forms.executors import Dispatcher
from formctl.forms.history import FieldHistory, cursor_move
from formctl.forms.instance import ABANDONED, AWAITING, COMPLETE, Commit, Instance, Provenance, now_iso
from formctl.forms.lifecycle import (
    check_closable,
    check_open_for_writes,
    check_ready_to_send,
    close,
    complete,
    drifted,
    is_closed,
    is_complete,
    is_open,
    reopen,
)
from formctl.forms.project import FillResult, FormView, MigrateResult, RecoverResult, WriteReport, step_view
from formctl.forms.reading import Continuation, DefaultInstance, InstanceSummary, InstanceView, Listing, Stamp
from formctl.forms.registry import FormRegistry
from formctl.forms.runner_reads import Reads
from formctl.forms.staging import (
    Decision,
    Staged,
    check_writable,
    derived_refusal,
    resolution_commit,
    resolve_or_report,
    stage,
)
from formctl.forms.validate import text_issue
from formctl.forms.write import Evaluations, OnCommit, Outcome, Write, WriteContext, result_of

if TYPE_CHECKING:
    from collections.abc import Iterator

    from formctl.forms.export import ExportRow
    from formctl.forms.provenance import ModelWrite
    from formctl.forms.reading import Scope
    from formctl.forms.search import Found

# Judging a model's values (formctl.forms.provenance, with the quote matching of
# formctl.forms.quotes: regexes and dataclasses, ~5 ms to import) and recovery/migration
# (formctl.forms.recovery) are imported by the methods that use them: most processes that
# make a runner only read (inspect, history, export) or fill values a person typed.

__all__ = ["FormRunner", "check_note"]

R = TypeVar("R", bound=FillResult)


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


def _wall_clock() -> str:
    return now_iso()  # looked up when called, so a test's clock fixture reaches it


class FormRunner:
    """Drives form instances for one subject over one adapter.

    ``default``: a conversation's instance. Given, calls without an ``instance_id`` act on it
    (while it is not abandoned) instead of on the subject's open form, and ``start`` moves it
    to the new instance; a chat shares one between its runners. ``clock``: where every time a
    write records comes from (an ISO-8601 UTC string; the wall clock by default). ``on_commit``:
    told of every commit this runner makes (:data:`~formctl.forms.write.OnCommit`).
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
        on_commit: OnCommit | None = None,
    ) -> None:
        self.adapter = adapter
        self.on_commit = on_commit
        self.registry = registry
        self.actor = actor or "agent"
        self.source = source or "forms"
        self.kind = kind  # how this runner's plain writes arrived: "host" (docs/engine.md, "Provenance")
        self.clock: Callable[[], str] = clock if clock is not None else _wall_clock
        self.conflict_retries = 0
        # Whether this runner's writes may take a complete instance back (docs/engine.md, "Host
        # acts"): None, yes (a model, the person, the API); False, refused (a host command
        # without --reopen); True, yes on the host's explicit word, recorded as such.
        self.reopening: bool | None = None
        self._evaluations = Evaluations()
        self.reads = Reads(adapter, registry, subject, default, self._evaluations)
        self._lock = threading.RLock()  # one write at a time through this runner (a chat's threads share it)
        self._dispatcher = Dispatcher(adapter, self._provenance, self.clock)
        self.replaying = replaying

    @property
    def replaying(self) -> bool:
        """Executors see ``ctx.replaying`` (a transcript replay runs them for real)."""
        return self._dispatcher.replaying

    @replaying.setter
    def replaying(self, value: bool) -> None:
        self._dispatcher.replaying = value

    @property
    def subject(self) -> str:
        return self.reads.subject

    @property
    def default(self) -> DefaultInstance | None:
        return self.reads.default

    def _provenance(self, note: str | None = None, kind: str | None = None) -> Provenance:
        return Provenance(self.source, self.actor, self.clock(), note, kind or self.kind)

    def _count_conflict(self) -> None:
        self.conflict_retries += 1

    def _begin(self, compiled: CompiledForm, prov: Provenance) -> Write:
        context = WriteContext(
            self.adapter,
            self._dispatcher,
            self._evaluations,
            self.clock,
            on_conflict=self._count_conflict,
            reopening=self.reopening,
            on_commit=self._committed,
        )
        return Write(context, compiled, prov)

    def _committed(self, before: Instance | None, after: Instance) -> None:
        """Every commit this runner lands: ``on_commit`` is told, and a commit that completed the
        form settles the subject's program items bound to it (docs/goals.md, "Form-bound items"),
        whoever wrote it: a chat, a host command, a resolution, MCP or eval."""
        if self.on_commit is not None:
            self.on_commit(before, after)
        if not is_complete(after) or (before is not None and is_complete(before)):
            return
        if isinstance(self.adapter, KeepsPrograms):
            try:
                self.adapter.settle_bound_items(after, actor=self.actor, source=self.source)
            except FormError:  # the form's own commit stands; `formctl program sync` settles it later
                pass

    # ------------------------------------------------------------------ reads (Reads answers them)

    def compiled(self, form_id: str) -> CompiledForm:
        """The registered (compiled) definition of ``form_id``; raises UnknownFormError."""
        return self.reads.compiled(form_id)

    def open_instance(self, instance_id: str | None = None) -> Instance | None:
        """The stored instance by id, or the subject's open form; None when there is none."""
        return self.reads.open_instance(instance_id)

    def instances(
        self,
        subject: str | None = None,
        form_id: str | None = None,
        status: str | None = None,
        limit: int | None = None,
        *,
        damaged: list[StoreError] | None = None,
    ) -> list[InstanceSummary]:
        """Stored instances, most recently updated first, with the status a reader sees (see :meth:`Reads.instances`)."""
        return self.reads.instances(Listing(subject, form_id, status, limit), damaged=damaged)

    def view(self, instance_id: str | None = None) -> InstanceView:
        """A read-only view of any instance, stale ones included (see :meth:`Reads.view`)."""
        return self.reads.view(instance_id)

    def status(self, instance_id: str | None = None) -> FormView:
        """Tier 1: the open step in full (or the last step of a finished form)."""
        return self.reads.status(instance_id)

    def inspect(self, scope: str = "outline", id: str | None = None, instance_id: str | None = None) -> FormView:
        """Tier 2: a step (by id or title), one field (by id or label), or the whole outline."""
        return self.reads.inspect(scope, id, instance_id)

    def outline(self, form_id: str) -> FormView:
        """A registered form's outline, as an instance not yet started shows it; nothing is created."""
        return self.reads.outline(form_id)

    def items_served(self, instances: Sequence[InstanceSummary]) -> list[list[dict[str, Any]]]:
        """Per listed instance, the goal-program items it serves (docs/goals.md, "Form-bound items");
        empty lists when the store keeps no goal programs."""
        if isinstance(self.adapter, KeepsPrograms):
            return self.adapter.items_served(instances)
        return [[] for _ in instances]

    def watch(self) -> Watcher | None:
        """A watcher that hears the store announce commits (PostgreSQL), or None when the store
        announces nothing and a reader must poll."""
        return self.adapter.watch() if isinstance(self.adapter, Watchable) else None

    def close(self) -> None:
        """Release what the store holds (a connection, file handles). Idempotent."""
        self.adapter.close()

    def tier0(self, subject: str | None = None, instance_id: str | None = None) -> str:
        """The standing status line of an instance; "" when there is none or it cannot load."""
        return self.reads.tier0(subject, instance_id)

    def history(self, field: str, instance_id: str | None = None) -> FieldHistory:
        """Every answer ever given to one field, oldest first."""
        return self.reads.history(field, instance_id)

    def evaluation(self, instance_id: str | None = None) -> tuple[CompiledForm, Instance, Evaluation]:
        """The compiled form, stored instance and its evaluation (for views the CLI renders itself)."""
        return self.reads.evaluation(instance_id)

    def continuation(self, form_id: str) -> Continuation:
        """Which of the subject's instances of ``form_id`` a new conversation carries on with (see :meth:`Reads.continuation`)."""
        return self.reads.continuation(form_id)

    def stamp(self, instance_id: str) -> Stamp | None:
        """The instance's change stamp, or None when there is no such instance (a status bar polls it)."""
        return self.reads.stamp(instance_id)

    def damage(self, instance_id: str) -> DamageReport | None:
        """What the store lost of this instance, or None (see :meth:`Reads.damage`)."""
        return self.reads.damage(instance_id)

    def repairs(self, instance_id: str) -> tuple[dict[str, Any], ...]:
        """The losses ``formctl store repair`` accepted on this instance, oldest first."""
        return self.reads.repairs(instance_id)

    # ------------------------------------------------------------------ writes

    def start(self, form_id: str, seed: dict[str, Any] | None = None) -> FillResult:
        """Start a new instance of ``form_id`` for the subject, seeding any values already known."""
        if seed is not None and not isinstance(seed, dict):
            raise InvalidArgumentError("seed must be an object of field ids to values.")
        compiled = self.registry.load(form_id)
        # Staged before the instance exists: a start that fails here writes nothing.
        staged, report = stage(compiled, seed or {})
        for item in staged:
            item.how = {"kind": "seed", "moment": "start"}
        prov = self._provenance("start")
        with serialised(self.adapter, f"start:{compiled.id}:{self.subject}"):
            self._refuse_second_open(compiled.id)
            instance = self.adapter.create_instance(compiled.id, compiled.version, self.subject, prov)
        self._committed(None, instance)
        if self.default is not None:  # the conversation is about the new instance from now on
            self.default.instance_id = instance.id
        with self._lock:
            write = self._begin(compiled, self._provenance())
            instance, staged_ids = write.cycle(instance, lambda inst: (staged, {}), is_start=True)
            return write.result(instance, report, staged_ids)

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
        reason: str | None = None,
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
        check_note(reason, "reason")
        compiled, instance = self._writable(instance_id)
        staged, report = self._judged(compiled, instance, values, write, how)
        return self._staged_write(compiled, instance, staged, report, note=f"fill: {reason}" if reason else None)

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
        staged, report = self._judged(compiled, instance, {field: value}, write, None)
        note = f"revision: {reason}" if reason else "revision"
        return self._staged_write(compiled, instance, staged, report, note=note)

    @staticmethod
    def _judged(
        compiled: CompiledForm,
        instance: Instance,
        values: dict[str, Any],
        write: ModelWrite | None,
        how: dict[str, dict[str, Any]] | None,
    ) -> tuple[list[Staged], WriteReport]:
        staged, report = stage(compiled, values)
        if write is not None:
            from formctl.forms.provenance import judge

            staged, report.unconfirmed, refused = judge(compiled, staged, write, instance)
            report.rejected.extend(refused)
        for key, given in (how or {}).items():
            field_id = compiled.resolve_field(key)
            for item in staged:
                if item.field_id == field_id:
                    item.how = {k: v for k, v in given.items() if v is not None}
        return staged, report

    def _staged_write(
        self,
        compiled: CompiledForm,
        instance: Instance,
        staged: list[Staged],
        report: WriteReport,
        *,
        note: str | None,
        moved: str | None = None,
    ) -> FillResult:
        refuse_derived_only(staged, report)
        with self._lock:
            write = self._begin(compiled, self._provenance(note))
            instance, staged_ids = write.cycle(instance, lambda inst: (staged, {}))
            return write.result(instance, report, staged_ids, moved=moved)

    def retract(self, field: str, reason: str | None = None, instance_id: str | None = None) -> FillResult:
        """Withdraw an answer: a retraction revision, so it can be undone."""
        check_note(reason, "reason")
        compiled, instance = self._writable(instance_id)
        report = WriteReport()
        field_id = resolve_or_report(compiled, field, report)
        if field_id is None:
            return self._result_only(compiled, instance, report)
        refuse_derived(compiled, field_id)
        note = f"retracted: {reason}" if reason else "retracted"
        return self._staged_write(
            compiled, instance, [Staged(field_id, None, retract=True)], report, note=note, moved=field_id
        )

    def undo(
        self, field: str | None = None, instance_id: str | None = None, *, reason: str | None = None
    ) -> FillResult:
        """Move a field's cursor back one revision: the named field, or the last one touched.
        Recorded as an act (who, when, ``reason``, what it moved: :mod:`formctl.forms.acts`)."""
        return self._move(field, -1, instance_id, reason)

    def redo(
        self, field: str | None = None, instance_id: str | None = None, *, reason: str | None = None
    ) -> FillResult:
        """Move a field's cursor forward one revision: the named field, or the oldest pending redo.
        Recorded as an act, as :meth:`undo` is."""
        return self._move(field, +1, instance_id, reason)

    def _move(self, field: str | None, step: int, instance_id: str | None, reason: str | None = None) -> FillResult:
        check_note(reason, "reason")
        compiled, instance = self._writable(instance_id)
        report = WriteReport()
        field_id: str | None = None
        if field is not None:
            field_id = resolve_or_report(compiled, field, report)
            if field_id is None:
                return self._result_only(compiled, instance, report)
            refuse_derived(compiled, field_id)
        cursor_move(instance, field_id, step, compiled.derived_ids)  # raises "nothing to undo" before any work
        with self._lock:
            write = self._begin(compiled, self._provenance("undo" if step < 0 else "redo"))
            move = _CursorMove(field_id, step, compiled.derived_ids, self.actor, write.prov, reason)
            instance, staged_ids = write.cycle(instance, move.plan, amend=move.record)
            return write.result(instance, report, staged_ids, moved=move.moved)

    def revert_ending(
        self, fields: Sequence[str], instance_id: str | None = None, *, reason: str | None = None
    ) -> FillResult:
        """Take back a write that ended the form: open it again and undo ``fields`` (the answers
        that write gave), in one commit, or neither happens (docs/engine.md, "Host acts"). The
        acts record both, with ``reason``. Raises NothingToMoveError, before anything is
        written, when a field has nothing to undo."""
        check_note(reason, "reason")
        compiled, instance = self._resolve(instance_id, allow_stale=True)
        with self._lock:
            write = self._begin(compiled, self._provenance("reopened"))
            from formctl.forms.ending import revert_ending

            return write.result(revert_ending(write, instance, list(fields), reason=reason, actor=self.actor))

    def submit(self, instance_id: str | None = None, *, reason: str | None = None) -> FillResult:
        """Send a form declared with ``review=True`` that is ``ready``: it becomes ``complete`` and
        its ``on_complete`` fires (docs/engine.md, "Review before sending").

        Takes no values: what is sent is what was read back. Raises NotReadyError
        (``form_not_ready``) when the form has no review, is not ready (an answer is missing, a
        check failed) or was already sent; the message says which.
        """
        check_note(reason, "reason")
        compiled, instance = self._writable(instance_id)
        check_ready_to_send(compiled, instance, self._evaluations.of(compiled, instance))
        with self._lock:
            write = self._begin(compiled, self._provenance("submitted"))

            def build(inst: Instance) -> Commit:
                check_ready_to_send(compiled, inst, write.evaluation(inst))
                commit = Commit()
                complete(commit, write.prov.timestamp)
                commit.dispatches = self._status_act(inst, "submit", write, reason, COMPLETE)
                return commit

            instance = write.commit_retrying(instance, build)
            instance = write.fire_completion(instance)
            return write.sent(instance)

    def abandon(self, reason: str, instance_id: str | None = None) -> Instance:
        """Close the instance without finishing; every answer is kept."""
        if not isinstance(reason, str) or not reason.strip():
            raise InvalidArgumentError("abandon needs a reason.")
        check_note(reason, "reason")
        compiled, instance = self._resolve(instance_id, allow_stale=True)
        check_closable(compiled, instance)

        write = self._begin(compiled, self._provenance("abandoned"))

        def build(inst: Instance) -> Commit:
            check_closable(compiled, inst)  # closed by another process since it was read
            commit = Commit()
            close(commit, reason)
            commit.dispatches = self._status_act(inst, "abandon", write, reason, ABANDONED)
            return commit

        return write.commit_retrying(instance, build)

    def reopen(self, instance_id: str | None = None, *, reason: str | None = None) -> FormView:
        """Host only: take a closed instance back (docs/engine.md, "Host acts").

        An abandoned (or terminated) instance opens again, at the status its answers give
        (active, ready or complete), its closing reason cleared; a forced completion is undone,
        so the form reads complete only when its fields are. Recorded as an act with ``reason``.
        """
        check_note(reason, "reason")
        compiled, instance = self._resolve(instance_id, allow_stale=True)
        write = self._begin(compiled, self._provenance("reopened"))

        def build(inst: Instance) -> Commit:
            commit = Commit()
            status = reopen(commit, compiled, write.evaluation(inst), inst, write.prov.timestamp)
            commit.dispatches = self._status_act(inst, "reopen", write, reason, status)
            return commit

        instance = write.commit_retrying(instance, build)
        return step_view(compiled, write.evaluation(instance), instance)

    def recover(self, instance_id: str | None = None) -> RecoverResult:
        """Re-run, under the same idempotency key, every executor a process that died left ``running``.

        An explicit write: the chat calls it when a conversation opens, a host when it likes;
        reads never do it, writes do it first. A form that can migrate is migrated first.
        """
        compiled, instance = self._resolve(instance_id, recover=False)
        if is_closed(instance) or not self._dispatcher.orphans(instance):
            return self._result_only(compiled, instance, kind=RecoverResult)
        with self._lock:
            write = self._begin(compiled, self._provenance("recovery"))
            from formctl.forms.recovery import recover as recover_instance

            instance, rerun = recover_instance(write, instance)
            return write.result(instance, kind=RecoverResult, rerun=rerun)

    def migrate(
        self, instance_id: str | None = None, *, reason: str | None = None, reopen: bool = False
    ) -> MigrateResult:
        """Move an instance to the registered version of its form, through the ordinary commit cycle.

        The form's ``migrate`` carries the answers if it has one; without one every answer to a
        field the new version still has is carried. Answers the new version accepts are kept,
        hooks fire on their rising edges; the rest are withdrawn (undoable) and reported in the
        result's ``rejected`` and ``dropped``. An instance already on that version is left alone.

        A complete or abandoned instance is a closed record: it keeps the version it closed
        under, and is moved only with ``reopen=True`` (``formctl migrate ID --reopen``), which
        the act records; an abandoned one is reopened first (:meth:`reopen`).
        """
        check_note(reason, "reason")
        compiled, instance = self.reads.read(instance_id)
        if instance.status in (ABANDONED, COMPLETE) and drifted(compiled, instance):
            if not reopen:
                what = "was abandoned" if instance.status == ABANDONED else "is complete"
                raise InstanceClosedError(
                    f'Form instance "{instance.id}" {what}: a closed record keeps version {instance.def_version} '
                    f"of its form. To move it to version {compiled.version} anyway (and open it again if its "
                    "answers no longer complete it), migrate it with --reopen; that is recorded."
                )
            if instance.status == ABANDONED:
                self.reopen(instance.id, reason=reason)
                compiled, instance = self.reads.read(instance.id)
            return self._migrated(compiled, instance, reason=reason, override="--reopen")[1]
        check_open_for_writes(instance)
        if not drifted(compiled, instance):
            return self._result_only(
                compiled, instance, kind=MigrateResult, from_version=instance.def_version, to_version=compiled.version
            )
        return self._migrated(compiled, instance, reason=reason)[1]

    def _migrated(
        self, compiled: CompiledForm, instance: Instance, *, reason: str | None = None, override: str | None = None
    ) -> tuple[Instance, MigrateResult]:
        note = f"migrated {instance.def_version} → {compiled.version}"
        with self._lock:
            write = self._begin(compiled, self._provenance(note, "migrated"))
            from formctl.forms.recovery import migrate as migrate_instance

            return migrate_instance(write, instance, reason=reason, override=override)

    def withdraw(self, instance_id: str | None = None, *, reason: str | None = None) -> FillResult:
        """Take back the request a form waits on for a host's approval (docs/engine.md, "Host acts").

        The person may (``/withdraw``), and a host (``formctl withdraw``). The wait ends and the
        answers are editable again; it is recorded like a resolution (outcome ``withdrawn``, who,
        when, why) plus a ``withdraw`` act. Like a rejection, it keeps the form from completing
        while the checkpoint's condition holds on the values it was asked about; a change to
        them while it holds is a new occurrence, so the approval is requested again.
        """
        check_note(reason, "reason")
        compiled, instance = self._resolve(instance_id)
        if instance.status != AWAITING or instance.blocked_on is None:
            raise NotWaitingError(f'Form instance "{instance.id}" is not waiting for an approval.')
        cp_id = instance.blocked_on
        told = (
            "You withdrew the request for approval"
            if self.actor == "person"
            else "The request for approval was withdrawn"
        )
        fail = f"{told}: change the answers it covers, and it is asked again."
        with self._lock:
            write = self._begin(compiled, self._provenance("approval request withdrawn", "host"))
            at = write.prov.timestamp

            decision = Decision(cp_id, fail, self.actor, reason, at, override="withdrawn")

            def build(inst: Instance) -> Commit:
                if inst.status != AWAITING or inst.blocked_on != cp_id:
                    raise NotWaitingError(f'Form instance "{inst.id}" is not waiting for an approval.')
                commit = resolution_commit(compiled, inst, write.evaluation(inst), decision)
                act = act_dispatch(inst, Act("withdraw", self.actor, at, reason, f"{cp_id}: awaiting → active"))
                commit.dispatches = {**(commit.dispatches or {}), **act}
                return commit

            instance = write.commit_retrying(instance, build)
            return self._result_only(compiled, instance)

    def resolve_checkpoint(
        self,
        instance_id: str | None = None,
        fail: str | None = None,
        values: dict[str, Any] | None = None,
        checkpoint: str | None = None,
        *,
        actor: str | None = None,
        reason: str | None = None,
        override: str | None = None,
    ) -> FillResult:
        """The host's answer to a checkpoint: unblock it (or record ``fail``), then write any ``values``.

        Without ``checkpoint`` it resolves the one the instance is waiting on. A failed
        outcome becomes an open failure the agent sees; an ok outcome clears an earlier one.
        The resolution is recorded (docs/engine.md, "Checkpoints and waits"): who (``actor``,
        by default the runner's), when, approved or rejected, and why (``fail`` when rejected,
        ``reason`` when approved); ``formctl.forms.resolutions`` reads them back. ``override``: the
        rule the host explicitly set aside (a resolution of their own request), kept with it.
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
        decision = Decision(cp_id, fail, who, why, prov.timestamp, override)
        staged, report = stage(compiled, values or {})
        with self._lock:
            write = self._begin(compiled, prov)

            def build(inst: Instance) -> Commit:
                return resolution_commit(compiled, inst, write.evaluation(inst), decision)

            was = instance.status
            instance = write.commit_retrying(instance, build)
            if instance.status == COMPLETE and was != COMPLETE:
                instance = write.fire_completion(instance)
            if not staged:
                return self._result_only(compiled, instance, report)
            values_write = self._begin(compiled, self._provenance("checkpoint values"))
            instance, staged_ids = values_write.cycle(instance, lambda inst: (staged, {}))
            return values_write.result(instance, report, staged_ids)

    # ------------------------------------------------------------------ resolution

    def _resolve(
        self, instance_id: str | None = None, *, allow_stale: bool = False, recover: bool = True
    ) -> tuple[CompiledForm, Instance]:
        """For a write: the instance brought up to date first (migrated when its form can, its
        left-over dispatches recovered). A stale one raises FormStaleError unless ``allow_stale``."""
        compiled, instance = self.reads.read(instance_id)
        if is_closed(instance):
            return compiled, instance
        if drifted(compiled, instance):
            if compiled.migrate is None:
                if not allow_stale:
                    raise FormStaleError(instance.def_version, compiled.version)
                return compiled, instance
            instance = self._migrated(compiled, instance)[0]
        if recover and self._dispatcher.orphans(instance):
            with self._lock:
                from formctl.forms.recovery import recover as recover_instance

                instance = recover_instance(self._begin(compiled, self._provenance("recovery")), instance)[0]
        return compiled, instance

    def _result_only(
        self,
        compiled: CompiledForm,
        instance: Instance,
        report: WriteReport | None = None,
        *,
        kind: type[R] = FillResult,  # type: ignore[assignment]  # the default is the bound itself
        **extra: Any,
    ) -> R:
        """The result of an operation that wrote nothing: the instance as it is, the failures still open."""
        outcome = Outcome(report=report)
        return result_of(compiled, self._evaluations.of(compiled, instance), instance, outcome, kind=kind, **extra)

    def _status_act(self, inst: Instance, word: str, write: Write, reason: str | None, to: str) -> dict[str, Any]:
        """The act recording a host's (or the person's) move of ``inst`` into ``to``: who, when, why."""
        at = write.prov.timestamp
        return act_dispatch(inst, Act(word, self.actor, at, reason, f"{inst.status} → {to}"))

    def _writable(self, instance_id: str | None) -> tuple[CompiledForm, Instance]:
        compiled, instance = self._resolve(instance_id)
        check_writable(compiled, instance)
        return compiled, instance

    # Last in the class: a method named ``list`` would shadow the builtin in every annotation after it.
    def find(self, text: str, *, form_id: str | None = None, status: str | None = None, limit: int = 50) -> list[Found]:
        """The instances whose subject or values in force hold every word of ``text`` (accents and
        case aside), most recent first; sensitive fields never match (:mod:`formctl.forms.search`)."""
        from formctl.forms.across import find
        from formctl.forms.search import query_for

        if form_id is not None:
            self.registry.registration(form_id)  # an unknown form is said, not an empty answer
        query = query_for(self.registry, text, def_id=form_id, status=status, limit=limit)
        if not query.words:
            raise InvalidArgumentError("Give something to find: a name, part of an email, a number.")
        return find(self.adapter, query)

    def stats(
        self, form_id: str, *, since: str | None = None, model_of: Callable[[str], str | None] | None = None
    ) -> dict[str, Any]:
        """``formctl stats``: how the form's instances (created since ``since``) are doing, as
        :func:`formctl.forms.stats.summarise` says it; the store computes the facts (``model_of``
        names the model of an instance's conversation, for a store that keeps none itself)."""
        from formctl.forms.across import form_facts
        from formctl.forms.reading import Scope
        from formctl.forms.stats import summarise

        compiled = self.registry.load(form_id)
        facts = form_facts(self.adapter, Scope(compiled.id, since=since), model_of)
        return summarise(facts, compiled, since=since)

    def export_rows(self, scope: Scope, *, include_sensitive: bool = False) -> Iterator[ExportRow]:
        """``formctl export --form``: each instance in ``scope`` read against its registered form,
        streamed (:mod:`formctl.forms.export`)."""
        from formctl.forms.across import stream
        from formctl.forms.export import export_rows

        compiled = self.registry.load(scope.def_id)
        return export_rows(compiled, stream(self.adapter, scope), include_sensitive=include_sensitive)

    def list(self) -> list[dict[str, str]]:
        """The registered forms, ``[{id, name, description}]``, without loading any of them."""
        return self.reads.forms()


class _CursorMove:
    """An undo's or redo's plan and its act, over the instance as read at each attempt; ``moved``
    names the field the latest attempt moved (the one that landed, once the write is done)."""

    __slots__ = ("actor", "at", "field_id", "moved", "reason", "skip", "step", "word")

    def __init__(
        self, field_id: str | None, step: int, skip: frozenset[str], actor: str, prov: Provenance, reason: str | None
    ) -> None:
        self.field_id, self.step, self.skip, self.actor, self.reason = field_id, step, skip, actor, reason
        self.word = "undo" if step < 0 else "redo"
        self.at = prov.timestamp
        self.moved = ""

    def plan(self, inst: Instance) -> tuple[list[Staged], dict[str, int]]:
        self.moved, cursor = cursor_move(inst, self.field_id, self.step, self.skip)
        return [], {self.moved: cursor}

    def record(self, inst: Instance, commit: Commit) -> None:
        """The act, on the write's main commit (who, when, why, what it moved: :mod:`formctl.forms.acts`)."""
        target, cursor = cursor_move(inst, self.field_id, self.step, self.skip)
        detail = moved_detail(target, inst.entries[target], cursor)
        commit.dispatches = act_dispatch(inst, Act(self.word, self.actor, self.at, self.reason, detail))


def refuse_derived(compiled: CompiledForm, field_id: str) -> None:
    """A retract, undo or redo of a derived field: nobody moves it (docs/engine.md, "Derived values")."""
    field = compiled.field_by_id[field_id]
    if field.derive is not None:
        raise DerivedFieldError(derived_refusal(field.label))


def refuse_derived_only(staged: list[Staged], report: WriteReport) -> None:
    """A write whose every value was for a derived field has nothing to write: refused, in one line,
    rather than reported as an empty success (a write with other values keeps them, and lists the refusal)."""
    if staged or not report.rejected or any(r.code != "derived_field" for r in report.rejected):
        return
    raise DerivedFieldError(" ".join(dict.fromkeys(r.message for r in report.rejected)))
