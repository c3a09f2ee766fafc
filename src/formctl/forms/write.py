"""One write: the commit cycle of one operation, as one object.

Every write (start, fill, revise, retract, undo, redo, submit, resolve_checkpoint, migrate,
recover) follows one cycle (docs/engine.md, "Commit then run"):

1. stage the revisions (validated once, and never again: :mod:`formctl.forms.staging`);
2. evaluate the stored instance (``before``) and the projected one (``after``), find the
   rising edges, and commit entries, occurrence counters and status in one
   compare-and-set write (:meth:`Write.commit_retrying`, the one retry loop: under the
   adapter's lock when it offers one, else re-reading and rebuilding on a conflict for up to
   two seconds, :mod:`formctl.forms.contention`);
3. only then run the executors the edges imply (:mod:`formctl.forms.executors`), in the
   fixed order (field ``on_fill``, step ``on_complete``, checkpoint ``run``, form
   ``on_complete``), each under its idempotency key ``instance:hook:occurrence``;
4. apply their effects in a closing commit (announcing a completion that causes), and write
   any patches as further rounds.

A :class:`Write` owns what that needs: the adapter, the dispatcher, the compiled form, the
provenance, the evaluations and the failures the rounds collect. The runner makes one per
operation and builds the result once, at the end (:meth:`Write.result`); recovery and
migration (:mod:`formctl.forms.recovery`) drive the same object. Nothing here imports the runner.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple, TypeVar

from formctl.errors import ConflictError, FormDefinitionError, NeedsReopenError, NotFoundError
from formctl.forms.acts import Act, act_dispatch
from formctl.forms.adapter import FormAdapter
from formctl.forms.compile import CompiledForm
from formctl.forms.contention import Attempts, exclusive_of
from formctl.forms.evaluate import FILLED, HELD, INVALID, Evaluation, evaluate, evaluate_change
from formctl.forms.executors import Dispatcher, Hook, HookRound, RoundEffects
from formctl.forms.failures import Failure
from formctl.forms.instance import COMPLETE, UNSET, Commit, Instance, Provenance
from formctl.forms.lifecycle import check_open_for_writes, is_closed, is_closed_record
from formctl.forms.project import FieldRow, FillResult, WriteReport, field_row, step_view
from formctl.forms.staging import (
    Projection,
    RoundEnd,
    Settling,
    Staged,
    closing_commit,
    follow_derived,
    project_write,
    required_invalid,
    rising_edges,
    settle_status,
    stage_patch,
)

__all__ = ["MAX_ROUNDS", "Amend", "Evaluations", "OnCommit", "Outcome", "Plan", "Write", "WriteContext", "result_of"]

MAX_ROUNDS = 8
EVALUATIONS_KEPT = 64

Plan = Callable[[Instance], tuple[list[Staged], dict[str, int]]]
"""What a write appends and which cursors it moves, decided over the instance as it is read
(again, after a conflict): ``(staged values, {field id: new cursor})``."""

OnCommit = Callable[[Instance | None, Instance], None]
"""Told of every commit a runner makes, once it has landed: ``(the instance as stored when the
commit was made over it, or None for a start; the instance the commit produced)``. A chat keeps
them, so it can tell its own writes from a colleague's made at the same moment (docs/chat.md,
"Two chats on one instance")."""

R = TypeVar("R", bound=FillResult)


class Evaluations:
    """Evaluations cached per (instance id, version), shared by a runner's reads and writes: a
    write evaluates the instance it stores once, and the next operation starts from it."""

    __slots__ = ("_cache",)

    def __init__(self) -> None:
        self._cache: dict[str, tuple[int, CompiledForm, Evaluation]] = {}

    def of(self, compiled: CompiledForm, instance: Instance) -> Evaluation:
        cached = self._cache.get(instance.id)
        if cached is not None and cached[0] == instance.version and cached[1] is compiled:
            return cached[2]
        # A closed record on an older version reads as it closed (docs/engine.md, "Closed records").
        ev = evaluate(compiled, instance, as_written=is_closed_record(compiled, instance))
        self.remember(instance, compiled, ev)
        return ev

    def remember(self, instance: Instance, compiled: CompiledForm, ev: Evaluation) -> None:
        if len(self._cache) > EVALUATIONS_KEPT:
            self._cache.clear()
        self._cache[instance.id] = (instance.version, compiled, ev)


Amend = Callable[[Instance, Commit], None]
"""What an operation adds to its round's main commit, decided over the instance as it is read
(again, after a conflict): its act, a new version, a reopening (by a transition of
:mod:`formctl.forms.lifecycle`, never a status set by hand)."""


def _nothing() -> None:
    return None


# WriteContext, and Outcome below, are NamedTuples rather than frozen dataclasses (as
# formctl.forms.validate's Outcome is): one of each is built on every write, and a frozen
# dataclass's __init__ showed in benchmarks/engine.py's instruction count.
class WriteContext(NamedTuple):
    """What a runner hands each of its writes: the store, the dispatcher, the evaluations it
    shares with its reads, its clock, and what it is told (a conflict retried, a commit landed).

    ``reopening``: may the write take a complete instance back to ready or active (docs/engine.md,
    "Host acts")? None: yes (a model, the person, the API); False: refused (a host command
    without --reopen); True: yes, on the host's explicit word, recorded as such.
    """

    adapter: FormAdapter
    dispatcher: Dispatcher
    evaluations: Evaluations
    clock: Callable[[], str]
    on_conflict: Callable[[], None] = _nothing
    reopening: bool | None = None
    on_commit: OnCommit | None = None


@dataclass(slots=True)
class _Round:
    """The attempt of a round's main commit that landed: what the rest of the round needs."""

    staged_ids: list[str]
    queue: list[Hook]
    after: Evaluation
    fired_before: dict[str, int]
    stamped_completion: bool  # the main commit stamped completed_at (a Terminate then unstamps it)


