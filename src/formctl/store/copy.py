"""Copying a store into another, both ways: everything a team stores, then proof.

``formctl store copy --from .formctl --to postgresql://…`` moves a team onto the shared store;
``--from postgresql://… --to DIR`` makes a backup a person can read (one JSON file per
instance). Each instance arrives exactly as it was (id, version, timestamps, every revision of
every answer, dispatch records), in batches. Running it again copies only what changed in
the source since (an instance's later answers are appended to the copy, never written over
it), so a team can copy, keep working locally for a day, and copy again before switching.
Afterwards every instance is read back from both stores and compared whole, and ``check()``
runs on both: the copy is reported verified only if all of it agrees.

What happens to each instance is decided by :func:`outcome`, the same for every target
(docs/store-postgres.md, "Copying"):

* ``copied``: it was not in the target;
* ``updated``: the target held an earlier version of the same history, and gets the rest;
* ``same``: the target holds it already, identical;
* ``newer``: the target holds a later version of the same history (written there since):
  left alone, nothing of the source's is missing from it;
* ``diverged``: both sides wrote answers the other does not have. Nothing is written over
  anything: it is reported with what differs, the other instances are copied as usual, and
  the copy exits non-zero (some were not copied).
* ``refused``: the target could not hold it (a value it cannot store): named, not copied.

The chats' **conversations** and the **goal programs** follow the instances, by the same
outcomes (:func:`conversation_outcome`, :func:`goal_outcome`), verified the same way. A
conversation is written only beside its instance, of the same subject, as a chat's own save
is; a goal program arrives with every version of its history and its hooks' receipts.

**Ctrl-C** is taken between units of work (a batch of instances, a batch of conversations,
one goal program), never inside one: each unit lands whole or not at all, so nothing is left
half-copied, and running the same command again goes on. A second Ctrl-C stops at once (a
database transaction in flight is rolled back; a folder's files are each replaced whole).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from formctl.errors import GoalConflictError, StoreError
from formctl.forms.adapter import Importing
from formctl.forms.instance import FieldLog, Instance
from formctl.goals.state import RECEIPT_PENDING, GoalScope, GoalState, Receipt, state_to_json
from formctl.goals.store import HasGoalStore

BATCH = 200
"""Instances per batch (one transaction on PostgreSQL): a failure loses at most one batch's
work, and a re-run resumes."""

OUTCOMES = ("copied", "updated", "same", "newer", "diverged", "refused")


@runtime_checkable
class CopiesConversations(Protocol):
    """A store that keeps the chats' conversations and can hand them over whole and take them in."""

    def conversation_documents(self) -> tuple[dict[str, dict[str, Any]], list[str]]:
        """Every conversation, by instance id, and one line for each that cannot be read."""
        ...

    def import_conversations(self, items: list[tuple[str, str, dict[str, Any]]]) -> list[tuple[str, str]]:
        """Per (instance id, subject, document), in order: (outcome, why)."""
        ...


@runtime_checkable
class ImportsGoals(Protocol):
    """A goal store that takes a program's history as it was (versions, authors, times) and its receipts."""

    def import_history(
        self, scope: GoalScope, states: list[GoalState], receipts: list[Receipt], *, if_version: int | None
    ) -> None: ...


def _prefix(short: FieldLog | None, long: FieldLog | None) -> bool:
    """``short``'s revisions are the first ones of ``long``'s (an absent log is empty)."""
    a = short.revisions if short is not None else ()
    b = long.revisions if long is not None else ()
    return len(a) <= len(b) and b[: len(a)] == a


def _last(log: FieldLog | None) -> str:
    if log is None or not log.revisions:
        return "no answer"
    entry = log.revisions[-1]
    said = "retracted" if entry.retracted else repr(entry.value)
    return f"{said} by {entry.provenance.actor}"


