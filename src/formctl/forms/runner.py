"""The runner: the only place that commits. Commit, then run.

Every write (start, fill, revise, retract, undo, redo, resolve_checkpoint, migrate)
follows one cycle:

1. stage the revisions (validated once, here, and never again);
2. evaluate the stored instance (``before``) and the projected one (``after``), find the
   rising edges, and commit entries, occurrence counters and status in one
   compare-and-set write, under the adapter's lock when it offers one, else re-reading
   and re-applying on a conflict for up to two seconds (:mod:`formctl.forms.contention`);
3. only then run the executors the edges imply, in the fixed order (field ``on_fill``,
   step ``on_complete``, checkpoint ``run``, form ``on_complete``), each under its
   idempotency key ``instance:hook:occurrence``;
4. apply their effects in a closing commit, and write any patches in further rounds.

Evaluations are cached per (instance id, version), so a write evaluates the instance it
stores once and the next operation starts from that evaluation.
"""

from __future__ import annotations

import builtins
import inspect
import os
import socket
import threading
from dataclasses import dataclass, field as dc_field
from typing import Any, Callable

from formctl.forms.adapter import FormAdapter
from formctl.forms.commit import apply_entry_commit
from formctl.forms.compile import CompiledForm
from formctl.forms.contention import Attempts
from formctl.forms.definition import Complete, Effect, Fail, Jump, Patch, Terminate
from formctl.forms.errors import (
    ConflictError,
    FormBlockedError,
    FormDefinitionError,
    FormError,
    FormStaleError,
    InvalidArgumentError,
    NotFoundError,
)
from formctl.forms.evaluate import FILLED, HELD, INVALID, Evaluation, evaluate, evaluate_change, remember_parse
from formctl.forms.history import FieldHistory, can_redo, can_undo, field_history, last_touched, next_redo
from formctl.forms.instance import (
    Commit,
    DispatchState,
    DispatchStatus,
    Entry,
    EntryCommit,
    Instance,
    Provenance,
    Status,
    UNSET,
    now_iso,
)
from formctl.forms.project import (
    Failure,
    blocking_failure_open,
    FillResult,
    FormView,
    MigrateResult,
    RecoverResult,
    Rejected,
    Unknown,
    field_row,
    field_view,
    open_failures,
    outline_view,
    step_view,
    tier0 as render_tier0,
)
from formctl.forms.registry import FormRegistry
from formctl.forms.resolutions import resolution_key
from formctl.forms.reading import InstanceSummary, InstanceView, drifted, is_stale, read_status, summarise
from formctl.forms.validate import issue_hint, json_data, size_issue

MAX_ROUNDS = 8

_OWNER = f"{socket.gethostname()}:{os.getpid()}"


def _owner() -> str:
    # Recomputed after a fork, so a child process never claims its parent's records.
    global _OWNER
    pid = os.getpid()
    if not _OWNER.endswith(f":{pid}"):
        _OWNER = f"{socket.gethostname()}:{pid}"
    return _OWNER


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
class ExecutorContext:
    """What an executor receives."""

    values: Any
    state: Any
    instance: Instance
    hook_id: str
    idempotency_key: str
    form_id: str
    replaying: bool = False


@dataclass(slots=True)
class _Staged:
    field_id: str
    value: Any
    outcome: Any = None
    validator: Any = None
    retract: bool = False


@dataclass(slots=True)
class _Hook:
    hook_id: str
    fn: Callable[[Any], Any] | None
    occurrence: int
    checkpoint: Any = None  # CompiledCheckpoint for checkpoint hooks


@dataclass(slots=True)
class _RoundEffects:
    patch: dict[str, Any] = dc_field(default_factory=dict)
    jump: str | None = None
    complete: bool = False
    terminate: str | None = None
    failures: list[Failure] = dc_field(default_factory=list)
    waiting_on: str | None = None
    checkpoints_run: set[str] = dc_field(default_factory=set)  # dispatched this round