class _MainCommit:
    """A round's main commit, built afresh over the instance as read at each attempt
    (:meth:`Write.commit_retrying`). It keeps what the attempt that landed decided and, when no
    hook runs, the closing commit made under the same hold of the store's lock."""

    __slots__ = ("amend", "closed", "is_start", "landed", "plan", "reopens", "round_no", "write")

    def __init__(
        self, write: Write, plan: Plan, *, is_start: bool, amend: Amend | None, round_no: int, reopens: bool
    ) -> None:
        self.write, self.plan, self.is_start, self.amend = write, plan, is_start, amend
        self.round_no, self.reopens = round_no, reopens
        self.landed: _Round | None = None
        self.closed: Instance | None = None

    def build(self, inst: Instance) -> Commit:
        write, compiled = self.write, self.write.compiled
        if not self.reopens:
            check_open_for_writes(inst)  # closed under us (read again after a conflict): nothing more may be written
        staged, moves = self.plan(inst)
        before, after, projection = self.project(inst, staged, moves)
        queue, occurrences = rising_edges(compiled, inst, before, after, projection.changes)
        commit = Commit(entries=projection.changes or None, occurrences=occurrences or None)
        if projection.appended:
            commit.revision_seq = inst.revision_seq + len(projection.appended)
        forced_after = inst.forced_complete and not required_invalid(compiled, after)
        if inst.forced_complete and not forced_after:
            commit.forced_complete = False
        if self.amend is not None:
            self.amend(inst, commit)
        changes_answers = self.round_no == 0 and bool(projection.changes)
        stored_status = inst.status if commit.status is UNSET else commit.status  # reopened by the amendment
        settling = Settling(inst, stored_status, projection.instance, after, queue, forced_after, changes_answers)
        settle_status(commit, compiled, settling, write.prov.timestamp)
        if self.round_no == 0:
            write.check_reopening(inst, commit)
        self.form_edge(inst, commit, queue)
        stamped = commit.completed_at is not UNSET
        self.landed = _Round([s.field_id for s in staged], queue, after, inst.occurrences, stamped)
        return commit

    def project(
        self, inst: Instance, staged: list[Staged], moves: dict[str, int]
    ) -> tuple[Evaluation, Evaluation, Projection]:
        """The evaluations before and after the write, and what it does to the entries (derived
        values followed); a definition that cannot be evaluated is refused."""
        compiled, prov = self.write.compiled, self.write.prov
        before = Evaluation(compiled) if self.is_start else self.write.evaluations.of(compiled, inst)
        projection = project_write(inst, staged, moves, prov)
        fired = inst.occurrences
        if self.is_start:
            after = evaluate(compiled, projection.instance, fired=fired)
        else:
            after = evaluate_change(compiled, before, projection.instance, projection.changes, fired=fired)
        if after.derived_due:
            after = follow_derived(compiled, after, projection, prov, fired)
        if after.defects:
            raise FormDefinitionError(
                f'Form "{compiled.id}" cannot be evaluated: {"; ".join(after.defects)}.', after.defects
            )
        return before, after, projection

    def form_edge(self, inst: Instance, commit: Commit, queue: list[Hook]) -> None:
        """The form's on_complete fires on the rising edge of the *status*: so a form waiting on a
        person, or held by a rejected blocking checkpoint, completes (and announces it) only once
        it really is complete, and a forced completion is announced exactly once."""
        if commit.status != COMPLETE or inst.status == COMPLETE:
            return
        n = inst.occurrences.get("form", 0) + 1
        commit.occurrences = {**(commit.occurrences or {}), "form": n}
        on_complete = self.write.compiled.on_complete
        if on_complete is not None:
            queue.append(Hook("form", on_complete, n))

    def then(self, committed: Instance) -> None:
        """Right after the main commit lands, inside the same hold."""
        done = self.landed
        if done is None:  # pragma: no cover - it lands only what build built
            return
        if not done.after.read_fired:
            self.write.evaluations.remember(committed, self.write.compiled, done.after)
        # With no hook to run, nothing comes between this round's main commit and its closing
        # commit: it is made under the same hold of the store's lock, over the instance the
        # main commit produced, which nobody can have changed since (no re-read, no second
        # lock; on PostgreSQL, two round trips fewer).
        if not done.queue:
            end = RoundEnd(RoundEffects(), done.staged_ids, done.stamped_completion)
            self.closed = self.write.close_round(committed, end, held=True)