def outcome(held: Instance | None, given: Instance) -> tuple[str, str]:
    """What copying ``given`` into a store that holds ``held`` (None: nothing) does, and, for a
    diverged instance, what differs."""
    if held is None:
        return "copied", ""
    fields = list(dict.fromkeys([*held.entries, *given.entries]))
    if held.version > given.version:
        apart = [f for f in fields if not _prefix(given.entries.get(f), held.entries.get(f))]
    elif held.version < given.version:
        apart = [f for f in fields if not _prefix(held.entries.get(f), given.entries.get(f))]
    else:
        if held == given:
            return "same", ""
        apart = [f for f in fields if held.entries.get(f) != given.entries.get(f)]
        if not apart:
            return "diverged", (
                f"at version {given.version} on both sides, but not the same (status {given.status} in the "
                f"source, {held.status} in the target; updated {given.updated_at} and {held.updated_at})"
            )
    if not apart:
        return ("newer" if held.version > given.version else "updated"), ""
    what = "; ".join(
        f"{f}: source has {_last(given.entries.get(f))}, target has {_last(held.entries.get(f))}" for f in apart[:5]
    )
    more = f"; and {len(apart) - 5} more field(s)" if len(apart) > 5 else ""
    return "diverged", (
        f"written on both sides since they last agreed (source at version {given.version}, target at "
        f"{held.version}): {what}{more}"
    )


def conversation_outcome(held: dict[str, Any] | None, given: dict[str, Any]) -> tuple[str, str]:
    """What copying the conversation ``given`` over ``held`` (None: none) does, both as
    :func:`formctl.store._conversation.document` hands them over: exchange by exchange, by
    :func:`formctl.store._conversation.outcome`."""
    from formctl.store._conversation import from_document, outcome

    source = from_document(given, "the source")
    if held is None:
        return "copied", ""
    done, why = outcome(from_document(held, "the target"), source)
    if done == "same" and held.get("seen") != given.get("seen"):
        return ("updated", "") if str(given.get("saved_at")) > str(held.get("saved_at")) else ("newer", "")
    return done, why


def goal_outcome(held: list[dict[str, Any]], given: list[dict[str, Any]]) -> tuple[str, str]:
    """What copying a goal program's history ``given`` over ``held`` (each snapshot as JSON,
    oldest first; ``[]``: none) does: by the same rule as instances, whole snapshots."""
    if not held:
        return "copied", ""
    if held == given:
        return "same", ""
    if len(held) < len(given) and given[: len(held)] == held:
        return "updated", ""
    if len(given) < len(held) and held[: len(given)] == given:
        return "newer", ""
    n = next(n for n, (x, y) in enumerate(zip(given, held)) if x != y)
    a, b = given[n], held[n]
    return "diverged", (
        f"written on both sides after version {n} (source at version {len(given)}, target at {len(held)}): version "
        f"{n + 1} is {a['change']} by {a['actor']} at {a['updated_at']} in the source, {b['change']} by "
        f"{b['actor']} at {b['updated_at']} in the target"
    )


def receipts_to_take(held: list[Receipt], given: list[Receipt]) -> list[Receipt]:
    """The source's hook receipts the target takes: those it lacks, and those it holds as never
    tried (pending, no attempt) where the source went further. A receipt the target's own
    executor has tried is its record of what ran there, and stays."""
    mine = {r.key: r for r in held}
    out = []
    for receipt in given:
        there = mine.get(receipt.key)
        if there is None or (there != receipt and there.status == RECEIPT_PENDING and there.attempts == 0):
            out.append(receipt)
    return out


@dataclass
class Tally:
    """What happened to each record of one kind (instances, conversations, goal programs), by key."""

    copied: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    same: list[str] = field(default_factory=list)
    newer: list[str] = field(default_factory=list)  # written in the target since: left alone
    diverged: dict[str, str] = field(default_factory=dict)  # written on both sides: not copied, why
    refused: dict[str, str] = field(default_factory=dict)  # the target cannot hold it: not copied, why
    unreadable: list[str] = field(default_factory=list)  # damaged in the source: not copied
    mismatched: list[str] = field(default_factory=list)  # read back different: the copy is wrong

    def add(self, key: str, done: str, why: str) -> None:
        if done in ("diverged", "refused"):
            getattr(self, done)[key] = why
        else:
            getattr(self, done).append(key)

    @property
    def clean(self) -> bool:
        return not (self.diverged or self.refused or self.unreadable or self.mismatched)

    @property
    def total(self) -> int:
        return sum(len(getattr(self, name)) for name in OUTCOMES)

    def to_dict(self) -> dict[str, Any]:
        """The report's keys for one kind of record (``formctl store copy --json``)."""
        return {
            "copied": len(self.copied),
            "updated": len(self.updated),
            "unchanged": len(self.same),
            "newer_in_target": self.newer,
            "diverged": self.diverged,
            "refused": self.refused,
            "not_copied": self.unreadable,
            "mismatched": self.mismatched,
        }


