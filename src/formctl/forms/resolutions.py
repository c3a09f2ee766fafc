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
    return key.endswith(MARK) or f"{MARK}:" in key


@dataclass(frozen=True, slots=True)
class Resolution:
    """One host decision on one occurrence of a checkpoint."""

    checkpoint: str
    occurrence: int | None  # None in stores written before occurrences were recorded
    outcome: str  # "approved" | "rejected"
    actor: str | None  # None in stores written before the actor was recorded
    at: str
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"checkpoint": self.checkpoint}
        if self.occurrence is not None:
            d["occurrence"] = self.occurrence
        d.update(outcome=self.outcome, actor=self.actor, at=self.at)
        if self.reason is not None:
            d["reason"] = self.reason
        return d

    def text(self) -> str:
        """``policy-cap approved by sam at 2026-…: within budget``."""
        who = f" by {self.actor}" if self.actor else ""
        why = f": {self.reason}" if self.reason else ""
        return f"{self.checkpoint} {self.outcome}{who} at {self.at}{why}"


def resolutions(instance: Instance) -> list[Resolution]:
    """Every resolution of the instance's checkpoints, oldest first."""
    out: list[tuple[str, int, Resolution]] = []
    prefix = f"{instance.id}:checkpoint:"
    for order, (key, record) in enumerate(instance.dispatches.items()):
        if not is_resolution(key) or record.status not in ("ok", "failed"):
            continue
        checkpoint = record.hook_id.partition(":")[2]
        occurrence: int | None = None
        middle = key[len(prefix):].split(MARK)[0] if key.startswith(prefix) else ""
        head, _, tail = middle.rpartition(":")
        if head == checkpoint and tail.isdigit():
            occurrence = int(tail)
        outcome = "rejected" if record.status == "failed" else "approved"
        reason = record.reason if record.reason is not None else (record.error if outcome == "rejected" else None)
        out.append((record.at, order, Resolution(checkpoint, occurrence, outcome, record.actor, record.at, reason)))
    out.sort(key=lambda item: (item[0], item[1]))
    return [r for _, _, r in out]