class Write:
    """One operation's commits, with everything they need. Not reused across operations."""

    def __init__(self, context: WriteContext, compiled: CompiledForm, prov: Provenance) -> None:
        self.adapter = context.adapter
        self.exclusive = exclusive_of(context.adapter)  # the lock each commit attempt holds, if the store has one
        self.dispatcher = context.dispatcher
        self.evaluations = context.evaluations
        self.compiled = compiled
        self.prov = prov
        self.clock = context.clock
        self.on_conflict = context.on_conflict  # the runner counts the retries (``conflict_retries``)
        self.failures: list[Failure] = []  # what the hooks run by this write reported
        self.reopening = context.reopening  # see :class:`WriteContext`
        self.on_commit = context.on_commit
        # The evaluation of an instance (cached per version), asked on every attempt of every
        # round: a partial, so the call adds no Python frame of its own.
        self.evaluation: Callable[[Instance], Evaluation] = partial(context.evaluations.of, compiled)

    # ------------------------------------------------------------------ reading

    def reload(self, instance_id: str) -> Instance:
        instance = self.adapter.get_instance(instance_id)
        if instance is None:
            raise NotFoundError(f'No form instance "{instance_id}".')
        return instance

    # ------------------------------------------------------------------ committing

    def commit_retrying(
        self,
        instance: Instance,
        build: Callable[[Instance], Commit | None],
        *,
        skip_empty: bool = True,
        held: bool = False,
        then: Callable[[Instance], None] | None = None,
    ) -> Instance:
        """Commit ``build(instance)``; on a conflict re-read and rebuild (see :mod:`formctl.forms.contention`).

        ``build`` sees the instance as stored at each attempt (re-read inside the adapter's lock
        when it offers one) and may raise to refuse it. An empty commit is not written unless
        ``skip_empty`` is False (a round's main commit always lands: it bumps the version a
        reader's "most recently updated" goes by). ``held``: the caller holds the lock already
        and ``instance`` is as stored under it, so the attempts neither take the lock again nor
        re-read first (a conflict, from a writer the lock does not keep out, still re-reads).
        ``then`` runs inside the same hold, right after the commit lands, given what it produced.
        """
        attempts = Attempts(None if held else self.exclusive, instance.id)
        while True:
            with attempts.hold():
                if attempts.serialised:
                    instance = self.reload(instance.id)
                commit = build(instance)
                if commit is None or (skip_empty and commit.is_empty()):
                    return instance
                try:
                    committed = self.adapter.commit_instance(
                        instance.id, commit, if_version=instance.version, provenance=self.prov
                    )
                except ConflictError:
                    if attempts.expired():
                        raise
                    self.on_conflict()
                    instance = self.reload(instance.id)
                else:
                    if self.on_commit is not None:
                        self.on_commit(instance, committed)
                    if then is not None:
                        then(committed)
                    return committed
            attempts.pause()

    def cycle(
        self,
        instance: Instance,
        plan: Plan,
        *,
        is_start: bool = False,
        amend: Amend | None = None,
        round_no: int = 0,
        reopens: bool = False,
    ) -> tuple[Instance, list[str]]:
        """One commit round and the rounds its patches cause. Returns the final instance and the
        ids of the fields the first round staged. ``amend`` adds the operation's own fields to the
        main commit. ``reopens``: ``amend`` opens a closed instance in the same commit
        (:mod:`formctl.forms.ending`), so a closed one is not refused."""
        main = _MainCommit(self, plan, is_start=is_start, amend=amend, round_no=round_no, reopens=reopens)
        committed = self.commit_retrying(instance, main.build, skip_empty=False, then=main.then)
        done = main.landed
        if done is None:  # pragma: no cover - commit_retrying lands a built commit or raises
            raise RuntimeError("the round's main commit did not land")
        effects = self.dispatcher.dispatch(
            self.compiled, committed, done.queue, done.after, done.fired_before, self.failures
        )
        if done.queue:
            # Re-read, so the closing commit and the result see the dispatch
            # records (written outside compare-and-set, without a version bump).
            committed = self.reload(committed.id)
        end = RoundEnd(effects, done.staged_ids, done.stamped_completion)
        committed = self.finish_round(committed, end, round_no=round_no, closed=main.closed)
        return committed, done.staged_ids

    def check_reopening(self, instance: Instance, commit: Commit) -> None:
        """A commit that takes a complete instance back to ready or active: refused unless this
        write may (:attr:`reopening`), and recorded as a ``reopen`` act in the same commit."""
        if instance.status != COMPLETE or commit.status is UNSET or commit.status == COMPLETE:
            return
        if self.reopening is False:
            raise NeedsReopenError(
                f'Form instance "{instance.id}" is complete; this would take it back to {commit.status}. '
                "Add --reopen to do it anyway (it is recorded)."
            )
        note = self.prov.note
        # the act that reopens it (an undo, a submit...) is in this commit: the reopening shares its time
        at = next(
            (r.at for r in (commit.dispatches or {}).values() if r.hook_id.startswith("act:")), self.prov.timestamp
        )
        head, sep, rest = (note or "").partition(": ")
        act = act_dispatch(
            instance,
            Act(
                "reopen",
                self.prov.actor,
                at,
                reason=(rest or None) if sep else None,
                detail=f"complete → {commit.status} ({head or 'a change'})",
                override="--reopen" if self.reopening else None,
            ),
        )
        commit.dispatches = {**(commit.dispatches or {}), **act}

    def close_round(self, committed: Instance, end: RoundEnd, *, held: bool = False) -> Instance:
        """The round's closing commit: unblock, jump or release the override, settle the status
        (:func:`~formctl.forms.staging.closing_commit`); ``held`` as in :meth:`commit_retrying`."""
        compiled = self.compiled

        def build(inst: Instance) -> Commit:
            return closing_commit(compiled, inst, end, self.evaluation, self.clock)

        return self.commit_retrying(committed, build, held=held)

    def finish_round(
        self, committed: Instance, end: RoundEnd, *, round_no: int = 0, closed: Instance | None = None
    ) -> Instance:
        """Close the round (unless ``closed``: the closing commit made already, see :meth:`cycle`),
        announce a completion the closing causes, then write the hooks' patches as the next round."""
        was = committed.status
        instance = closed if closed is not None else self.close_round(committed, end)
        if instance.status == COMPLETE and was != COMPLETE:
            instance = self.fire_completion(instance)
        # A hook may have closed the form meanwhile (the on_complete just fired, or a round it
        # patched terminated it): the round's remaining patches are dropped, not refused, so the
        # write that caused all this reports the close (docs/engine.md "Patch rounds").
        if is_closed(instance):
            return instance
        effects = end.effects
        if effects.terminate is None and effects.patch and round_no < MAX_ROUNDS:
            staged = stage_patch(self.compiled, effects.patch, effects.patched_by)
            if staged:
                instance, _ = self.cycle(instance, lambda inst: (staged, {}), round_no=round_no + 1)
        return instance

    def fire_completion(self, instance: Instance) -> Instance:
        """The status rose into complete outside a main commit (a closing commit, a resolution, a
        submit): bump the form's occurrence counter, then run its on_complete (commit, then run)."""
        compiled = self.compiled
        instance = self.commit_retrying(
            instance, lambda inst: Commit(occurrences={"form": inst.occurrences.get("form", 0) + 1})
        )
        if compiled.on_complete is None:
            return instance
        occurrence = instance.occurrences["form"]
        ev = self.evaluation(instance)
        round_ = HookRound.of(compiled, ev, instance.occurrences, self.failures)
        self.dispatcher.run_hook(instance, Hook("form", compiled.on_complete, occurrence), round_)
        effects = round_.effects
        instance = self.reload(instance.id)
        # set_completed_now: the status has just risen into complete, so a Terminate from the
        # on_complete leaves the form never completed, as in the main round.
        return self.finish_round(instance, RoundEnd(effects, [], set_completed_now=True))

    # ------------------------------------------------------------------ the result

    def result(
        self,
        instance: Instance,
        report: WriteReport | None = None,
        staged_ids: list[str] | None = None,
        *,
        moved: str | None = None,
        kind: type[R] = FillResult,  # type: ignore[assignment]  # the default is the bound itself
        **extra: Any,
    ) -> R:
        """The result of this write over the final instance (see :func:`result_of`)."""
        outcome = Outcome(report, staged_ids, self.failures, moved)
        return result_of(self.compiled, self.evaluation(instance), instance, outcome, kind=kind, **extra)

    def sent(self, instance: Instance) -> FillResult:
        """The result of a submit: what was sent is what was read back, so its view shows no step."""
        return result_of(self.compiled, self.evaluation(instance), instance, Outcome(failures=self.failures, sent=True))