@dataclass
class CopyReport:
    source: str
    target: str
    instances: Tally = field(default_factory=Tally)  # by instance id
    conversations: Tally = field(default_factory=Tally)  # by instance id
    goals: Tally = field(default_factory=Tally)  # by "subject/key" (and "@agent")
    source_ok: bool = True
    target_ok: bool = True
    problems: list[str] = field(default_factory=list)

    @property
    def verified(self) -> bool:
        return (
            self.instances.clean
            and not self.problems
            and self.conversations.clean
            and self.goals.clean
            and self.source_ok
            and self.target_ok
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "from": self.source,
            "to": self.target,
            **self.instances.to_dict(),  # the instances' counts at the top level, as the report always had
            "conversations": self.conversations.to_dict(),
            "goal_programs": self.goals.to_dict(),
            "source_check_ok": self.source_ok,
            "target_check_ok": self.target_ok,
            "problems": self.problems,
            "verified": self.verified,
        }


def copy_store(
    source: Any, target: Any, *, source_name: str, target_name: str, progress: Callable[[int, int], None] | None = None
) -> CopyReport:
    """Copy everything ``source`` (any adapter) holds into ``target`` (an :class:`Importing` one:
    the PostgreSQL store, the JSON store): instances, then the chats' conversations, then goal
    programs; then verify all of it, and check both stores."""
    if not isinstance(target, Importing):
        raise StoreError(f"{target_name}: copying into this kind of store is not supported.")
    report = CopyReport(source_name, target_name)
    with _interrupts_between_units() as checkpoint:
        instances = _copy_instances(source, target, report, checkpoint, progress)
        _copy_conversations(source, target, instances, report, target_name, checkpoint)
        _copy_goals(source, target, report, target_name, checkpoint)
    _verify(instances, target, report)
    sides: tuple[tuple[str, Any, str], ...] = ((source_name, source, "source_ok"), (target_name, target, "target_ok"))
    for name, adapter, flag in sides:
        checked = adapter.check()
        setattr(report, flag, checked.ok)
        report.problems.extend(f"{name}: {p.path}: {p.message}" for p in checked.problems)
        if not checked.ok and not checked.problems:  # never "not verified" with nothing said
            report.problems.extend(f"{name}: {note}" for note in checked.notes or ("formctl store check is not ok",))
    return report


def _copy_instances(
    source: Any,
    target: Importing,
    report: CopyReport,
    checkpoint: Callable[[], None],
    progress: Callable[[int, int], None] | None,
) -> list[Instance]:
    damaged: list[StoreError] = []
    instances: list[Instance] = source.find_instances(damaged=damaged)
    report.instances.unreadable = [_named(exc) for exc in damaged]
    instances.sort(key=lambda i: i.id)  # oldest first: ids grow with creation time
    for start in range(0, max(len(instances), 1), BATCH):  # one (empty) batch at least: the target is set up
        checkpoint()
        batch = instances[start : start + BATCH]
        for instance, (done, why) in zip(batch, target.import_instances(batch)):
            report.instances.add(instance.id, done, why)
        if progress is not None:
            progress(min(start + BATCH, len(instances)), len(instances))
    return instances


def _copy_conversations(
    source: Any,
    target: Any,
    instances: list[Instance],
    report: CopyReport,
    target_name: str,
    checkpoint: Callable[[], None],
) -> None:
    """Each conversation beside its instance, under the subject the source's instance has."""
    if not isinstance(source, CopiesConversations):
        return
    documents, report.conversations.unreadable = source.conversation_documents()
    if not documents:
        return
    if not isinstance(target, CopiesConversations):
        report.problems.append(f"{target_name}: this kind of store keeps no conversations; {len(documents)} not copied")
        return
    subjects = {i.id: i.subject for i in instances}
    items: list[tuple[str, str, dict[str, Any]]] = []
    for instance_id in sorted(documents):
        if instance_id in subjects:
            items.append((instance_id, subjects[instance_id], documents[instance_id]))
        else:
            report.conversations.refused[instance_id] = "its instance is not in the source (or cannot be read there)"
    for start in range(0, len(items), BATCH):
        checkpoint()
        batch = items[start : start + BATCH]
        for (instance_id, _, _), (done, why) in zip(batch, target.import_conversations(batch)):
            report.conversations.add(instance_id, done, why)
    held, _ = target.conversation_documents()
    tally = report.conversations
    for instance_id in [*tally.copied, *tally.updated, *tally.same]:
        if held.get(instance_id) != documents[instance_id]:
            tally.mismatched.append(instance_id)


