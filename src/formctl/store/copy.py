"""Copying a store into another, both ways: every instance with its whole history, then proof.

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
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from formctl.errors import StoreError
from formctl.forms.adapter import Importing
from formctl.forms.instance import FieldLog, Instance

BATCH = 200
"""Instances per batch (one transaction on PostgreSQL): a failure loses at most one batch's
work, and a re-run resumes."""

OUTCOMES = ("copied", "updated", "same", "newer", "diverged", "refused")


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


@dataclass
class CopyReport:
    source: str
    target: str
    copied: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    same: list[str] = field(default_factory=list)
    newer: list[str] = field(default_factory=list)  # written in the target since: left alone
    diverged: dict[str, str] = field(default_factory=dict)  # written on both sides: not copied, why
    refused: dict[str, str] = field(default_factory=dict)  # the target cannot hold it: not copied, why
    unreadable: list[str] = field(default_factory=list)  # damaged in the source: not copied
    mismatched: list[str] = field(default_factory=list)  # read back different: the copy is wrong
    source_ok: bool = True
    target_ok: bool = True
    problems: list[str] = field(default_factory=list)

    @property
    def verified(self) -> bool:
        return (
            not (self.unreadable or self.mismatched or self.problems or self.diverged or self.refused)
            and self.source_ok
            and self.target_ok
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "from": self.source,
            "to": self.target,
            "copied": len(self.copied),
            "updated": len(self.updated),
            "unchanged": len(self.same),
            "newer_in_target": self.newer,
            "diverged": self.diverged,
            "refused": self.refused,
            "not_copied": self.unreadable,
            "mismatched": self.mismatched,
            "source_check_ok": self.source_ok,
            "target_check_ok": self.target_ok,
            "problems": self.problems,
            "verified": self.verified,
        }


def copy_store(
    source: Any, target: Any, *, source_name: str, target_name: str, progress: Callable[[int, int], None] | None = None
) -> CopyReport:
    """Copy every instance of ``source`` (any adapter) into ``target`` (one with
    ``import_instances``: the PostgreSQL store, the JSON store), then verify both."""
    if not isinstance(target, Importing):
        raise StoreError(f"{target_name}: copying into this kind of store is not supported.")
    report = CopyReport(source_name, target_name)
    damaged: list[StoreError] = []
    instances = source.find_instances(damaged=damaged)
    report.unreadable = [_named(exc) for exc in damaged]
    instances.sort(key=lambda i: i.id)  # oldest first: ids grow with creation time
    for start in range(0, max(len(instances), 1), BATCH):  # one (empty) batch at least: the target is set up
        batch = instances[start : start + BATCH]
        for instance, (done, why) in zip(batch, target.import_instances(batch)):
            if done in ("diverged", "refused"):
                getattr(report, done)[instance.id] = why
            else:
                getattr(report, done).append(instance.id)
        if progress is not None:
            progress(min(start + BATCH, len(instances)), len(instances))
    _verify(instances, target, report)
    sides: tuple[tuple[str, Any, str], ...] = ((source_name, source, "source_ok"), (target_name, target, "target_ok"))
    for name, adapter, flag in sides:
        checked = adapter.check()
        setattr(report, flag, checked.ok)
        report.problems.extend(f"{name}: {p.path}: {p.message}" for p in checked.problems)
    return report


def _verify(instances: list[Instance], target: Any, report: CopyReport) -> None:
    """Read every copied instance back from the target, afresh, and compare it whole."""
    held = {i.id: i for i in target.find_instances()}  # imports bypass the adapter's cache: these are read
    skip = set(report.newer) | set(report.diverged) | set(report.refused)
    for instance in instances:
        if instance.id not in skip and held.get(instance.id) != instance:
            report.mismatched.append(instance.id)


def _named(exc: StoreError) -> str:
    return exc.message