class Outcome(NamedTuple):
    """What a write did, for its result (:func:`result_of`): what checking the values found
    (``report``), the fields it staged, the failures its hooks reported, the field an undo, redo
    or retract moved, and whether it was a submit (``sent``)."""

    report: WriteReport | None = None
    staged_ids: list[str] | None = None
    failures: list[Failure] | None = None
    moved: str | None = None
    sent: bool = False


NOTHING_WRITTEN = Outcome()


def result_of(
    compiled: CompiledForm,
    ev: Evaluation,
    instance: Instance,
    outcome: Outcome = NOTHING_WRITTEN,
    *,
    kind: type[R] = FillResult,  # type: ignore[assignment]  # the default is the bound itself
    **extra: Any,
) -> R:
    """A write's result, built once over the final instance: the view (the open step, or the first
    staged field's step when none is open), what the staged fields amount to, what checking the
    values found, the failures the write's hooks reported (else those still open), and what a
    moved field (undo, redo, retract) holds now. A submit's (``outcome.sent``) view shows no step
    (what was sent is what was read back)."""
    staged_ids = outcome.staged_ids or []
    report = outcome.report or WriteReport()
    captured: list[str] = []
    held: list[str] = []
    for field_id in dict.fromkeys(staged_ids):
        status = ev.field_status(field_id)
        if status == FILLED:
            captured.append(field_id)
        elif status == HELD:
            held.append(field_id)
    if outcome.sent:
        view = step_view(compiled, ev, instance)
        view.step, view.fields = None, []
    elif ev.open_step is None and staged_ids:
        view = step_view(compiled, ev, instance, compiled.steps[compiled.field_by_id[staged_ids[0]].step_index].id)
    else:
        view = step_view(compiled, ev, instance)
    return kind(
        view=view,
        captured=captured,
        held=held,
        renamed=report.renamed,
        unknown=report.unknown,
        rejected=report.rejected,
        ignored=report.ignored,
        failures=outcome.failures or list(view.failures),  # the view's header asked open_failures already
        unconfirmed=report.unconfirmed,
        moved=_moved_row(compiled, ev, instance, outcome.moved),
        **extra,
    )


def _moved_row(compiled: CompiledForm, ev: Evaluation, instance: Instance, field_id: str | None) -> FieldRow | None:
    """What the field an undo, redo or retract moved holds now. Unlike a view's row, an invalid
    answer's raw value is given too (with its ``error``): a move can put back a value refused
    when it was written, and the person is told which one (docs/engine.md, "The answer log")."""
    if field_id is None or field_id not in compiled.field_by_id:
        return None
    row = field_row(compiled, ev, instance, field_id)
    log = instance.entries.get(field_id)
    entry = log.at_cursor if log is not None else None
    if row.status == INVALID and entry is not None and not entry.retracted:
        row.value, row.has_value = entry.value, True
    return row