def _scope_name(scope: GoalScope) -> str:
    return f"{scope.subject}/{scope.key}" + (f"@{scope.agent}" if scope.agent else "")


def _copy_goals(source: Any, target: Any, report: CopyReport, target_name: str, checkpoint: Callable[[], None]) -> None:
    """Each goal program with every version of its history, then its hooks' receipts."""
    if not isinstance(source, HasGoalStore):
        return
    given_store = source.goal_store()
    scopes = given_store.scopes()
    if not scopes:
        return
    if not isinstance(target, HasGoalStore) or not isinstance(target.goal_store(), ImportsGoals):
        report.problems.append(f"{target_name}: this kind of store keeps no goal programs; {len(scopes)} not copied")
        return
    held_store: Any = target.goal_store()  # a GoalStore that ImportsGoals
    tally = report.goals
    for scope in scopes:
        checkpoint()
        name = _scope_name(scope)
        try:
            given = given_store.history(scope)
            given_receipts = given_store.receipts(scope)
        except StoreError as exc:
            tally.unreadable.append(f"{name}: {exc.message}")
            continue
        try:
            held = held_store.history(scope)
            held_receipts = held_store.receipts(scope)
        except StoreError as exc:
            tally.refused[name] = f"damaged in the target: {exc.message}"
            continue
        given_json = [state_to_json(s) for s in given]
        done, why = goal_outcome([state_to_json(s) for s in held], given_json)
        tally.add(name, done, why)
        if done in ("diverged", "newer"):
            continue
        taken = receipts_to_take(held_receipts, given_receipts)
        if len(held) == len(given) and not taken:
            continue  # the same, receipts and all: nothing to write
        try:
            held_store.import_history(scope, given[len(held) :], taken, if_version=held[-1].version if held else None)
        except (StoreError, GoalConflictError) as exc:  # a conflict: written in the target meanwhile
            getattr(tally, done).remove(name)
            tally.add(name, "refused", f"the target could not take it: {exc.message}")
            continue
        if [state_to_json(s) for s in held_store.history(scope)] != given_json or any(
            r not in held_store.receipts(scope) for r in taken
        ):
            tally.mismatched.append(name)


@contextmanager
def _interrupts_between_units() -> Iterator[Callable[[], None]]:
    """Hold Ctrl-C until the unit of work in flight has landed: yields ``checkpoint()``, which
    raises :class:`KeyboardInterrupt` there if one came meanwhile. A second Ctrl-C stops at
    once. Only the main thread can take signals; elsewhere Ctrl-C is left as it is."""
    pending = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield lambda: None
        return

    def held(signum: int, frame: Any) -> None:
        if pending.is_set():
            raise KeyboardInterrupt
        pending.set()

    def checkpoint() -> None:
        if pending.is_set():
            raise KeyboardInterrupt

    before = signal.signal(signal.SIGINT, held)
    try:
        yield checkpoint
    finally:
        signal.signal(signal.SIGINT, before)
    checkpoint()  # one that came during the last unit: the copy stops before its verification


def _verify(instances: list[Instance], target: Any, report: CopyReport) -> None:
    """Read every copied instance back from the target, afresh, and compare it whole."""
    held = {i.id: i for i in target.find_instances()}  # imports bypass the adapter's cache: these are read
    tally = report.instances
    skip = set(tally.newer) | set(tally.diverged) | set(tally.refused)
    for instance in instances:
        if instance.id not in skip and held.get(instance.id) != instance:
            tally.mismatched.append(instance.id)


def _named(exc: StoreError) -> str:
    return exc.message
