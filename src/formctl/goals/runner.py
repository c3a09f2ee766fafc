"""GoalRunner: the only place goal programs are committed.

Every write follows one path: read the head, compute the change with the pure functions of
:mod:`formctl.goals.evaluate`, let the host's ``validate_change`` reject it, commit with
compare-and-set on the version read, then run the hooks of the transitions the commit saved.
The rules are in docs/goals.md; where each is enforced:

* scope: the runner is built for one exact :class:`GoalScope` and has no way to reach
  another; the model's tools (:mod:`formctl.agent.goal_tools`) get a runner, never a scope;
* versions: ``revise`` requires ``if_version``; ``update`` with ``if_version`` (the model's
  updates always pass one) fails on any change since; a host's ``update`` without it is
  retried while the other writers touched other items (:meth:`_disjoint`);
* form-bound items: :meth:`_form_completions`, folded into every write and :meth:`sync`.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from formctl.errors import GoalConflictError, InvalidArgumentError, NotFoundError
from formctl.forms.adapter import FormAdapter
from formctl.forms.instance import now_iso
from formctl.forms.lifecycle import Status, is_open
from formctl.goals.definition import Program, program_digest
from formctl.goals.evaluate import ItemUpdate, Stamp, apply_update, check_revision, evaluate, transitions
from formctl.goals.hooks import DEFAULT_LEASE, HookOutcome, Hooks, check_hooks, run_receipts
from formctl.goals.state import COMPLETED, GoalScope, GoalState, ItemProgress
from formctl.goals.store import GoalStore, HasGoalStore
from formctl.goals.view import GoalStatus, status_of

if TYPE_CHECKING:
    from formctl.forms.instance import Instance

__all__ = ["GoalChange", "GoalRunner", "goal_store_of"]

MAX_ATTEMPTS = 50


@dataclass(frozen=True, slots=True)
class GoalChange:
    """What ``validate_change`` is shown before every commit attempt: the kind of change
    (start | update | revise | form), the status before (None for a start) and after, who and why."""

    kind: str
    before: GoalStatus | None
    after: GoalStatus
    actor: str
    reason: str | None


def goal_store_of(adapter: HasGoalStore | GoalStore | FormAdapter) -> GoalStore:
    """The goal store of a forms adapter (:class:`HasGoalStore`), or ``adapter`` itself when it is one."""
    if isinstance(adapter, HasGoalStore):
        return adapter.goal_store()
    if isinstance(adapter, GoalStore):
        return adapter
    raise InvalidArgumentError(f"{type(adapter).__name__} cannot store goal programs.")


class GoalRunner:
    """Starts, updates, revises and reads one scope's goal program (docs/goals.md)."""

    def __init__(
        self,
        adapter: HasGoalStore | GoalStore | FormAdapter,
        *,
        scope: GoalScope,
        actor: str = "host",
        source: str | None = None,
        hooks: Hooks | object | None = None,
        validate_change: Callable[[GoalChange], object] | None = None,
        lease_seconds: float = DEFAULT_LEASE,
    ) -> None:
        if not isinstance(scope, GoalScope):
            raise InvalidArgumentError("scope must be a GoalScope(subject=, key=, agent=).")
        if not isinstance(actor, str) or not actor:
            raise InvalidArgumentError("actor must be a name.")
        self.store = goal_store_of(adapter)
        # The forms adapter, when there is one: form-bound items read its instances.
        self.forms: FormAdapter | None = adapter if isinstance(adapter, FormAdapter) else None
        self.scope = scope
        self.actor = actor
        self.source = source
        self.hooks = check_hooks(hooks)
        self.validate_change = validate_change
        self.lease_seconds = lease_seconds
        self.last_hooks: list[HookOutcome] = []  # what the last write's hooks did

    # ------------------------------------------------------------------ reads

    def inspect(self) -> GoalStatus | None:
        """The program as it stands, or None before it starts."""
        state = self.store.get(self.scope)
        return status_of(state, self._open_instances(state.program)) if state is not None else None

    def history(self) -> list[GoalStatus]:
        """Every version, oldest first, each a complete snapshot (definitions included)."""
        return [status_of(s) for s in self.store.history(self.scope)]

    # ------------------------------------------------------------------ writes

    def start(self, program: Program, *, reason: str | None = None) -> GoalStatus:
        """Start ``program`` in this scope. A scope runs one program: starting again is a conflict."""
        if not isinstance(program, Program):
            raise InvalidArgumentError("start() takes a program from define_program().")
        current = self.store.get(self.scope)
        if current is not None:
            raise GoalConflictError(
                None,
                current.version,
                f'This scope already runs program "{current.program.key}" (version {current.version}); '
                "revise it instead.",
            )
        at = now_iso()
        progress = self._with_forms(program, {}, version=1, at=at)
        after = evaluate(program, progress)
        state = GoalState(
            scope=self.scope,
            version=1,
            program=program,
            progress=progress,
            created_at=at,
            updated_at=at,
            actor=self.actor,
            source=self.source,
            change="start",
            reason=reason,
            transitions=transitions(None, after, scope_id=self.scope.id, version=1, reason=reason),
        )
        return self._commit(None, state, "start", reason)

    def update(
        self,
        goal: str,
        completed: Iterable[str] = (),
        deferred: Iterable[str] = (),
        declined: Iterable[str] = (),
        reopened: Iterable[str] = (),
        reason: str | None = None,
        if_version: int | None = None,
        reasons: Mapping[str, str | None] | None = None,
    ) -> GoalStatus:
        """Settle or reopen items of ``goal`` (any goal, not only the active one).

        ``reason`` is the change's (the history's, the hooks'); an item keeps its own from
        ``reasons`` (item key -> reason), else ``reason`` as :func:`~formctl.goals.evaluate.item_reason` says.

        With ``if_version`` the update fails with GoalConflictError if anything changed since
        that version. Without it (a host's direct update), it is retried on the newest version
        as long as the writes in between touched neither these items nor the definitions."""
        if not isinstance(goal, str) or not goal:
            raise InvalidArgumentError("update() needs goal=, the goal's key.")
        update = ItemUpdate.listed(goal, (completed, deferred, declined, reopened), reasons)
        first: GoalState | None = None
        for attempt in range(MAX_ATTEMPTS):
            current = self._head()
            if if_version is not None and current.version != if_version:
                raise GoalConflictError(if_version, current.version)
            first = current if first is None else first
            state = self._updated(first, current, update, reason)
            if state is None:
                return status_of(current, self._open_instances(current.program))  # repeated dispositions
            try:
                return self._commit(current, state, "update", reason)
            except GoalConflictError:
                if if_version is not None:
                    raise
                time.sleep(random.uniform(0, 0.002 * (attempt + 1)))
        raise GoalConflictError(None, None, "The goal program kept changing under the update; try again.")

    def _updated(
        self, first: GoalState, current: GoalState, update: ItemUpdate, reason: str | None
    ) -> GoalState | None:
        """The state ``update`` makes of ``current`` (an update read at ``first`` and retried on a
        newer head: refused unless the writes between touched neither its items nor the
        definitions); None when it changes nothing."""
        at = now_iso()
        stamp = Stamp(current.version + 1, at, self.actor, reason)
        progress, _ = apply_update(current.program, current.progress, update, stamp)
        if first is not current and not self._disjoint(first, current, update.goal, update.named()):
            raise GoalConflictError(
                first.version,
                current.version,
                f"Another write changed the same items or the definitions (version {first.version} → "
                f"{current.version}). Read the status and reconsider.",
            )
        progress = self._with_forms(current.program, progress, version=current.version + 1, at=at)
        if progress == current.progress:
            return None
        return self._next(current, current.program, progress, "update", reason, at)

    def revise(self, program: Program, *, if_version: int, reason: str | None = None) -> GoalStatus:
        """Replace the definitions with ``program`` (the whole ordered program). Progress is kept
        by stable keys, for removed definitions too."""
        if not isinstance(program, Program):
            raise InvalidArgumentError("revise() takes a program from define_program().")
        if not isinstance(if_version, int) or isinstance(if_version, bool):
            raise InvalidArgumentError("revise() needs if_version=, the version the revision was made from.")
        current = self._head()
        if current.version != if_version:
            raise GoalConflictError(if_version, current.version)
        check_revision(current.program, program)
        at = now_iso()
        progress = self._with_forms(program, dict(current.progress), version=current.version + 1, at=at)
        state = self._next(current, program, progress, "revise", reason, at)
        return self._commit(current, state, "revise", reason)

    def sync(self) -> GoalStatus | None:
        """Settle form-bound items whose form instance completed since; a no-op (no new
        version) when there is none. None before the program starts."""
        for _ in range(MAX_ATTEMPTS):
            current = self.store.get(self.scope)
            if current is None:
                return None
            at = now_iso()
            progress = self._with_forms(current.program, dict(current.progress), version=current.version + 1, at=at)
            if progress == current.progress:
                return status_of(current, self._open_instances(current.program))
            state = self._next(current, current.program, progress, "form", None, at)
            try:
                return self._commit(current, state, "form", None)
            except GoalConflictError:
                continue
        raise GoalConflictError(None, None, "The goal program kept changing under the form sync; try again.")

    def resume_hooks(self) -> list[HookOutcome]:
        """Run every hook not yet done: failed ones, and ones whose process died mid-run (same key)."""
        from formctl.goals.state import RECEIPT_OK

        todo = [r for r in self.store.receipts(self.scope) if r.status != RECEIPT_OK]
        if not todo:
            return []
        versions: dict[int, Program] = {}

        def program_at(version: int) -> Program | None:
            if not versions:
                versions.update({s.version: s.program for s in self.store.history(self.scope)})
            return versions.get(version)

        return run_receipts(self.store, self.scope, self.hooks, todo, program_at, lease_seconds=self.lease_seconds)

    # ------------------------------------------------------------------ plumbing

    def _head(self) -> GoalState:
        current = self.store.get(self.scope)
        if current is None:
            raise NotFoundError(f"No goal program has started in {self.scope}.")
        return current

    def _next(
        self,
        current: GoalState,
        program: Program,
        progress: dict[tuple[str, str], ItemProgress],
        change: str,
        reason: str | None,
        at: str,
    ) -> GoalState:
        version = current.version + 1
        before = evaluate(current.program, current.progress)
        after = evaluate(program, progress)
        return GoalState(
            scope=self.scope,
            version=version,
            program=program,
            progress=progress,
            created_at=current.created_at,
            updated_at=at,
            actor=self.actor,
            source=self.source,
            change=change,
            reason=reason,
            transitions=transitions(before, after, scope_id=self.scope.id, version=version, reason=reason),
        )

    def _commit(self, current: GoalState | None, state: GoalState, kind: str, reason: str | None) -> GoalStatus:
        if self.validate_change is not None:
            # Runs before every attempt (a retried update shows it the newest state); it must
            # not have side effects, and rejects by raising, which reaches the caller as is.
            self.validate_change(
                GoalChange(
                    kind, status_of(current) if current is not None else None, status_of(state), self.actor, reason
                )
            )
        committed = self.store.commit(self.scope, state, if_version=current.version if current is not None else None)
        self.last_hooks = []
        if committed.transitions:
            keys = {t.key for t in committed.transitions}
            receipts = [r for r in self.store.receipts(self.scope) if r.key in keys]
            self.last_hooks = run_receipts(
                self.store,
                self.scope,
                self.hooks,
                receipts,
                lambda _version: committed.program,
                lease_seconds=self.lease_seconds,
            )
        return status_of(committed, self._open_instances(committed.program))

    @staticmethod
    def _disjoint(first: GoalState, current: GoalState, goal: str, keys: list[str]) -> bool:
        """May a host's update read at ``first`` be applied at ``current``? Only if nothing between
        touched the definitions or the items it names."""
        if program_digest(first.program) != program_digest(current.program):
            return False
        return all(first.progress.get((goal, k)) == current.progress.get((goal, k)) for k in keys)

    def _with_forms(
        self, program: Program, progress: Mapping[tuple[str, str], ItemProgress], *, version: int, at: str
    ) -> dict[tuple[str, str], ItemProgress]:
        out = dict(progress)
        for (goal, item), instance in self._form_completions(program, progress).items():
            out[(goal, item)] = ItemProgress(
                COMPLETED, COMPLETED, version, at, self.actor, f'Form "{instance[1]}" completed.', instance[0]
            )
        return out

    def _form_completions(
        self, program: Program, progress: Mapping[tuple[str, str], ItemProgress]
    ) -> dict[tuple[str, str], tuple[str, str]]:
        """Live form-bound items not completed whose form the subject completed since the item's
        last change: ``{(goal, item): (instance id, form id)}``."""
        if self.forms is None:
            return {}
        found: dict[tuple[str, str], tuple[str, str]] = {}
        cache: dict[str, list[Instance]] = {}
        for goal in program.goals:
            if goal.retired:
                continue
            for item in goal.items:
                if item.form is None or item.retired:
                    continue
                p = progress.get((goal.key, item.key))
                if p is not None and p.disposition == COMPLETED:
                    continue
                if item.form not in cache:
                    cache[item.form] = self.forms.find_instances(
                        subject=self.scope.subject, def_id=item.form, status=Status.COMPLETE
                    )
                for instance in cache[item.form]:
                    done_at = instance.completed_at or instance.updated_at
                    if p is None or done_at > p.at:
                        found[(goal.key, item.key)] = (instance.id, item.form)
                        break
        return found

    def _open_instances(self, program: Program) -> dict[str, str]:
        """Form id → the subject's open instance of it, for the form-bound items shown."""
        if self.forms is None:
            return {}
        forms = {i.form for g in program.goals for i in g.items if i.form is not None}
        out: dict[str, str] = {}
        for form in sorted(forms):
            for instance in self.forms.find_instances(subject=self.scope.subject, def_id=form):
                if is_open(instance):
                    out[form] = instance.id
                    break
        return out
