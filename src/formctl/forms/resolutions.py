"""A host's resolutions of checkpoints: who decided, when, approve or reject, and why.

``resolve_checkpoint`` stores each resolution as a dispatch record under its own key,
``ID:checkpoint:CP:N:resolved:K`` (N the checkpoint's occurrence it decided, K counting the
resolutions of that occurrence), so a later resolution never overwrites an earlier one.
Stores written before occurrences were part of the key hold ``ID:checkpoint:CP:resolved``;
both are read here. Pure: nothing here loads or writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from formctl.forms.instance import Instance
from formctl.json_types import present

MARK = ":resolved"


def resolution_key(instance: Instance, checkpoint_id: str) -> str:
    """The key for a new resolution of the checkpoint's current occurrence."""
    occurrence = instance.occurrences.get(f"checkpoint:{checkpoint_id}", 0)
    stem = f"{instance.id}:checkpoint:{checkpoint_id}:{occurrence}{MARK}"
    n = 1
    while f"{stem}:{n}" in instance.dispatches:
        n += 1
    return f"{stem}:{n}"


def is_resolution(key: str) -> bool:
    """Is this dispatch key a host's resolution (not an executor's run)?"""
    return MARK in key


def decided_occurrence(key: str, checkpoint_id: str) -> int | None:
    """The occurrence a resolution's key says it decided (None for keys that do not say)."""
    head, _, tail = key.split(MARK)[0].rpartition(":")
    if head.endswith(f":checkpoint:{checkpoint_id}") and tail.isdigit():
        return int(tail)
    return None


@dataclass(frozen=True, slots=True)
class Resolution:
    """One host decision on one occurrence of a checkpoint."""

    checkpoint: str
    occurrence: int | None  # None in stores written before occurrences were recorded
    outcome: str  # "approved" | "rejected" | "withdrawn" (the request taken back: runner.withdraw)
    actor: str | None  # None in stores written before the actor was recorded
    at: str
    reason: str | None = None
    covers: dict[str, Any] | None = None  # the values the decision is bound to, when recorded
    override: str | None = None  # the rule the host set aside to decide (their own request)

    def to_dict(self) -> dict[str, Any]:
        covers = None if self.covers is None else dict(self.covers)
        return {
            "checkpoint": self.checkpoint,
            **present(occurrence=self.occurrence),
            "outcome": self.outcome,
            "actor": self.actor,
            "at": self.at,
            **present(reason=self.reason, covers=covers, override=self.override),
        }

    def text(self) -> str:
        """``policy-cap approved by sam at 2026-…: within budget``."""
        who = f" by {self.actor}" if self.actor else ""
        if self.override:
            who += f" ({self.override})"
        why = f": {self.reason}" if self.reason else ""
        return f"{self.checkpoint} {self.outcome}{who} at {self.at}{why}"


def resolutions(instance: Instance) -> list[Resolution]:
    """Every resolution of the instance's checkpoints, oldest first."""
    out: list[tuple[str, int, Resolution]] = []
    for order, (key, record) in enumerate(instance.dispatches.items()):
        if not is_resolution(key) or not record.ended:
            continue
        checkpoint = record.hook_id.partition(":")[2]
        outcome = "rejected" if record.failed else "approved"
        if record.override == "withdrawn":  # the request taken back (runner.withdraw), not decided
            outcome = "withdrawn"
        reason = record.reason if record.reason is not None else (record.error if outcome == "rejected" else None)
        out.append(
            (
                record.at,
                order,
                Resolution(
                    checkpoint,
                    decided_occurrence(key, checkpoint),
                    outcome,
                    record.actor,
                    record.at,
                    reason,
                    record.covers,
                    None if outcome == "withdrawn" else record.override,
                ),
            )
        )
    out.sort(key=lambda item: (item[0], item[1]))
    return [r for _, _, r in out]