class FormRunner:
    """Drives form instances for one subject over one adapter."""

    def __init__(
        self,
        adapter: FormAdapter,
        *,
        registry: FormRegistry,
        subject: str | Callable[[], str] = "default",
        actor: str = "agent",
        source: str | None = None,
        replaying: bool = False,
    ) -> None:
        self.adapter = adapter
        self.registry = registry
        self._subject = subject
        self.actor = actor or "agent"
        self.source = source or "forms"
        self.replaying = replaying
        self.conflict_retries = 0
        self._cache: dict[str, tuple[int, CompiledForm, Evaluation]] = {}
        self._in_flight: set[str] = set()
        self._lock = threading.RLock()

    # ------------------------------------------------------------------ identity

    @property
    def subject(self) -> str:
        return self._subject() if callable(self._subject) else self._subject

    def _provenance(self, note: str | None = None) -> Provenance:
        return Provenance(self.source, self.actor, now_iso(), note)

    # ------------------------------------------------------------------ reads
    #
    # Every read loads, compiles, evaluates and projects: it never commits, runs an executor
    # or migrates (docs/engine.md, "Reads and writes"). Recovery and migration are the
    # explicit writes ``recover`` and ``migrate`` below.

    def list(self) -> builtins.list[dict[str, str]]:
        """The registered forms, ``[{id, name, description}]``, without loading any of them."""
        return self.registry.list()

    def compiled(self, form_id: str) -> CompiledForm:
        """The registered (compiled) definition of ``form_id``; raises UnknownFormError."""
        return self.registry.load(form_id)

    def open_instance(self, instance_id: str | None = None) -> Instance | None:
        """The stored instance by id, or the subject's open form; None when there is none."""
        if instance_id is not None:
            return self.adapter.get_instance(instance_id)
        return self.adapter.find_open_instance(self.subject)

    def instances(
        self,
        subject: str | None = None,
        form_id: str | None = None,
        status: str | None = None,
        limit: int | None = None,
        *,
        damaged: builtins.list[Any] | None = None,
    ) -> builtins.list[InstanceSummary]:
        """Stored instances, most recently updated first, with the status a reader sees (``stale`` included).

        ``subject=None`` lists every subject's. ``status`` filters on the status as read, so
        ``status="stale"`` finds stale instances without opening them. ``damaged``, when the
        store supports it, collects the errors of instances it had to leave out.
        """
        kwargs: dict[str, Any] = {"subject": subject, "def_id": form_id}
        if damaged is not None:
            kwargs["damaged"] = damaged
        # Abandoned is never stale, and no status but stale is ever read differently from the
        # stored one unless the stored one is stale or the instance drifted: filter after reading.
        exact = status is None or status == Status.ABANDONED
        if exact:
            kwargs.update(status=status, limit=limit)
        found = self.adapter.find_instances(**kwargs)
        versions: dict[str, CompiledForm | None] = {}
        out: builtins.list[InstanceSummary] = []
        for instance in found:
            read = self._read_status(instance, versions)
            if status is not None and read != status:
                continue
            out.append(summarise(instance, read))
            if limit is not None and len(out) >= limit:
                break
        return out

    def view(self, instance_id: str | None = None) -> InstanceView:
        """A read-only view (registered form, stored instance, evaluation, status as read) of any instance.

        Unlike ``status``/``inspect`` it does not refuse a stale instance: it evaluates the stored
        answers against the registered form and says ``stale``. Raises NotFoundError, UnknownFormError.
        """
        compiled, instance = self._read(instance_id)
        status = read_status(compiled, instance)
        return InstanceView(compiled, instance, self._evaluation(compiled, instance), status, status == Status.STALE)

    def status(self, instance_id: str | None = None) -> FormView:
        """Tier 1: the open step in full (or the last step of a finished form)."""
        compiled, instance = self._readable(instance_id)
        return step_view(compiled, self._evaluation(compiled, instance), instance)

    def inspect(self, scope: str = "outline", id: str | None = None, instance_id: str | None = None) -> FormView:
        """Tier 2: a step (by id or title), one field (by id or label), or the whole outline."""
        compiled, instance = self._readable(instance_id)
        ev = self._evaluation(compiled, instance)
        if scope == "outline":
            return outline_view(compiled, ev, instance)
        if scope == "step":
            return step_view(compiled, ev, instance, id)
        if scope == "field":
            if not id:
                raise InvalidArgumentError("scope=field needs an id.")
            return field_view(compiled, ev, instance, id)
        raise InvalidArgumentError(f'Unknown scope "{scope}": use outline, step or field.')

    def tier0(self, subject: str | None = None, instance_id: str | None = None) -> str:
        """The standing status line of an instance (by id, else the subject's open form); "" when
        there is none or it cannot load."""
        try:
            if instance_id is not None:
                instance = self.adapter.get_instance(instance_id)
            else:
                instance = self.adapter.find_open_instance(subject or self.subject)
            if instance is None:
                return ""
            compiled = self._load(instance)
            return render_tier0(compiled, self._evaluation(compiled, instance), instance)
        except Exception:
            return ""

    def history(self, field: str, instance_id: str | None = None) -> FieldHistory:
        """Every answer ever given to one field, oldest first."""
        compiled, instance = self._readable(instance_id)
        field_id = compiled.resolve_field(field)
        if field_id is None:
            if field in instance.entries:  # a field a later definition dropped: its log is still there
                return field_history(instance, field, field)
            raise NotFoundError(f'No field "{field}" on this form.')
        return field_history(instance, field_id, compiled.field_by_id[field_id].label)

    def evaluation(self, instance_id: str | None = None) -> tuple[CompiledForm, Instance, Evaluation]:
        """The compiled form, stored instance and its evaluation (for views the CLI renders itself)."""
        compiled, instance = self._readable(instance_id)
        return compiled, instance, self._evaluation(compiled, instance)

    # ------------------------------------------------------------------ writes

    def start(self, form_id: str, seed: dict[str, Any] | None = None) -> FillResult:
        """Start a new instance of ``form_id`` for the subject, seeding any values already known."""
        if seed is not None and not isinstance(seed, dict):
            raise InvalidArgumentError("seed must be an object of field ids to values.")
        compiled = self.registry.load(form_id)
        prov = self._provenance("start")
        instance = self.adapter.create_instance(compiled.id, compiled.version, self.subject, prov)
        staged, result = self._stage(compiled, seed or {})
        return self._write(compiled, instance, lambda inst: (staged, {}), result, note=None, is_start=True)

    def fill(self, values: dict[str, Any], instance_id: str | None = None) -> FillResult:
        """Write any fields, from any step. Each value is checked on its own; nothing is gated."""
        if not isinstance(values, dict):
            raise InvalidArgumentError("values must be an object of field ids to values.")
        compiled, instance = self._writable(instance_id)
        staged, result = self._stage(compiled, values)
        return self._write(compiled, instance, lambda inst: (staged, {}), result, note=None)

    def revise(
        self, field: str, value: Any, reason: str | None = None, instance_id: str | None = None
    ) -> FillResult:
        """Correct one field: a one-key fill whose provenance note records the reason."""
        compiled, instance = self._writable(instance_id)
        staged, result = self._stage(compiled, {field: value})
        note = f"revision: {reason}" if reason else "revision"
        return self._write(compiled, instance, lambda inst: (staged, {}), result, note=note)

    def retract(self, field: str, reason: str | None = None, instance_id: str | None = None) -> FillResult:
        """Withdraw an answer: a retraction revision, so it can be undone."""
        compiled, instance = self._writable(instance_id)
        result = FillResult(view=None)  # type: ignore[arg-type]
        field_id = self._resolve_or_report(compiled, field, result)
        if field_id is None:
            return self._result_only(compiled, instance, result)
        staged = [_Staged(field_id, None, retract=True)]
        note = f"retracted: {reason}" if reason else "retracted"
        return self._write(compiled, instance, lambda inst: (staged, {}), result, note=note, moved=[field_id])

    def undo(self, field: str | None = None, instance_id: str | None = None) -> FillResult:
        """Move a field's cursor back one revision: the named field, or the last one touched."""
        return self._move(field, -1, instance_id)

    def redo(self, field: str | None = None, instance_id: str | None = None) -> FillResult:
        """Move a field's cursor forward one revision: the named field, or the oldest pending redo."""
        return self._move(field, +1, instance_id)

    def abandon(self, reason: str, instance_id: str | None = None) -> Instance:
        """Close the instance without finishing; every answer is kept."""
        if not isinstance(reason, str) or not reason.strip():
            raise InvalidArgumentError("abandon needs a reason.")
        compiled, instance = self._resolve(instance_id, allow_stale=True)
        _check_open(compiled, instance)
        prov = self._provenance("abandoned")

        def build(inst: Instance) -> Commit:
            _check_open(compiled, inst)  # closed by another process since it was read
            return Commit(status=Status.ABANDONED, closed_reason=reason, blocked_on=None)

        return self._commit_retrying(instance, build, prov)

    def reopen(self, instance_id: str | None = None) -> FormView:
        """Host only: undo a forced completion, so the form reads complete only when its fields are."""
        compiled, instance = self._resolve(instance_id)
        prov = self._provenance("reopened")

        def build(inst: Instance) -> Commit:
            ev = self._evaluation(compiled, inst)
            status = inst.status
            if status == Status.COMPLETE and not ev.complete:
                status = Status.ACTIVE
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
        if instance.status != Status.ABANDONED:
            instance, result.rerun, failures = self._recover(compiled, instance)
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
        if instance.status == Status.ABANDONED:
            raise FormError(_abandoned(instance.id))
        if not drifted(compiled, instance):
            ev = self._evaluation(compiled, instance)
            result = MigrateResult(view=step_view(compiled, ev, instance), from_version=instance.def_version,
                                   to_version=compiled.version)
            result.failures = open_failures(instance, compiled, ev)
            return result
        return self._migrate(compiled, instance)[1]

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
        compiled, instance = self._resolve(instance_id)
        if instance.status == Status.ABANDONED:
            raise FormError(_abandoned(instance.id))
        cp_id = checkpoint if checkpoint is not None else instance.blocked_on
        if cp_id is None:
            raise FormError(f'Form instance "{instance.id}" is not waiting on a checkpoint.', code="not_waiting")
        if cp_id not in compiled.checkpoint_by_id:
            raise NotFoundError(f'No checkpoint "{cp_id}" on form "{compiled.id}".')
        if actor is not None and (not isinstance(actor, str) or not actor.strip()):
            raise InvalidArgumentError("actor must name who resolves the checkpoint.")
        who = actor.strip() if actor is not None else self.actor
        prov = Provenance(self.source, who, now_iso(), "checkpoint rejected" if fail else "checkpoint resolved")
        why = (reason or None) if not fail else fail

        def build(inst: Instance) -> Commit:
            key = resolution_key(inst, cp_id)
            record = DispatchState(
                f"checkpoint:{cp_id}",
                DispatchStatus.FAILED if fail else DispatchStatus.OK,
                1,
                now_iso(),
                fail if fail else None,
                actor=who,
                reason=why,
            )
            commit = Commit(dispatches={key: record})
            if inst.blocked_on == cp_id:
                commit.blocked_on = None
            if inst.status == Status.AWAITING or (fail is None and inst.status == Status.ACTIVE):
                projected = inst.copy()
                projected.dispatches[key] = record
                status = _settled(compiled, self._evaluation(compiled, inst), projected, inst.forced_complete)
                if status != inst.status:
                    commit.status = status
                    if status == Status.COMPLETE and not inst.completed_at:
                        commit.completed_at = prov.timestamp
            return commit

        was = instance.status
        instance = self._commit_retrying(instance, build, prov)
        if instance.status == Status.COMPLETE and was != Status.COMPLETE:
            instance = self._fire_completion(compiled, instance, prov, [])
        staged, result = self._stage(compiled, values or {})
        if not staged:
            return self._result_only(compiled, instance, result)
        return self._write(compiled, instance, lambda inst: (staged, {}), result, note="checkpoint values")

    # ------------------------------------------------------------------ resolution

    def _load(self, instance: Instance) -> CompiledForm:
        return self.registry.load(instance.def_id)

    def _read_status(self, instance: Instance, forms: dict[str, CompiledForm | None]) -> str:
        """The status a reader sees, loading each form once per listing; a form that cannot load reads as stored."""
        if instance.def_id not in forms:
            try:
                forms[instance.def_id] = self._load(instance)
            except Exception:
                forms[instance.def_id] = None
        compiled = forms[instance.def_id]
        return instance.status if compiled is None else read_status(compiled, instance)

    def _read(self, instance_id: str | None = None) -> tuple[CompiledForm, Instance]:
        """The stored instance (by id, else the subject's open form) and its registered form. Writes nothing."""
        if instance_id is not None:
            instance = self.adapter.get_instance(instance_id)
            if instance is None:
                raise NotFoundError(f'No form instance "{instance_id}".')
        else:
            instance = self.adapter.find_open_instance(self.subject)
            if instance is None:
                raise NotFoundError(f'No open form instance for subject "{self.subject}".')
        return self._load(instance), instance

    def _readable(self, instance_id: str | None) -> tuple[CompiledForm, Instance]:
        """For the views: the instance as stored, refused with FormStaleError when it is stale."""
        compiled, instance = self._read(instance_id)
        if is_stale(compiled, instance):
            raise FormStaleError(instance.def_version, compiled.version)
        return compiled, instance

    def _resolve(
        self, instance_id: str | None = None, *, allow_stale: bool = False, recover: bool = True
    ) -> tuple[CompiledForm, Instance]:
        """For a write: the instance brought up to date first (migrated when its form can, its
        left-over dispatches recovered). A stale one raises FormStaleError unless ``allow_stale``."""
        compiled, instance = self._read(instance_id)
        if instance.status == Status.ABANDONED:
            return compiled, instance
        if drifted(compiled, instance):
            if compiled.migrate is None:
                if not allow_stale:
                    raise FormStaleError(instance.def_version, compiled.version)
                return compiled, instance
            instance = self._migrate(compiled, instance)[0]
        if recover:
            instance = self._recover(compiled, instance)[0]
        return compiled, instance

    def _writable(self, instance_id: str | None) -> tuple[CompiledForm, Instance]:
        compiled, instance = self._resolve(instance_id)
        _check_writable(compiled, instance)
        return compiled, instance

    def _evaluation(self, compiled: CompiledForm, instance: Instance) -> Evaluation:
        cached = self._cache.get(instance.id)
        if cached is not None and cached[0] == instance.version and cached[1] is compiled:
            return cached[2]
        ev = evaluate(compiled, instance)
        self._remember(instance, compiled, ev)
        return ev

    def _remember(self, instance: Instance, compiled: CompiledForm, ev: Evaluation) -> None:
        if len(self._cache) > 64:
            self._cache.clear()
        self._cache[instance.id] = (instance.version, compiled, ev)

    def _reload(self, instance_id: str) -> Instance:
        instance = self.adapter.get_instance(instance_id)
        if instance is None:
            raise NotFoundError(f'No form instance "{instance_id}".')
        return instance

    @staticmethod
    def _changed_under_the_write(fresh: Instance) -> Instance:
        if fresh.status == Status.ABANDONED:  # abandoned under us: nothing more may be written
            raise FormError(_abandoned(fresh.id))
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

    # ------------------------------------------------------------------ staging

    def _stage(self, compiled: CompiledForm, values: dict[str, Any]) -> tuple[list[_Staged], FillResult]:
        result = FillResult(view=None)  # type: ignore[arg-type]
        staged: dict[str, _Staged] = {}
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
            field_id = self._resolve_or_report(compiled, key, result)
            if field_id is None:
                continue
            field = compiled.field_by_id[field_id]
            if too_big is not None:
                hint = f"Send at most {limit:,} characters." if too_big.kind == "too_long" else None
                result.rejected.append(Rejected(field_id, too_big.message, hint or issue_hint(too_big, None,
                                                                                         field.description, field.type)))
                continue
            if not_data is not None:
                # A value with no JSON form cannot be stored (a JSON store could not hold it,
                # and it could never parse): reported like an invalid one, but not written.
                result.rejected.append(Rejected(
                    field_id, f"Value is not JSON data ({not_data}).", field.description or f"Expected {field.type}."
                ))
                continue
            outcome = field.validator.validate(value)
            if not outcome.ok:
                for issue in outcome.issues:
                    result.rejected.append(
                        Rejected(field_id, issue.message, issue_hint(issue, value, field.description, field.type))
                    )
            staged.pop(field_id, None)  # a later key for the same field wins, at its own position
            staged[field_id] = _Staged(field_id, value, outcome, field.validator)
        return list(staged.values()), result

    def _resolve_or_report(self, compiled: CompiledForm, sent: Any, result: FillResult) -> str | None:
        field_id = compiled.resolve_field(sent)
        if field_id is None:
            result.unknown.append(Unknown(str(sent), tuple(compiled.did_you_mean(sent))))
            return None
        if field_id != sent:
            result.renamed.append((str(sent), field_id))
        return field_id

    # ------------------------------------------------------------------ undo / redo

    def _move(self, field: str | None, step: int, instance_id: str | None) -> FillResult:
        compiled, instance = self._writable(instance_id)
        word = "undo" if step < 0 else "redo"
        result = FillResult(view=None)  # type: ignore[arg-type]
        field_id: str | None = None
        if field is not None:
            field_id = self._resolve_or_report(compiled, field, result)
            if field_id is None:
                return self._result_only(compiled, instance, result)

        moved: list[str] = []

        def plan(inst: Instance) -> tuple[list[_Staged], dict[str, int]]:
            target = field_id
            if target is None:
                target = last_touched(inst) if step < 0 else next_redo(inst)
                if target is None:
                    if step < 0:
                        raise FormError("There is nothing to undo — no answer has been given yet.")
                    raise FormError("There is nothing to redo.")
            log = inst.entries.get(target)
            if not (can_undo(log) if step < 0 else can_redo(log)):
                raise FormError(f'Nothing to {word} on "{target}".')
            moved[:] = [target]
            return [], {target: log.cursor + step}

        plan(instance)  # raise "nothing to undo" before any work
        return self._write(compiled, instance, plan, result, note=word, moved=moved)

    # ------------------------------------------------------------------ the commit cycle

    def _write(
        self,
        compiled: CompiledForm,
        instance: Instance,
        plan: Callable[[Instance], tuple[list[_Staged], dict[str, int]]],
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

    def _result_view(self, compiled: CompiledForm, ev: Evaluation, instance: Instance, staged_ids: list[str]) -> FormView:
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
        plan: Callable[[Instance], tuple[list[_Staged], dict[str, int]]],
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
            entries_commit, projected, appended = self._project(instance, staged, moves, prov)
            fired_before = instance.occurrences
            if is_start:
                after = evaluate(compiled, projected, fired=fired_before)
            else:
                after = evaluate_change(compiled, before, projected, entries_commit, fired=fired_before)
            if after.defects:
                raise FormDefinitionError(
                    f'Form "{compiled.id}" cannot be evaluated: {"; ".join(after.defects)}.', after.defects
                )
            queue, occurrences = _rising_edges(compiled, instance, before, after)
            commit = Commit(entries=entries_commit or None, occurrences=occurrences or None)
            if appended:
                commit.revision_seq = instance.revision_seq + len(appended)
            forced_after = instance.forced_complete and not _required_invalid(compiled, after)
            if instance.forced_complete and not forced_after:
                commit.forced_complete = False
            stored_status = instance.status
            extra_fields = extra(instance) if extra is not None else {}
            if extra_fields.get("status") is not None:
                stored_status = extra_fields["status"]
            for name, value in extra_fields.items():
                setattr(commit, name, value)
            blocking = next((h.checkpoint for h in queue if h.checkpoint is not None and h.checkpoint.blocking), None)
            done = _settled(compiled, after, projected, forced_after) == Status.COMPLETE
            if stored_status == Status.AWAITING and instance.blocked_on:
                # A patch round (or a recovery) written while a checkpoint waits for the host:
                # the wait holds, and the status with it, until resolve_checkpoint settles it.
                pass
            elif blocking is not None:
                commit.status = Status.AWAITING
                commit.blocked_on = blocking.id
            elif done and stored_status != Status.COMPLETE:
                commit.status = Status.COMPLETE
                commit.completed_at = prov.timestamp
            elif stored_status == Status.AWAITING and not instance.blocked_on:
                commit.status = Status.ACTIVE
            elif stored_status == Status.COMPLETE and not done:
                commit.status = Status.ACTIVE
            elif stored_status == Status.STALE:  # committed by an older formctl, whose reads marked drift
                commit.status = Status.COMPLETE if done else Status.ACTIVE
                if done and not instance.completed_at:
                    commit.completed_at = prov.timestamp
            # The form's on_complete fires on the rising edge of the *status*: so a form waiting on a
            # person, or held by a rejected blocking checkpoint, completes (and announces it) only
            # once it really is complete, and a forced completion is announced exactly once.
            completes = commit.status == Status.COMPLETE and instance.status != Status.COMPLETE
            if completes:
                n = instance.occurrences.get("form", 0) + 1
                commit.occurrences = {**(commit.occurrences or {}), "form": n}
                if compiled.on_complete is not None:
                    queue.append(_Hook("form", compiled.on_complete, n))
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

        effects = self._dispatch(compiled, committed, queue, after, fired_before, failures)
        if queue:
            # Re-read, so the closing commit and the result see the dispatch
            # records (written outside compare-and-set, without a version bump).
            committed = self._reload(committed.id)
        committed = self._close_and_announce(
            compiled, committed, effects, prov, failures, appended_fields=[s.field_id for s in staged],
            set_completed_now=set_completed_now,
        )
        if effects.terminate is None and effects.patch and round_no < MAX_ROUNDS:
            patch_staged = self._stage_patch(compiled, effects.patch)
            if patch_staged:
                committed, _ = self._cycle(
                    compiled, committed, lambda inst: (patch_staged, {}), prov, failures, round_no=round_no + 1
                )
        return committed, staged_ids

    def _project(
        self, instance: Instance, staged: list[_Staged], moves: dict[str, int], prov: Provenance
    ) -> tuple[dict[str, EntryCommit], Instance, list[Entry]]:
        projected = instance.copy()
        changes: dict[str, EntryCommit] = {}
        appended: list[Entry] = []
        seq = instance.revision_seq
        for item in staged:
            seq += 1
            if item.retract:
                entry = Entry(seq, None, prov, retracted=True)
            else:
                entry = Entry(seq, item.value, prov, error=item.outcome.error)
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
        return changes, projected, appended

    def _stage_patch(self, compiled: CompiledForm, patch: dict[str, Any]) -> list[_Staged]:
        staged: dict[str, _Staged] = {}
        for key, value in patch.items():
            field_id = compiled.resolve_field(key)
            if field_id is None:
                continue
            value = json_data(value)  # _check_effects has refused values with no JSON form
            if is_blank(value):
                continue
            field = compiled.field_by_id[field_id]
            staged.pop(field_id, None)
            staged[field_id] = _Staged(field_id, value, field.validator.validate(value), field.validator)
        return list(staged.values())

    # ------------------------------------------------------------------ dispatch

    def _dispatch(
        self,
        compiled: CompiledForm,
        committed: Instance,
        queue: list[_Hook],
        after: Evaluation,
        fired_before: dict[str, int],
        failures: list[Failure],
    ) -> _RoundEffects:
        effects = _RoundEffects()
        if not queue:
            return effects
        state = after.frozen_state(fired_before)
        values = after.gate_values()
        snapshot = committed
        for hook in queue:
            if effects.terminate is not None:
                break  # once a hook terminates, no later hook of the round runs
            self._run_hook(compiled, snapshot, hook, values, state, effects, failures)
            if hook is not queue[-1]:
                snapshot = self.adapter.get_instance(committed.id) or snapshot
        return effects

    def _run_hook(
        self,
        compiled: CompiledForm,
        snapshot: Instance,
        hook: _Hook,
        values: Any,
        state: Any,
        effects: _RoundEffects,
        failures: list[Failure],
    ) -> None:
        iid = snapshot.id
        checkpoint = hook.checkpoint
        if checkpoint is not None:
            effects.checkpoints_run.add(checkpoint.id)
        if hook.fn is None:
            if checkpoint is not None and checkpoint.waits_for_host and effects.waiting_on is None:
                effects.waiting_on = checkpoint.id
            return
        key = f"{iid}:{hook.hook_id}:{hook.occurrence}"
        previous = snapshot.dispatches.get(key)
        if previous is not None and previous.status == DispatchStatus.OK:
            return
        attempts = (previous.attempts if previous else 0) + 1
        prov = self._provenance("dispatch")
        self._record(iid, key, DispatchState(hook.hook_id, DispatchStatus.RUNNING, attempts, now_iso(), owner=_owner()), prov)
        self._in_flight.add(key)
        try:
            ctx = ExecutorContext(values, state, snapshot, hook.hook_id, key, compiled.id, self.replaying)
            error, items = _call_executor(hook.fn, ctx)
        finally:
            self._in_flight.discard(key)
        if error is None:
            error = _check_effects(compiled, items)
        at = now_iso()
        if error is not None:
            failures.append(Failure(hook.hook_id, error, at))
        else:
            _apply_effects(compiled, items, effects)
            if checkpoint is not None and checkpoint.waits_for_host and not items and effects.waiting_on is None:
                effects.waiting_on = checkpoint.id
        self._record(iid, key, DispatchState(hook.hook_id, DispatchStatus.FAILED if error else DispatchStatus.OK, attempts, at, error), prov)

    def _record(self, iid: str, key: str, state: DispatchState, prov: Provenance) -> None:
        try:
            self.adapter.record_dispatch(iid, key, state, prov)
        except FormError:
            # Dispatch bookkeeping is outside compare-and-set and never fails a write; a lost
            # record costs at most a repeated executor run, which the idempotency key absorbs.
            pass

    def _close(
        self,
        compiled: CompiledForm,
        committed: Instance,
        effects: _RoundEffects,
        prov: Provenance,
        *,
        appended_fields: list[str],
        set_completed_now: bool,
    ) -> Instance:
        """The closing commit of a round: unblock, jump or release the override, settle the status."""

        def build(inst: Instance) -> Commit:
            commit = Commit()
            if effects.waiting_on is not None:
                if inst.blocked_on != effects.waiting_on:
                    commit.blocked_on = effects.waiting_on
                if inst.status != Status.AWAITING:
                    commit.status = Status.AWAITING
            elif inst.blocked_on is not None and inst.blocked_on in effects.checkpoints_run:
                commit.blocked_on = None
            # A host wait begun by an earlier round (seen here from its patch round) holds until resolved.
            still_waiting = effects.waiting_on is None and inst.blocked_on is not None and commit.blocked_on is UNSET
            if effects.jump is not None:
                if inst.open_step_override != effects.jump:
                    commit.open_step_override = effects.jump
            elif inst.open_step_override is not None:
                override_step = inst.open_step_override
                if any(compiled.field_by_id[f].step_id == override_step for f in appended_fields if f in compiled.field_by_id):
                    commit.open_step_override = None
            if effects.terminate is not None:
                commit.status = Status.ABANDONED
                commit.closed_reason = effects.terminate
                if inst.open_step_override is not None or effects.jump is not None:
                    commit.open_step_override = None
                commit.blocked_on = None if inst.blocked_on is not None else UNSET
                if set_completed_now and inst.completed_at is not None:
                    commit.completed_at = None  # a terminated form never completed
                if inst.forced_complete:
                    commit.forced_complete = False
                return commit
            if effects.complete and not inst.forced_complete:
                commit.forced_complete = True  # kept while waiting, so it lands when the host resolves
            if effects.waiting_on is not None or still_waiting:
                return commit
            ev = self._evaluation(compiled, inst)
            forced = effects.complete or inst.forced_complete
            status = _settled(compiled, ev, inst, forced)
            if inst.status != status and inst.status != Status.ABANDONED:
                commit.status = status
                if status == Status.COMPLETE and not inst.completed_at:
                    commit.completed_at = now_iso()
            return commit

        return self._commit_retrying(committed, build, prov)

    def _close_and_announce(
        self,
        compiled: CompiledForm,
        committed: Instance,
        effects: _RoundEffects,
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
        if closed.status == Status.COMPLETE and was != Status.COMPLETE:
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
        effects = _RoundEffects()
        self._run_hook(
            compiled, instance, _Hook("form", compiled.on_complete, occurrence), ev.gate_values(),
            ev.frozen_state(instance.occurrences), effects, failures,
        )
        instance = self._reload(instance.id)
        # set_completed_now: the status has just risen into complete, so a Terminate from the
        # on_complete leaves the form never completed, as in the main round.
        instance = self._close_and_announce(
            compiled, instance, effects, prov, failures, appended_fields=[], set_completed_now=True
        )
        if effects.terminate is None and effects.patch:  # its patches are written like any hook's
            staged = self._stage_patch(compiled, effects.patch)
            if staged:
                instance, _ = self._cycle(compiled, instance, lambda inst: (staged, {}), prov, failures, round_no=1)
        return instance

    # ------------------------------------------------------------------ recovery and drift

    def _recover(self, compiled: CompiledForm, instance: Instance) -> tuple[Instance, builtins.list[str], builtins.list[Failure]]:
        """Re-run, under the same key, any executor a dead process left ``running``
        (docs/engine.md, "Commit then run"). Returns the instance, the keys re-run and the failures."""
        orphans = [
            (key, record)
            for key, record in instance.dispatches.items()
            if record.status == DispatchStatus.RUNNING and key not in self._in_flight and not _owner_alive(record.owner)
        ]
        if not orphans:
            return instance, [], []
        with self._lock:
            ev = self._evaluation(compiled, instance)
            failures: builtins.list[Failure] = []
            rerun: builtins.list[str] = []
            effects = _RoundEffects()
            for key, record in orphans:
                hook = _hook_for(compiled, record.hook_id, key)
                if hook is None:
                    prov = self._provenance("recovery")
                    self._record(instance.id, key, DispatchState(record.hook_id, DispatchStatus.FAILED, record.attempts, now_iso(),
                                                                 "The definition no longer has this hook."), prov)
                    continue
                rerun.append(key)
                self._run_hook(compiled, instance, hook, ev.gate_values(), ev.frozen_state(instance.occurrences),
                               effects, failures)
                if effects.terminate is not None:
                    break
            prov = self._provenance("recovery")
            instance = self._reload(instance.id)
            instance = self._close_and_announce(
                compiled, instance, effects, prov, failures, appended_fields=[], set_completed_now=False
            )
            if effects.terminate is None and effects.patch:
                staged = self._stage_patch(compiled, effects.patch)
                if staged:
                    instance, _ = self._cycle(compiled, instance, lambda inst: (staged, {}), prov, failures, round_no=1)
            return instance, rerun, failures

    def _migrate(self, compiled: CompiledForm, instance: Instance) -> tuple[Instance, MigrateResult]:
        """Move the instance to the registered version through an ordinary commit cycle
        (docs/engine.md, "Drift"): the answers the form's ``migrate`` carries (without one, every
        answer to a field the new version still has) are written where the new version accepts
        them; the rest are withdrawn and reported."""
        old_version = instance.def_version
        old_values = instance.in_force_values()
        result = MigrateResult(view=None, from_version=old_version, to_version=compiled.version)  # type: ignore[arg-type]
        if compiled.migrate is not None:
            try:
                carried = compiled.migrate(dict(old_values), old_version)
            except Exception as exc:
                raise FormError(
                    f'Migrating "{compiled.id}" from version {old_version} to {compiled.version} failed: {exc}',
                    code="form_migration_failed",
                ) from exc
            if not isinstance(carried, dict):
                raise FormError(
                    f'migrate() for "{compiled.id}" must return a dict of values, not {type(carried).__name__}.',
                    code="form_migration_failed",
                )
        else:
            carried = {key: value for key, value in old_values.items() if key in compiled.field_by_id}
        staged: dict[str, _Staged] = {}
        kept: set[str] = set()
        refused: set[str] = set()
        for key, value in carried.items():
            field_id = compiled.resolve_field(key)
            if field_id is None:
                continue
            try:
                value = json_data(value)
            except ValueError as exc:
                raise FormError(
                    f'migrate() for "{compiled.id}" returned a value for "{key}" that is not JSON data ({exc}).',
                    code="form_migration_failed",
                ) from None
            if is_blank(value):
                continue
            field = compiled.field_by_id[field_id]
            outcome = field.validator.validate(value)
            if not outcome.ok:
                refused.add(field_id)
                for issue in outcome.issues:
                    result.rejected.append(
                        Rejected(field_id, issue.message, issue_hint(issue, value, field.description, field.type))
                    )
                continue
            kept.add(field_id)
            if field_id in old_values and old_values[field_id] == value:
                continue
            staged[field_id] = _Staged(field_id, value, outcome, field.validator)
        for field_id, value in old_values.items():
            if field_id not in kept:
                staged[field_id] = _Staged(field_id, None, retract=True)
                if field_id not in refused:
                    result.dropped[field_id] = value
        items = builtins.list(staged.values())
        new_version = compiled.version

        def extra(inst: Instance) -> dict[str, Any]:
            out: dict[str, Any] = {"def_version": new_version}
            if inst.status == Status.STALE:  # committed by an older formctl, whose reads marked it
                out["status"] = Status.ACTIVE
            return out

        with self._lock:
            prov = self._provenance(f"migrated {old_version} → {new_version}")
            failures: builtins.list[Failure] = []
            instance, _ = self._cycle(compiled, instance, lambda inst: (items, {}), prov, failures, extra=extra)
            ev = self._evaluation(compiled, instance)
            result.view = step_view(compiled, ev, instance)
            result.failures = failures or open_failures(instance, compiled, ev)
        return instance, result

# ---------------------------------------------------------------------- helpers


def _abandoned(instance_id: str) -> str:
    return f'Form instance "{instance_id}" was abandoned and no longer accepts answers.'


def _check_open(compiled: CompiledForm, instance: Instance) -> None:
    """Closing is final (docs/engine.md, "Completion and closing"): an abandoned or complete
    instance cannot be abandoned, and the reason it was closed with stays. A stale one reads
    stale, not complete, and abandoning is how it is closed."""
    if instance.status == Status.ABANDONED:
        why = f" ({instance.closed_reason})" if instance.closed_reason else ""
        raise FormError(f'Form instance "{instance.id}" is already abandoned{why}.', code="form_closed")
    if instance.status == Status.COMPLETE and not is_stale(compiled, instance):
        raise FormError(f'Form instance "{instance.id}" is complete; a complete form cannot be abandoned.',
                        code="form_closed")


def _check_writable(compiled: CompiledForm, instance: Instance) -> None:
    if instance.status == Status.ABANDONED:
        raise FormError(_abandoned(instance.id))
    if instance.status == Status.AWAITING and instance.blocked_on:
        cp = compiled.checkpoint_by_id.get(instance.blocked_on)
        raise FormBlockedError(instance.blocked_on, cp.wait_message if cp is not None else None)


def _required_invalid(compiled: CompiledForm, ev: Evaluation) -> bool:
    return any(f.required and ev.status[f.order] == INVALID for f in compiled.fields)


def _settled(compiled: CompiledForm, ev: Evaluation, instance: Instance, forced: bool) -> str:
    """The status a settled (not awaiting) instance should have: complete or active."""
    if (ev.complete or forced) and not blocking_failure_open(compiled, ev, instance):
        return Status.COMPLETE
    return Status.ACTIVE


def _rising_edges(
    compiled: CompiledForm, instance: Instance, before: Evaluation, after: Evaluation
) -> tuple[list[_Hook], dict[str, int]]:
    """Field, step and checkpoint hooks to run, in the fixed order, and the counters their edges bump.

    The form's own edge is the status moving into complete; the cycle adds it.
    """
    stored = instance.occurrences
    bumped: dict[str, int] = {}
    queue: list[_Hook] = []

    def bump(key: str) -> int:
        n = stored.get(key, 0) + 1
        bumped[key] = n
        return n

    before_live = before.live
    for field in compiled.fields:
        fid = field.id
        if fid in after.live and fid not in before_live:
            n = bump(f"field:{fid}")
            if field.on_fill is not None:
                queue.append(_Hook(f"field:{fid}", field.on_fill, n))
    for step in compiled.steps:
        k = step.index - 1
        if after.step_complete[k] and not before.step_complete[k]:
            n = bump(f"step:{step.id}")
            if step.on_complete is not None:
                queue.append(_Hook(f"step:{step.id}", step.on_complete, n))
    for cp in compiled.checkpoints:
        if after.checkpoint_active[cp.index] and not before.checkpoint_active[cp.index]:
            n = bump(f"checkpoint:{cp.id}")
            queue.append(_Hook(f"checkpoint:{cp.id}", cp.run, n, cp))
    return queue, bumped


def _call_executor(fn: Callable[[Any], Any], ctx: ExecutorContext) -> tuple[str | None, list[Any]]:
    try:
        result = fn(ctx)
        if inspect.isawaitable(result):
            result = _run_awaitable(result)
    except Exception as exc:
        return (str(exc) or exc.__class__.__name__), []
    if result is None or result is False:
        return None, []
    items = list(result) if isinstance(result, (list, tuple)) else [result]
    for item in items:
        if not isinstance(item, Effect):
            return (
                f"Executor returned {type(item).__name__} {item!r:.60}, not an effect "
                "(Patch, Fail, Jump, Complete or Terminate).",
                [],
            )
    for item in items:
        if isinstance(item, Fail):
            return (item.reason or "Rejected."), []
    return None, items


def _check_effects(compiled: CompiledForm, items: list[Any]) -> str | None:
    """Effects naming what the form does not have fail the hook, applying none of them.

    A jump to no step or a patch to no field is a bug in the executor, worth a visible
    failure rather than a silent drop (docs/engine.md, 'Commit then run').
    """
    for item in items:
        if isinstance(item, Jump) and compiled.resolve_step(item.step) is None:
            return f'Jump to unknown step "{item.step}".'
        if isinstance(item, Patch):
            if not isinstance(item.values, dict):
                return "Patch needs a dict of field ids to values."
            for key, value in item.values.items():
                if compiled.resolve_field(key) is None:
                    return f'Patch names unknown field "{key}".'
                field = compiled.field_by_id[compiled.resolve_field(key)]
                too_big = size_issue(value, field.text_limit(compiled.max_text))
                if too_big is not None:
                    return f'Patch value for "{key}" is refused: {too_big.message}'
                try:
                    json_data(value)
                except ValueError as exc:
                    return f'Patch value for "{key}" is not JSON data ({exc}).'
    return None


def _apply_effects(compiled: CompiledForm, items: list[Any], effects: _RoundEffects) -> None:
    for item in items:
        if isinstance(item, Patch):
            effects.patch.update(item.values)
        elif isinstance(item, Jump):
            effects.jump = compiled.resolve_step(item.step)
        elif isinstance(item, Complete):
            effects.complete = True
        elif isinstance(item, Terminate):
            effects.terminate = item.reason or "Terminated."


def _run_awaitable(awaitable: Any) -> Any:
    import asyncio  # only async executors need it; host commands start faster without it

    async def wrapper() -> Any:
        return await awaitable

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(wrapper())
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(wrapper())
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box.get("value")


def _owner_alive(owner: str | None) -> bool:
    if not owner or ":" not in owner:
        return False
    host, _, pid_text = owner.rpartition(":")
    if host != socket.gethostname():
        return True  # another machine's process: we cannot tell, so we do not steal its work
    try:
        pid = int(pid_text)
    except ValueError:
        return False
    if pid == os.getpid():
        return False  # ours, and not in flight (checked by the caller): left by an earlier crash
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _hook_for(compiled: CompiledForm, hook_id: str, key: str) -> _Hook | None:
    try:
        occurrence = int(key.rsplit(":", 1)[1])
    except (IndexError, ValueError):
        occurrence = 0
    kind, _, name = hook_id.partition(":")
    if kind == "field" and name in compiled.field_by_id:
        fn = compiled.field_by_id[name].on_fill
        return _Hook(hook_id, fn, occurrence) if fn is not None else None
    if kind == "step" and name in compiled.step_by_id:
        fn = compiled.step_by_id[name].on_complete
        return _Hook(hook_id, fn, occurrence) if fn is not None else None
    if kind == "checkpoint" and name in compiled.checkpoint_by_id:
        cp = compiled.checkpoint_by_id[name]
        return _Hook(hook_id, cp.run, occurrence, cp) if cp.run is not None else None
    if hook_id == "form" and compiled.on_complete is not None:
        return _Hook(hook_id, compiled.on_complete, occurrence)
    return None
