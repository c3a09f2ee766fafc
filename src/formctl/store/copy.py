"""Copying a store into a PostgreSQL store: every instance with its whole history, then proof.

``formctl store copy --from .formctl --to postgresql://…`` moves a team onto the shared store.
Each instance arrives exactly as it was (id, version, timestamps, every revision of every
answer, dispatch records), in batches of one transaction each. Running it again copies only
what changed in the source since (an instance's later answers are appended to the copy, never
written over it), so a team can copy, keep working locally for a day, and copy again before
switching. Afterwards every instance is read back from both stores and compared whole, and
``check()`` runs on both: the copy is reported verified only if all of it agrees.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from formctl.errors import StoreError
from formctl.forms.instance import Instance

BATCH = 200
"""Instances per transaction: a failure loses at most one batch's work, and a re-run resumes."""


@dataclass
class CopyReport:
    source: str
    target: str
    copied: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    same: list[str] = field(default_factory=list)
    newer: list[str] = field(default_factory=list)  # written in the target since: left alone
    unreadable: list[str] = field(default_factory=list)  # damaged in the source: not copied
    mismatched: list[str] = field(default_factory=list)  # read back different: the copy is wrong
    source_ok: bool = True
    target_ok: bool = True
    problems: list[str] = field(default_factory=list)

    @property
    def verified(self) -> bool:
        return not (self.unreadable or self.mismatched or self.problems) and self.source_ok and self.target_ok

    def to_dict(self) -> dict[str, Any]:
        return {
            "from": self.source,
            "to": self.target,
            "copied": len(self.copied),
            "updated": len(self.updated),
            "unchanged": len(self.same),
            "newer_in_target": self.newer,
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
    ``import_instances``, the PostgreSQL store), then verify both."""
    if not hasattr(target, "import_instances"):
        raise StoreError(
            f"{target_name}: copying into this kind of store is not supported; copy into a postgresql:// store."
        )
    report = CopyReport(source_name, target_name)
    damaged: list[StoreError] = []
    instances = source.find_instances(damaged=damaged)
    report.unreadable = [_named(exc) for exc in damaged]
    instances.sort(key=lambda i: i.id)  # oldest first: ids grow with creation time
    for start in range(0, len(instances), BATCH):
        batch = instances[start : start + BATCH]
        for instance, outcome in zip(batch, target.import_instances(batch)):
            getattr(report, outcome).append(instance.id)
        if progress is not None:
            progress(min(start + BATCH, len(instances)), len(instances))
    _verify(instances, target, report)
    for name, adapter, flag in ((source_name, source, "source_ok"), (target_name, target, "target_ok")):
        checked = adapter.check()
        setattr(report, flag, checked.ok)
        report.problems.extend(f"{name}: {p.path}: {p.message}" for p in checked.problems)
    return report


def _verify(instances: list[Instance], target: Any, report: CopyReport) -> None:
    """Read every copied instance back from the target, afresh, and compare it whole."""
    held = {i.id: i for i in target.find_instances()}  # imports bypass the adapter's cache: these are read
    newer = set(report.newer)
    for instance in instances:
        if instance.id not in newer and held.get(instance.id) != instance:
            report.mismatched.append(instance.id)


def _named(exc: StoreError) -> str:
    return exc.message
